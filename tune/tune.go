// Package tune measures a μGraph document's best candidates on a GPU and
// writes what it measured as a profile (package cost's format), which
// superopt --profile ranks by: the model picks the few candidates worth
// timing, the GPU picks among them.
//
// It emits each candidate's CUDA, writes one host program that runs them
// all on the same inputs (rotated among copies when they are smaller than
// twice L2, so that a run reads them from device memory), times each with
// a pair of CUDA events around every run after a warm-up, the GPU kept
// ahead of the host by a spin kernel before each, and checks each
// candidate's outputs against the best-ranked one's that ran. A candidate
// whose CUDA calls fail is reported and the next one runs. It needs nvcc
// and a GPU of the arch's compute capability, no Python; on a machine
// without a GPU it says so (ErrNoGPU), and without nvcc ErrNoNVCC. Options.Emulate builds the
// same program for the CPU emulator instead (templates/emu), so that its
// plumbing is tested where no GPU is: the times it reports are the CPU's.
package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/internal/subprocess"
	"github.com/mirage-go/mirage/internal/tempdir"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Options configure Run.
type Options struct {
	Arch target.Arch
	// Program is the name the profile keys the measurements by: superopt's
	// for the program (its file name without .py).
	Program string
	// Candidates is how many of the document's graphs to measure, best
	// first; 0 means all.
	Candidates int
	Warmup     int // untimed runs of each candidate first, at least 1; 0 means 20
	Runs       int // timed runs of each; 0 means 200
	// Tolerance is the largest relative error (max |a-b| over max |b|,
	// per output) of a candidate's outputs against the first one's; 0
	// means 1e-2, as bench/gpu checks fp16 results.
	Tolerance float64
	// Dir is where the sources and the program are built; it must exist.
	// "": a temporary directory, removed when Run returns (and by a
	// second interrupt's exit: internal/tempdir).
	Dir  string
	NVCC string // the CUDA compiler; "" finds nvcc (FindNVCC)
	// Timeout bounds the timing program's run (not its build): a kernel
	// that hangs must not hold the GPU for good. 0 means 10 minutes.
	Timeout time.Duration
	// Emulate builds for the CPU emulator (g++, no GPU): for tests.
	Emulate bool
}

// ErrNoGPU reports a machine where the program finds no CUDA device.
var ErrNoGPU = errors.New("no CUDA GPU")

// ErrNoNVCC reports a machine without the CUDA toolkit's compiler.
var ErrNoNVCC = errors.New("no nvcc")

// ErrNothingMeasured is Run's error when every candidate failed or could
// not be checked: a profile of nothing would replace one of something.
// Run returns the Result with it, whose Measurements say why.
var ErrNothingMeasured = errors.New("no candidate was measured")

// Measurement is one candidate's outcome.
type Measurement struct {
	Candidate int    // the graph's index in the document
	Hash      string // cost.GraphHash
	// Err says why the candidate was not measured (it does not lower to
	// CUDA for the arch) or why its time does not count (its outputs
	// differ from the reference's); "" when it does.
	Err                string
	MedianUs, P10, P90 float64
	Runs               int
	MaxRelErr          float64 // against the reference's outputs
	Reference          bool    // the candidate the others are checked against
	EstimatedUs        float64 // the cost model's estimate
}

// Result is what Run measured.
type Result struct {
	GPU          string // the device, as CUDA names it
	Measurements []Measurement
	// Profile holds the candidates measured and right, for superopt
	// --profile.
	Profile *cost.Profile
}

// Run measures doc's candidates as Options say, each distinct graph once.
// The program it builds stays in opts.Dir, when given. Where no candidate
// is measured, it returns the Result and ErrNothingMeasured.
func Run(ctx context.Context, doc *kernel.File, opts Options) (*Result, error) {
	if opts.Dir == "" {
		dir, remove, err := tempdir.Make("mirage-tune-")
		if err != nil {
			return nil, err
		}
		defer remove()
		opts.Dir = dir
	}
	if opts.Warmup <= 0 {
		opts.Warmup = 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	// nvcc and the program run in Dir: the paths given them must not be
	// relative to here.
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.Runs <= 0 {
		opts.Runs = 200
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = 1e-2
	}
	if opts.Arch.Name == "" {
		opts.Arch = target.MustLookup(target.Default)
	}
	if opts.Program == "" {
		opts.Program = doc.Name
	}
	n := len(doc.Graphs)
	if opts.Candidates > 0 {
		n = min(n, opts.Candidates)
	}
	if n == 0 {
		return nil, errors.New("the document holds no graph")
	}
	first := doc.Graphs[0].Graph
	var ms []Measurement
	var progs []candidateCode
	var links []string // the toolkit libraries any candidate calls
	for i, e := range doc.Graphs[:n] {
		m := Measurement{Candidate: i, Hash: cost.GraphHash(e.Graph)}
		if err := sameSignature(first, e.Graph); err != nil {
			return nil, fmt.Errorf("graph %d: %v", i, err)
		}
		// A profile measures a graph once: a copy is not timed again.
		if k := slices.IndexFunc(ms, func(o Measurement) bool { return o.Hash == m.Hash }); k >= 0 {
			m.Err = fmt.Sprintf("the same graph as candidate %d", ms[k].Candidate)
			ms = append(ms, m)
			continue
		}
		if est, err := cost.EstimateGraph(e.Graph, opts.Arch); err == nil {
			m.EstimatedUs = est.Micros
		}
		name := fmt.Sprintf("tune_c%d", i)
		res, err := cuda.Emit(name, e.Graph, cuda.Options{Arch: opts.Arch, Source: fmt.Sprintf("%s, graph %d", doc.Name, i)})
		if err != nil {
			m.Err = "no CUDA: " + err.Error()
			ms = append(ms, m)
			continue
		}
		for _, f := range res.Files {
			if err := os.WriteFile(filepath.Join(opts.Dir, f.Name), f.Data, 0o644); err != nil {
				return nil, err
			}
		}
		links = cuda.MergeLinks(links, res.Links...)
		progs = append(progs, candidateCode{index: len(ms), name: res.Name, graph: e.Graph})
		ms = append(ms, m)
	}
	if len(progs) == 0 {
		return nil, errors.New("no candidate lowers to CUDA for " + opts.Arch.Name)
	}
	src := hostProgram(first, progs, opts)
	if err := os.WriteFile(filepath.Join(opts.Dir, "tune.cu"), []byte(src), 0o644); err != nil {
		return nil, err
	}
	bin, err := build(ctx, opts, progs, links)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := subprocess.Command(runCtx, bin)
	cmd.Dir = opts.Dir
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	said := strings.TrimSpace(stderr.String())
	var exit *exec.ExitError
	stopped := ""
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case runCtx.Err() != nil:
		stopped = fmt.Sprintf("it ran past %v (a kernel that hangs?)", opts.Timeout)
	case errors.As(err, &exit) && exit.ExitCode() == exitNoGPU:
		return nil, fmt.Errorf("%w: %s", ErrNoGPU, said)
	case errors.As(err, &exit) && exit.ExitCode() == exitWrongGPU:
		return nil, fmt.Errorf("%s (%s): give the GPU's arch (--arch)", said, opts.Arch.Name)
	case errors.As(err, &exit):
		stopped = lastLine(said)
		if stopped == "" {
			stopped = err.Error()
		}
	default:
		return nil, fmt.Errorf("the timing program: %v", err)
	}
	r := &Result{Measurements: ms}
	if err := parseReport(string(out), progs, r, opts, stopped); err != nil {
		return nil, err
	}
	if stopped != "" && !slices.ContainsFunc(r.Measurements, func(m Measurement) bool { return m.MedianUs > 0 }) {
		return nil, fmt.Errorf("the timing program stopped before it timed a candidate: %s", stopped)
	}
	r.Profile = &cost.Profile{Version: cost.ProfileVersion, Arch: opts.Arch.Name, GPU: r.GPU}
	var failed []string
	for _, m := range r.Measurements {
		if m.Err == "" {
			r.Profile.Measurements = append(r.Profile.Measurements, cost.Measurement{Program: opts.Program, Hash: m.Hash,
				MedianMicros: m.MedianUs, Runs: m.Runs, P10Micros: m.P10, P90Micros: m.P90, EstimatedMicros: m.EstimatedUs})
		} else {
			failed = append(failed, fmt.Sprintf("candidate %d: %s", m.Candidate, m.Err))
		}
	}
	if len(r.Profile.Measurements) == 0 {
		return r, fmt.Errorf("%w (%s)", ErrNothingMeasured, strings.Join(failed, "; "))
	}
	return r, nil
}

// candidateCode is a candidate emitted as NAME.cu, NAME.h.
type candidateCode struct {
	index int // in the measurements
	name  string
	graph *kernel.Graph
}

// sameSignature checks that g takes and gives what ref does: the
// candidates of one document run on the same buffers.
func sameSignature(ref, g *kernel.Graph) error {
	ri, gi := ref.Inputs(), g.Inputs()
	if len(ri) != len(gi) || len(ref.Outputs) != len(g.Outputs) {
		return fmt.Errorf("%d inputs and %d outputs, the first graph %d and %d", len(gi), len(g.Outputs), len(ri), len(ref.Outputs))
	}
	for k := range ri {
		if ref.Tensors[ri[k]] != g.Tensors[gi[k]] {
			return fmt.Errorf("input %d is %v %v, the first graph's %v %v", k, g.Tensors[gi[k]].DType, g.Tensors[gi[k]].Shape,
				ref.Tensors[ri[k]].DType, ref.Tensors[ri[k]].Shape)
		}
	}
	for j := range ref.Outputs {
		if ref.Tensors[ref.Outputs[j]] != g.Tensors[g.Outputs[j]] {
			return fmt.Errorf("output %d differs from the first graph's", j)
		}
	}
	return nil
}

// build compiles tune.cu and the candidates' .cu files, each a
// translation unit, in opts.Dir with nvcc, linking the toolkit's libraries
// in links, or for the emulator with g++ (whose headers stand in for those
// libraries), and returns the program's path.
func build(ctx context.Context, opts Options, progs []candidateCode, links []string) (string, error) {
	bin := filepath.Join(opts.Dir, "tune")
	units := []string{"tune.cu"}
	for _, p := range progs {
		units = append(units, p.name+".cu")
	}
	var cmd *exec.Cmd
	if opts.Emulate {
		gxx, err := templates.EmulatorCompiler()
		if err != nil {
			return "", err
		}
		emu := filepath.Join(opts.Dir, "emu")
		if err := os.MkdirAll(emu, 0o755); err != nil {
			return "", err
		}
		if err := templates.WriteEmulator(emu); err != nil {
			return "", err
		}
		args := append(templates.EmulatorArgs(ctx, gxx), "-I"+emu, "-I"+opts.Dir, "-o", bin, "-x", "c++")
		cmd = subprocess.Command(ctx, gxx, append(args, units...)...)
	} else {
		nvcc := opts.NVCC
		if nvcc == "" {
			var err error
			if nvcc, err = FindNVCC(); err != nil {
				return "", err
			}
		}
		args := append([]string{"-O3", "-std=c++17", "-arch=" + opts.Arch.CUDA, "-o", bin}, units...)
		for _, l := range links {
			args = append(args, "-l"+l)
		}
		// The toolkit's libraries (cuBLASLt) from where nvcc is, at run
		// time too: a toolkit outside the loader's paths is common.
		if lib := filepath.Join(filepath.Dir(filepath.Dir(nvcc)), "lib64"); len(links) > 0 && isDir(lib) {
			args = append(args, "-Xlinker", "-rpath,"+lib)
		}
		cmd = subprocess.Command(ctx, nvcc, args...)
	}
	cmd.Dir = opts.Dir
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the timing program: %v\n%s", err, out)
	}
	return bin, nil
}

// FindNVCC returns the CUDA compiler: nvcc on PATH, else in
// $CUDA_HOME/bin, else /usr/local/cuda/bin (where the toolkit installs
// without adding itself to PATH).
func FindNVCC() (string, error) {
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	var tried []string
	for _, home := range []string{os.Getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if home == "" {
			continue
		}
		p := filepath.Join(home, "bin", "nvcc")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%w: not on PATH, nor at %s (the CUDA toolkit builds the candidates)", ErrNoNVCC, strings.Join(tried, " or "))
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}
