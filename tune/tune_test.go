package tune

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func load(t *testing.T, body string) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load("p.py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\n"+body), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

const (
	// An RMSNorm and a matmul, as written: two library kernels.
	unfused = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
W = g.new_input(dims=(128, 64), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(128,)), W))
`
	// The same, fused: one graph-defined kernel.
	fused = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
W = g.new_input(dims=(128, 64), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=2, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tX, "rms")), output_map=(1, -1, -1))
g.mark_output(g.customized([X, W], tb)[0])
`
	// Not the same function: no norm.
	wrong = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
W = g.new_input(dims=(128, 64), dtype=mi.float16)
g.mark_output(g.matmul(X, W))
`
)

func needGXX(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++ for the emulator")
	}
}

// TestTuneInTheEmulator runs the whole of tune in the CPU emulator: every
// candidate built into one program, timed, checked against the first; a
// candidate that computes something else is reported and left out of the
// profile, whose measurements key the others by program and hash.
func TestTuneInTheEmulator(t *testing.T) {
	needGXX(t)
	doc := kernel.NewFile("norm_proj", load(t, fused), load(t, unfused), load(t, wrong))
	res, err := Run(context.Background(), doc, Options{Arch: target.MustLookup("sm_90"), Warmup: 1, Runs: 3, Dir: t.TempDir(), Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.GPU != "mirage CPU emulator" || len(res.Measurements) != 3 {
		t.Fatalf("gpu %q, %d measurements", res.GPU, len(res.Measurements))
	}
	for i, m := range res.Measurements {
		if m.Candidate != i || m.Hash != cost.GraphHash(doc.Graphs[i].Graph) || m.Runs != 3 || !(m.MedianUs > 0) ||
			!(m.P10 <= m.MedianUs && m.MedianUs <= m.P90) || !(m.EstimatedUs > 0) {
			t.Errorf("measurement %d: %+v", i, m)
		}
	}
	if m := res.Measurements[0]; !m.Reference || m.Err != "" || m.MaxRelErr != 0 {
		t.Errorf("the reference: %+v", m)
	}
	if m := res.Measurements[1]; m.Err != "" || m.MaxRelErr > 1e-2 {
		t.Errorf("the unfused program, equivalent: %+v", m)
	}
	if m := res.Measurements[2]; !strings.Contains(m.Err, "outputs differ from candidate 0's") || !(m.MaxRelErr > 1e-2) {
		t.Errorf("the wrong graph: %+v", m)
	}
	p := res.Profile
	if p.Arch != "sm_90" || p.GPU != res.GPU || len(p.Measurements) != 2 {
		t.Fatalf("profile %+v: want the two right candidates", p)
	}
	for i, m := range p.Measurements {
		if m.Program != "norm_proj" || m.Hash != res.Measurements[i].Hash || m.MedianMicros != res.Measurements[i].MedianUs {
			t.Errorf("profile measurement %d: %+v", i, m)
		}
	}
	// What it writes, superopt reads.
	path := filepath.Join(t.TempDir(), "profile.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ps, err := cost.LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if us, ok := ps.Lookup("sm_90", "norm_proj", doc.Graphs[1].Graph); !ok || us != res.Measurements[1].MedianUs {
		t.Errorf("the profile gives %v, %v for the unfused graph", us, ok)
	}
}

// Candidates that keep element-wise ops unfused emit the same internal
// names (their functors, op1_fn, ...), here for other ops: each is built
// as a translation unit of its own, so the timing program links.
func TestTuneCandidatesWithTheSameElementwiseOps(t *testing.T) {
	needGXX(t)
	const (
		scaled = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
g.mark_output(g.mul_scalar(g.exp(X), 0.5))
`
		// The same function, op1_fn a mul_scalar and op2_fn the exp.
		scaledTwice = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
g.mark_output(g.mul_scalar(g.exp(g.mul_scalar(X, 1.0)), 0.5))
`
	)
	doc := kernel.NewFile("scaled", load(t, scaled), load(t, scaledTwice))
	res, err := Run(context.Background(), doc, Options{Arch: target.MustLookup("sm_90"), Warmup: 1, Runs: 1, Dir: t.TempDir(), Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range res.Measurements {
		if m.Err != "" || m.MaxRelErr != 0 || m.Runs != 1 {
			t.Errorf("candidate %d: %+v", i, m)
		}
	}
}

// TestTuneCandidatesAndSignatures: Candidates takes the first graphs; a
// graph that takes other inputs than the first is an error; a candidate
// that does not lower is reported, not built.
func TestTuneCandidatesAndSignatures(t *testing.T) {
	needGXX(t)
	doc := kernel.NewFile("p", load(t, fused), load(t, unfused), load(t, wrong))
	res, err := Run(context.Background(), doc, Options{Candidates: 1, Warmup: 1, Runs: 1, Dir: t.TempDir(), Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Measurements) != 1 || len(res.Profile.Measurements) != 1 {
		t.Errorf("%d measurements, want 1", len(res.Measurements))
	}
	other := load(t, `X = g.new_input(dims=(8, 64), dtype=mi.float16)
g.mark_output(g.exp(X))
`)
	_, err = Run(context.Background(), kernel.NewFile("p", load(t, fused), other), Options{Dir: t.TempDir(), Emulate: true})
	if err == nil || !strings.Contains(err.Error(), "graph 1: 1 inputs and 1 outputs, the first graph 2 and 1") {
		t.Errorf("err = %v", err)
	}
	// 180 KB of shared memory even with one stage: it fits sm_90, not sm_80.
	big := load(t, `X = g.new_input(dims=(16, 4096), dtype=mi.float16)
W = g.new_input(dims=(4096, 6144), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(96, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
tb.new_output(stensor=tb.forloop_accum(tb.matmul(tX, tW)), output_map=(1, -1, -1))
g.mark_output(g.customized([X, W], tb)[0])
`)
	_, err = Run(context.Background(), kernel.NewFile("p", big), Options{Arch: target.MustLookup("sm_80"), Dir: t.TempDir(), Emulate: true})
	if err == nil || !strings.Contains(err.Error(), "no candidate lowers to CUDA for sm_80") {
		t.Errorf("err = %v", err)
	}
}

// TestNoGPU: a timing program that finds no device is ErrNoGPU, with what
// it said; a machine without nvcc is ErrNoNVCC.
func TestNoGPU(t *testing.T) {
	dir := t.TempDir()
	// A stand-in for nvcc that builds a program finding no device.
	fake := filepath.Join(dir, "nvcc")
	script := "#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\nprintf '#!/bin/sh\\necho no CUDA device >&2\\nexit 3\\n' > \"$2\"\nchmod +x \"$2\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := kernel.NewFile("p", load(t, unfused))
	_, err := Run(context.Background(), doc, Options{Dir: dir, NVCC: fake})
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "no CUDA device") {
		t.Errorf("err = %v, want ErrNoGPU saying why", err)
	}
	if _, err := os.Stat("/usr/local/cuda/bin/nvcc"); err == nil {
		return // FindNVCC finds it there
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CUDA_HOME", t.TempDir())
	_, err = Run(context.Background(), doc, Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrNoNVCC) || !strings.Contains(err.Error(), "not on PATH, nor at ") {
		t.Errorf("without nvcc: err = %v", err)
	}
}

// fakeNVCC is a stand-in for nvcc in dir that builds, as the timing
// program, a shell script of body.
func fakeNVCC(t *testing.T, dir, body string) string {
	t.Helper()
	fake := filepath.Join(dir, "nvcc")
	script := "#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\ncat > \"$2\" <<'EOF'\n#!/bin/sh\n" + body + "\nEOF\nchmod +x \"$2\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake
}

// TestTimingProgramStops: a timing program that stops early keeps what it
// timed, the rest reported as not run; one that stops before timing
// anything, or hangs past the timeout, is an error saying so; one on a
// GPU of another arch is refused.
func TestTimingProgramStops(t *testing.T) {
	doc := kernel.NewFile("p", load(t, fused), load(t, unfused))
	dir := t.TempDir()
	nvcc := fakeNVCC(t, dir, "echo gpu NVIDIA H100\necho time 0 5 4 6 10\necho err 0 0\necho 'candidate 1 left the device unusable: an illegal memory access' >&2\nexit 1")
	res, err := Run(context.Background(), doc, Options{Dir: dir, NVCC: nvcc})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Measurements[0]; m.Err != "" || m.MedianUs != 5 || !m.Reference {
		t.Errorf("the candidate timed: %+v", m)
	}
	if m := res.Measurements[1]; m.Err != "not run: the timing program stopped before it: candidate 1 left the device unusable: an illegal memory access" {
		t.Errorf("the candidate not run: %+v", m)
	}
	if len(res.Profile.Measurements) != 1 {
		t.Errorf("profile %+v", res.Profile)
	}

	dir = t.TempDir()
	nvcc = fakeNVCC(t, dir, "echo gpu NVIDIA H100\necho 'tune_spin: an illegal instruction' >&2\nexit 1")
	_, err = Run(context.Background(), doc, Options{Dir: dir, NVCC: nvcc})
	if err == nil || err.Error() != "the timing program stopped before it timed a candidate: tune_spin: an illegal instruction" {
		t.Errorf("stopped at once: err = %v", err)
	}

	dir = t.TempDir()
	nvcc = fakeNVCC(t, dir, "exec sleep 30")
	_, err = Run(context.Background(), doc, Options{Dir: dir, NVCC: nvcc, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "it ran past 200ms (a kernel that hangs?)") {
		t.Errorf("hung: err = %v", err)
	}

	dir = t.TempDir()
	nvcc = fakeNVCC(t, dir, "echo gpu NVIDIA A100\necho 'the GPU, NVIDIA A100, is sm_80; the candidates were built for sm_90' >&2\nexit 4")
	_, err = Run(context.Background(), doc, Options{Dir: dir, NVCC: nvcc, Arch: target.MustLookup("h200")})
	if err == nil || err.Error() != "the GPU, NVIDIA A100, is sm_80; the candidates were built for sm_90 (h200): give the GPU's arch (--arch)" {
		t.Errorf("another arch: err = %v", err)
	}
	// The program checks the device against the arch's compute capability.
	if src, err := os.ReadFile(filepath.Join(dir, "tune.cu")); err != nil || !strings.Contains(string(src), "const int want_cc = 90;") {
		t.Errorf("tune.cu does not check for sm_90: %v", err)
	}
}

// TestParseReport reads the timing program's lines, skips others, and
// refuses a broken report.
func TestParseReport(t *testing.T) {
	progs := []candidateCode{{index: 0}, {index: 2}}
	fresh := func() *Result {
		return &Result{Measurements: []Measurement{{Candidate: 0}, {Candidate: 1}, {Candidate: 2}}}
	}
	tol := Options{Tolerance: 1e-2}
	r := fresh()
	out := "gpu NVIDIA H100 80GB HBM3\ntime 0 10.5 10.0 11.0 200\nerr 0 0\n[cuBLASLt][1] a log line\ntime 1 8.25 8.0 9.0 200\nerr 1 0.5\n"
	if err := parseReport(out, progs, r, tol, ""); err != nil {
		t.Fatal(err)
	}
	if r.GPU != "NVIDIA H100 80GB HBM3" || r.Measurements[0].MedianUs != 10.5 || r.Measurements[2].P90 != 9 || r.Measurements[2].Runs != 200 {
		t.Errorf("%+v", r)
	}
	if !strings.Contains(r.Measurements[2].Err, "max relative error 0.5") || r.Measurements[0].Err != "" {
		t.Errorf("errors: %q, %q", r.Measurements[0].Err, r.Measurements[2].Err)
	}
	if !r.Measurements[0].Reference || r.Measurements[2].Reference {
		t.Errorf("the reference: %+v", r.Measurements)
	}
	for _, bad := range []string{
		"time 0 1 1 1 1\n",               // candidate 1 never timed
		"gpu x\ntime 2 1 1 1 1\n",        // no candidate 2
		"time 0 1 1 1\ntime 1 1 1 1 1\n", // a field short
		"time 0 x 1 1 1\n",
		"fail 1\n",
		"unchecked 0 x\n",
		"hello\n",
	} {
		if err := parseReport(bad, progs, fresh(), tol, ""); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	r = fresh()
	if err := parseReport("time 0 1 1 1 1\nerr 0 0\ntime 1 2 2 2 1\nerr 1 nan\n", progs, r, tol, ""); err != nil || r.Measurements[2].Err == "" {
		t.Errorf("a NaN error passes: %v, %+v", err, r.Measurements[2])
	}

	// The first candidate fails: the second, the first timed, is the
	// reference.
	r = fresh()
	if err := parseReport("fail 0 cudaLaunch: not supported\ntime 1 2 2 2 1\nerr 1 0\n", progs, r, tol, ""); err != nil {
		t.Fatal(err)
	}
	if m := r.Measurements[0]; m.Err != "failed on the GPU: cudaLaunch: not supported" || m.Reference {
		t.Errorf("the failed candidate: %+v", m)
	}
	if m := r.Measurements[2]; m.Err != "" || !m.Reference {
		t.Errorf("the candidate after it: %+v", m)
	}
	// The program stopped after the first: the second was not run.
	r = fresh()
	if err := parseReport("time 0 1 1 1 1\nerr 0 0\n", progs, r, tol, "candidate 1 left the device unusable"); err != nil {
		t.Fatal(err)
	}
	if m := r.Measurements[2]; m.Err != "not run: the timing program stopped before it: candidate 1 left the device unusable" {
		t.Errorf("the candidate not reached: %+v", m)
	}
	// A reference with an output of no finite element checks nothing.
	r = fresh()
	if err := parseReport("time 0 1 1 1 1\nunchecked 0 0\nerr 0 0\ntime 1 2 2 2 1\nerr 1 0\n", progs, r, tol, ""); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if m := r.Measurements[i]; !strings.Contains(m.Err, "not checked: candidate 0's output 0 has no finite element") {
			t.Errorf("candidate %d: %+v", i, m)
		}
	}
}

// TestTuneFailuresInTheEmulator: a candidate whose CUDA calls fail is
// reported and the next runs, checked against the first that ran; a
// reference that computes nothing finite checks nothing; a candidate
// finite where the reference is not differs from it.
func TestTuneFailuresInTheEmulator(t *testing.T) {
	needGXX(t)
	doc := kernel.NewFile("norm_proj", load(t, fused), load(t, unfused), load(t, wrong))
	t.Setenv("MIRAGE_TUNE_FAIL", "0")
	res, err := Run(context.Background(), doc, Options{Warmup: 1, Runs: 2, Dir: t.TempDir(), Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Measurements[0]; m.Err != "failed on the GPU: cudaErrorNotSupported: emulated CUDA error" || m.Reference || m.Runs != 0 {
		t.Errorf("the failed candidate: %+v", m)
	}
	if m := res.Measurements[1]; m.Err != "" || !m.Reference || !(m.MedianUs > 0) {
		t.Errorf("the reference after it: %+v", m)
	}
	if m := res.Measurements[2]; !strings.Contains(m.Err, "outputs differ from candidate 1's") {
		t.Errorf("the wrong graph: %+v", m)
	}
	if len(res.Profile.Measurements) != 1 || res.Profile.Measurements[0].Hash != res.Measurements[1].Hash {
		t.Errorf("profile %+v: want candidate 1 alone", res.Profile)
	}

	t.Setenv("MIRAGE_TUNE_FAIL", "")
	const (
		minusInf = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
g.mark_output(g.log(g.mul_scalar(X, 0.0)))
`
		finite = `X = g.new_input(dims=(8, 128), dtype=mi.float16)
g.mark_output(g.exp(X))
`
	)
	res, err = Run(context.Background(), kernel.NewFile("p", load(t, minusInf), load(t, minusInf), load(t, finite)),
		Options{Warmup: 1, Runs: 1, Dir: t.TempDir(), Emulate: true})
	if !errors.Is(err, ErrNothingMeasured) {
		t.Fatalf("%v, want ErrNothingMeasured", err)
	}
	if m := res.Measurements[0]; !strings.Contains(m.Err, "not checked: candidate 0's output 0 has no finite element") {
		t.Errorf("candidate 0: %+v", m)
	}
	if m := res.Measurements[1]; m.Err != "the same graph as candidate 0" {
		t.Errorf("candidate 1, candidate 0 again: %+v", m)
	}
	if m := res.Measurements[2]; !strings.Contains(m.Err, "outputs differ from candidate 0's: max relative error +Inf") {
		t.Errorf("the finite candidate: %+v", m)
	}
	if len(res.Profile.Measurements) != 0 {
		t.Errorf("profile %+v: want nothing", res.Profile)
	}
	// --json's report of a max relative error of +Inf is JSON.
	b, err := json.Marshal(res.Report("sm_90", "p", "profile_sm_90.json"))
	if err != nil || !strings.Contains(string(b), `"max_rel_err":"+Inf"`) {
		t.Errorf("the report: %s, %v", b, err)
	}
}

// A graph the document holds twice is timed once: a profile measures a
// graph once (LoadProfiles refuses two measurements of one).
func TestTuneTimesAGraphOnce(t *testing.T) {
	needGXX(t)
	doc := kernel.NewFile("dup", load(t, unfused), load(t, unfused))
	res, err := Run(context.Background(), doc, Options{Warmup: 1, Runs: 1, Dir: t.TempDir(), Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Measurements[1]; m.Err != "the same graph as candidate 0" {
		t.Errorf("the copy: %+v", m)
	}
	path := filepath.Join(t.TempDir(), "profile_sm_90.json")
	if err := res.WriteProfile(path); err != nil {
		t.Fatal(err)
	}
	if ps, err := cost.LoadProfiles(path); err != nil || ps.Len() != 1 {
		t.Errorf("the profile tune wrote: %v, %v", ps, err)
	}
}

// TestTuneInputsRotate: inputs smaller than twice L2 (the emulator's 50
// MB) are copied enough times that the copies a run does not read hold
// twice L2; larger ones are not copied.
func TestTuneInputsRotate(t *testing.T) {
	g := load(t, fused)
	src := hostProgram(g, []candidateCode{{name: "c0", graph: g}}, Options{Warmup: 1, Runs: 1, Emulate: true})
	for _, want := range []string{
		"if (stride > 0 && stride < 2 * l2_bytes) copies = (2 * l2_bytes + stride - 1) / stride + 1;",
		"inputs[r % copies]",
		"const int want_cc = 0;",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("tune.cu lacks %q", want)
		}
	}
}
