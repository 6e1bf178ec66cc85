package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// chain is a program of n ops: matmul, exp, mul and relu repeated, as a
// deep model is; cutting it into parts is what once took the whole
// budget of a run.
func chain(t testing.TB, n int) *kernel.Graph {
	t.Helper()
	return loadSource(t, "chain", fmt.Sprintf(`
X = g.new_input(dims=(16, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
for i in range(%d):
    X = g.relu(g.mul(g.exp(g.matmul(X, W)), X))
g.mark_output(X)`, n/4))
}

// A 10,000-op program under a short budget is cut into parts in time for
// them to be searched (once, no part was: cutting it took 40 s; now about
// 1 s, and a 5 s budget left no search beside another package's tests on
// 2 cores), and the run answers with every part accounted for.
func TestRunLargeProgramWithinItsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	g := chain(t, 10_000)
	res, err := Run(context.Background(), g, Options{TimeLimit: 10 * time.Second, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.States == 0 {
		t.Errorf("no part was searched: %+v", res.Stats)
	}
	ops := 0
	for _, p := range res.Parts {
		ops += len(p.Ops)
	}
	if ops != len(computeOps(g)) {
		t.Errorf("the parts hold %d ops, the program %d", ops, len(computeOps(g)))
	}
	if !slices.ContainsFunc(res.Candidates, func(c *Candidate) bool { return c.Unfused }) {
		t.Error("the unfused program is not among the answers")
	}
}

// Cutting a program stops placing ops when its stop says so: the ops
// left are parts of one op each, which the run then does not search.
func TestSplitStops(t *testing.T) {
	g := chain(t, 400)
	ix := index(g, sm90)
	lim := defaultLimits(t, g)
	ops := computeOps(g)
	full := split(ix, ops, lim, true, nil)
	calls := 0
	stopped := split(ix, ops, lim, true, func() bool { calls++; return calls > 2 })
	if len(stopped) <= len(full) {
		t.Fatalf("stopped: %d runs, not more than the %d of a full split", len(stopped), len(full))
	}
	var placed []int
	for _, r := range stopped {
		placed = append(placed, r...)
	}
	if !slices.Equal(placed, ops) {
		t.Errorf("a stopped split places %v, want every op once, in order", placed)
	}
	if last := stopped[len(stopped)-1]; len(last) != 1 {
		t.Errorf("the ops left after the stop are runs of %d ops", len(last))
	}
}

// The index answers what a scan of the program's ops does.
func TestIndexMatchesScans(t *testing.T) {
	for name := range programs {
		g := load(t, name)
		ix := index(g, sm90)
		for tid := range g.Tensors {
			tt := kernel.TensorID(tid)
			op, _ := g.Producer(tt)
			if ix.producer[tt] != op {
				t.Errorf("%s: tensor %d: producer %d, scan %d", name, tt, ix.producer[tt], op)
			}
			var readers []int
			for i, o := range g.Ops {
				if slices.Contains(o.In, tt) {
					readers = append(readers, i)
				}
			}
			if !slices.Equal(ix.readers[tt], readers) {
				t.Errorf("%s: tensor %d: readers %v, scan %v", name, tt, ix.readers[tt], readers)
			}
			if ix.output[tt] != slices.Contains(g.Outputs, tt) {
				t.Errorf("%s: tensor %d: output %v", name, tt, ix.output[tt])
			}
		}
	}
}

// A dynamic run over more buckets than its budget can search keeps its
// limit: the buckets left when the time is over get the program as
// written, unsearched (once, each was searched for at least a second, so
// 300 buckets took five minutes), and each bucket has an answer that
// can be written.
func TestRunDynamicManyBucketsKeepsItsLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	program, err := load(t, "llama_mlp").WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	var buckets []int
	for b := 1; b <= 300; b++ {
		buckets = append(buckets, b)
	}
	res, err := RunDynamic(context.Background(), program, 1, 300, buckets, Options{TimeLimit: 4 * time.Second, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "time limit" {
		t.Errorf("stopped %q, want time limit", res.Stopped)
	}
	unsearched := 0
	for _, b := range res.Buckets {
		if b.Parts == nil && b.Stopped == "time limit" && len(b.Candidates) > 0 && b.Candidates[len(b.Candidates)-1].Unfused {
			unsearched++
		}
	}
	if unsearched < 200 {
		t.Errorf("%d buckets left unsearched; want most of the 300", unsearched)
	}
	dir := t.TempDir()
	if _, err := res.Write(Output{Dir: dir, Name: "many"}); err != nil {
		t.Fatal(err)
	}
	if _, err := atomicfile.CheckSet(dir, "many.manifest.json"); err != nil {
		t.Error(err)
	}
}

// An interrupted dynamic run answers at once for the buckets left, and
// says it was interrupted.
func TestRunDynamicInterrupted(t *testing.T) {
	program, err := load(t, "llama_mlp").WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := RunDynamic(ctx, program, 1, 64, DefaultBuckets(1, 64), Options{TimeLimit: time.Minute, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "interrupted" {
		t.Errorf("stopped %q, want interrupted", res.Stopped)
	}
	for _, b := range res.Buckets {
		if b.Stopped != "interrupted" || !b.Candidates[0].Unfused {
			t.Errorf("bucket %d: stopped %q, first candidate unfused %v", b.Size, b.Stopped, b.Candidates[0].Unfused)
		}
	}
}

// A search stopped by its state budget says so, not "time limit".
func TestRunSaysTheStateBudgetStoppedIt(t *testing.T) {
	g := load(t, "lora")
	res, err := Run(context.Background(), g, Options{Workers: 1, MaxStates: 50, NoSeeds: true, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "state budget" {
		t.Errorf("stopped %q, want state budget", res.Stopped)
	}
}

// On an interrupt the searches stop verifying halfway through the grace
// and the run stops waiting for them at its end, so that a search returns
// what it verified while the run still takes it (once, under load, an
// interrupted search's verified seed came back after the run had
// reported its part as not searched).
func TestInterruptEndsTheSearchesVerificationBeforeTheRun(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	d, runCtx, done, err := begin(ctx, chain(t, 8), Options{TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ended := make(chan time.Time, 2)
	context.AfterFunc(d.searchCtx, func() { ended <- time.Now() })
	context.AfterFunc(runCtx, func() { ended <- time.Now() })
	start := time.Now()
	interrupt()
	searches, run := <-ended, <-ended
	if s, r := searches.Sub(start), run.Sub(start); s > interruptGrace*3/4 || r < interruptGrace*9/10 || r-s < interruptGrace/4 {
		t.Errorf("after the interrupt the searches' verification ended at %v, the run at %v; want about %v and %v", s, r, interruptGrace/2, interruptGrace)
	}
}

// A process that exits at once on a second interrupt takes away the
// output directories it made and left empty, the parents it made with
// them, and nothing that holds a file.
func TestRemoveMadeDirs(t *testing.T) {
	root := t.TempDir()
	empty, used := filepath.Join(root, "a", "b", "c"), filepath.Join(root, "d", "e")
	for _, dir := range []string{empty, used} {
		if err := CheckOutputDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(used, "x.ugraph.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	RemoveMadeDirs()
	if _, err := os.Stat(filepath.Join(root, "a")); err == nil {
		t.Error("the empty directories made for the output are left")
	}
	if _, err := os.Stat(filepath.Join(used, "x.ugraph.json")); err != nil {
		t.Errorf("a directory holding a file was removed: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("a directory that was there before was removed: %v", err)
	}
}

// A bucket whose fingerprints alone would take longer than its share of
// the time is passed over at once, saying why, rather than spending the
// share on them and answering nothing: the smaller buckets after it, which
// fingerprint in a fraction of the time, are searched (a range up to 4096
// rows of Qwen2-7B's MLP fused no bucket at all in a minute).
func TestRunDynamicPassesOverBucketsItCannotFingerprint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	program, err := load(t, "llama_mlp").WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	// The largest bucket's fingerprints "take" 1000 s; the others', none.
	defer func(f func(ffverify.Options, ...*kernel.Graph) (time.Duration, int, int)) { fingerprintTime = f }(fingerprintTime)
	fingerprintTime = func(opts ffverify.Options, gs ...*kernel.Graph) (time.Duration, int, int) {
		if rows := gs[0].Tensors[gs[0].Inputs()[0]].Shape.Dim(0); rows >= 64 {
			return 1000 * time.Second, 2, 2
		}
		return 0, 2, 2
	}
	start := time.Now()
	res, err := RunDynamic(context.Background(), program, 1, 64, []int{1, 4, 64}, Options{TimeLimit: 20 * time.Second, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	big := res.Buckets[2]
	if !strings.Contains(big.Unsearched, "fingerprinting it would take about 16m40s on 2 cores") || big.Stats.Seconds > 1 ||
		big.Stopped != "time limit" || !big.Candidates[0].Unfused {
		t.Errorf("bucket 64: unsearched %q after %.1fs, stopped %q, unfused %v; want it passed over at once, saying why",
			big.Unsearched, big.Stats.Seconds, big.Stopped, big.Candidates[0].Unfused)
	}
	for _, b := range res.Buckets[:2] {
		if b.Unsearched != "" || b.Candidates[0].Customized == 0 {
			t.Errorf("bucket %d: unsearched %q, best %d customized; want it searched and fused", b.Size, b.Unsearched, b.Candidates[0].Customized)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %v of its 20s", d)
	}
	var out strings.Builder
	WriteDynamicTable(&out, res, &DynamicWritten{Graph: "x.ugraph.json"}, make([]float64, len(res.Buckets)))
	if !strings.Contains(out.String(), "(bucket 64 not searched: fingerprinting it would take about 16m40s") {
		t.Errorf("the table does not say why bucket 64 was not searched:\n%s", out.String())
	}
}
