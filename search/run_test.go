package search_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// These tests run whole searches on the bundled examples, as mirage
// superopt does (ranked by the cost model for sm_90), and check what the
// search must find. Each search runs once and is shared.

func loadProgram(t testing.TB, name string) *frontend.Program {
	t.Helper()
	p, err := frontend.LoadFile(filepath.Join("..", "examples", name), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run searches program p under its own configuration, for the best 16
// verified candidates.
func run(t testing.TB, p *frontend.Program, workers int, limit time.Duration) *search.Result {
	t.Helper()
	return runFor(t, p, workers, limit, 16)
}

// runComplete searches program p for every verified candidate, on two
// workers, and fails if the search stops early.
func runComplete(t testing.TB, p *frontend.Program) *search.Result {
	t.Helper()
	res := runFor(t, p, 2, 0, 0)
	if res.Stats.Stopped != "" {
		t.Fatalf("the search stopped early (%s)", res.Stats.Stopped)
	}
	return res
}

// runFor searches program p under its own configuration for at most
// results verified candidates (0: all of them).
func runFor(t testing.TB, p *frontend.Program, workers int, limit time.Duration, results int) *search.Result {
	t.Helper()
	name := ""
	if p.Superopt != nil {
		name = p.Superopt.Config
	}
	cfg, err := search.NamedConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	if p.Superopt != nil {
		cfg.Restrict(search.Restrictions(p.Superopt.Lists))
	}
	arch := target.MustLookup("sm_90")
	cfg.Arch = arch
	opts := search.Options{Workers: workers, Seed: 1, MaxResults: results,
		Estimate: func(g *kernel.Graph) (search.Estimate, error) {
			e, err := cost.EstimateGraph(g, arch)
			return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
		}}
	ctx := context.Background()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	res, err := search.Run(ctx, p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// searched holds one two-worker search per example.
var searched sync.Map // example name -> func() *search.Result

// limits are the examples whose search may not finish in reasonable time on
// a slow machine, with the limit they run under: gqa's whole space (two
// graph-defined kernels) took 12.8 s on one core (2026-12-02), 45 s on
// an older machine's two.
var limits = map[string]time.Duration{"gqa.py": 60 * time.Second}

func searchedExample(t *testing.T, name string) (*frontend.Program, *search.Result) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: whole searches take a while")
	}
	p := loadProgram(t, name)
	f, _ := searched.LoadOrStore(name, sync.OnceValue(func() *search.Result { return run(t, p, 2, limits[name]) }))
	res := f.(func() *search.Result)()
	if res.Stats.Stopped != "" && limits[name] == 0 {
		t.Fatalf("%s: the search stopped early (%s)", name, res.Stats.Stopped)
	}
	if len(res.Candidates) == 0 {
		t.Fatalf("%s: no candidates", name)
	}
	return p, res
}

// opsOf counts the ops of b by kind, accumulators by accumulator kind.
func opsOf(b *block.Graph) (kinds map[ugraph.OpKind]int, accums map[ugraph.Accum]int) {
	kinds, accums = map[ugraph.OpKind]int{}, map[ugraph.Accum]int{}
	for _, op := range b.Ops {
		kinds[op.Kind]++
		if op.Kind == ugraph.OpForloopAccum {
			accums[op.Attr.Accum]++
		}
	}
	return kinds, accums
}

// onlyKernel returns the block graph of a candidate that is one
// graph-defined kernel, or fails.
func onlyKernel(t *testing.T, c *search.Candidate) *block.Graph {
	t.Helper()
	if c.Kernels != 1 || c.Customized != 1 {
		t.Fatalf("best candidate: %d kernels, %d graph-defined; want one graph-defined kernel:\n%s", c.Kernels, c.Customized, sprint(c.Graph))
	}
	for _, op := range c.Graph.Ops {
		if op.Kind == ugraph.OpCustomized {
			return op.Block
		}
	}
	panic("unreachable")
}

// TestRMSNormMatmulFusesIntoOneKernel: the search finds Mirage's form of
// its running example, one kernel. (The model ranks first a form that
// leaves the norm to the library and fuses the matmul alone: on the H100
// the one kernel's row reductions, in each of its iterations, cost more
// than the norm's own launch.)
func TestRMSNormMatmulFusesIntoOneKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a whole search")
	}
	p := loadProgram(t, "rmsnorm_matmul.py")
	cfg, err := search.NamedConfig(p.Superopt.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Arch = target.MustLookup("sm_90")
	// Every complete candidate, ranked; the best of one kernel verified.
	res, err := search.Run(context.Background(), p.Graph, cfg, search.Options{Workers: 2, Unverified: true,
		Estimate: func(g *kernel.Graph) (search.Estimate, error) {
			e, err := cost.EstimateGraph(g, cfg.Arch)
			return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Candidates, func(c *search.Candidate) bool { return c.Kernels == 1 && c.Customized == 1 })
	if i < 0 {
		t.Fatalf("no candidate of one graph-defined kernel among %d", len(res.Candidates))
	}
	if r, err := ffverify.Equivalent(p.Graph, res.Candidates[i].Graph, ffverify.Options{Seed: 1}); err != nil || !r.Equivalent {
		t.Fatalf("the best one-kernel candidate does not verify: %v, %v", r, err)
	}
	b := onlyKernel(t, res.Candidates[i])
	kinds, accums := opsOf(b)
	// The rms and the matmul in one for-loop, the division after it.
	if b.ForloopRange < 2 || kinds[ugraph.OpMatmul] != 1 || accums[ugraph.AccumRMS] != 1 || kinds[ugraph.OpDiv] != 1 {
		t.Fatalf("the best one-kernel candidate is not rms and matmul accumulated over one for-loop:\n%s", sprint(res.Candidates[i].Graph))
	}
	for _, op := range b.Ops {
		post := op.Out != block.NoTensor && b.Tensors[op.Out].PostLoop
		switch {
		case op.Kind == ugraph.OpMatmul && post:
			t.Error("the matmul runs after the for-loop, not in it")
		case op.Kind == ugraph.OpDiv && !post:
			t.Error("the division runs in the for-loop, not after it")
		}
	}
}

func TestGatedMLPFusesIntoOneKernel(t *testing.T) {
	_, res := searchedExample(t, "gated_mlp.py")
	b := onlyKernel(t, res.Candidates[0])
	kinds, _ := opsOf(b)
	if kinds[ugraph.OpMatmul] != 2 || kinds[ugraph.OpSilu] != 1 || kinds[ugraph.OpMul] != 1 {
		t.Fatalf("best candidate does not fuse both matmuls, silu and mul:\n%s", sprint(res.Candidates[0].Graph))
	}
}

// TestLoRAFusesIntoOneKernel searches the LoRA workload, whose config
// has concat: ops without an abstract expression, so complete candidates
// whose outputs have none.
func TestLoRAFusesIntoOneKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches take a while")
	}
	p, err := frontend.LoadFile(filepath.Join("..", "bench", "workloads", "lora.py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, p, 2, 0)
	if res.Stats.Stopped != "" || len(res.Candidates) == 0 {
		t.Fatalf("stopped %q with %d candidates", res.Stats.Stopped, len(res.Candidates))
	}
	kinds, _ := opsOf(onlyKernel(t, res.Candidates[0]))
	if kinds[ugraph.OpMatmul] < 2 {
		t.Fatalf("best candidate does not hold both the base and the adapter matmuls:\n%s", sprint(res.Candidates[0].Graph))
	}
}

// TestGQAFindsPartialSums checks that attention is found in the
// flash-decoding form: a first kernel whose blocks split the keys, each
// writing its partial numerator and denominator, and a second that sums
// the partials and divides.
func TestGQAFindsPartialSums(t *testing.T) {
	p, res := searchedExample(t, "gqa.py")
	keys := p.Graph.Inputs()[1] // K: 2x64x4096, the keys along dim 2
	found := false
	for _, c := range res.Candidates {
		if c.Customized != 2 || c.Kernels != 2 {
			continue
		}
		var first *kernel.Op
		for i := range c.Graph.Ops {
			if op := &c.Graph.Ops[i]; op.Kind == ugraph.OpCustomized {
				first = op
				break
			}
		}
		if len(first.Out) != 2 {
			continue
		}
		for j, in := range first.In {
			if in != keys {
				continue
			}
			b := first.Block
			imap := b.InputOps()[j].Input.IMap
			for a, d := range imap {
				if d == 2 && b.Grid[a] > 1 {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("no candidate in the partial-sum form among %d (%+v)", len(res.Candidates), res.Stats)
		for i, c := range res.Candidates {
			t.Logf("candidate %d:\n%s", i, sprint(c.Graph))
		}
	}
}

// TestCandidatesAgreeInFloat runs every reported candidate through the
// float64 interpreter against its program, as mirage verify --method float
// does.
func TestCandidatesAgreeInFloat(t *testing.T) {
	for _, name := range []string{"rmsnorm_matmul.py", "gated_mlp.py", "gqa.py"} {
		p, res := searchedExample(t, name)
		ins := interp.RandomInputs(p.Graph, 7)
		want, err := interp.Run(p.Graph, ins)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range res.Candidates {
			got, err := interp.Run(c.Graph, ins)
			if err != nil {
				t.Fatalf("%s candidate %d: %v", name, i, err)
			}
			d, err := interp.CompareAll(want, got)
			if err != nil || d.MaxRelErr > interp.DefaultTolerance {
				t.Errorf("%s candidate %d differs from the program: %+v %v\n%s", name, i, d, err, sprint(c.Graph))
			}
		}
	}
}

// encode is what superopt writes for a result.
func encode(t *testing.T, res *search.Result) []byte {
	t.Helper()
	f, err := res.File("rmsnorm_matmul", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWorkerCountDoesNotChangeResults(t *testing.T) {
	p, two := searchedExample(t, "rmsnorm_matmul.py")
	one := run(t, p, 1, 0)
	if a, b := encode(t, one), encode(t, two); !bytes.Equal(a, b) {
		t.Errorf("1 and 2 workers found different results (%d and %d candidates)", len(one.Candidates), len(two.Candidates))
	}
}

func TestCacheRoundTrip(t *testing.T) {
	p, res := searchedExample(t, "rmsnorm_matmul.py")
	cache := search.Cache{Dir: t.TempDir()}
	cfg, _ := search.NamedConfig("")
	key := search.Key(p.Graph, cfg, search.Options{Seed: 1})
	if other := search.Key(p.Graph, cfg, search.Options{Seed: 2}); other == key {
		t.Error("the key does not depend on the seed")
	}
	if mlp, _ := search.NamedConfig("mlp"); search.Key(p.Graph, mlp, search.Options{Seed: 1}) == key {
		t.Error("the key does not depend on the configuration")
	}
	sm80 := cfg
	sm80.Arch = target.MustLookup("sm_80")
	if search.Key(p.Graph, sm80, search.Options{Seed: 1}) == key {
		t.Error("the key does not depend on the arch (the ranking's cost model)")
	}
	// The same program at other shapes (#15: the key once ignored them).
	src, err := os.ReadFile(filepath.Join("..", "examples", "rmsnorm_matmul.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dims := range [][3]string{{"(32, 4096)", "(4096, 6144)", "(4096,)"}, {"(64, 1024)", "(1024, 6144)", "(1024,)"}} {
		variant := strings.NewReplacer("(16, 4096)", dims[0], "(4096, 6144)", dims[1], "(4096,)", dims[2]).Replace(string(src))
		q, err := frontend.Load("rmsnorm_matmul.py", []byte(variant), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if q.Graph.Tensors[0].Shape == p.Graph.Tensors[0].Shape {
			t.Fatalf("the variant %v did not change the program's shapes", dims)
		}
		if search.Key(q.Graph, cfg, search.Options{Seed: 1}) == key {
			t.Errorf("the program at %v has the key of the program at (16, 4096)", dims)
		}
	}
	if _, hit, err := cache.Load(key, p.Graph, search.Options{Seed: 1}); hit || err != nil {
		t.Fatalf("empty cache: hit %v, %v", hit, err)
	}
	if err := cache.Store(key, "rmsnorm_matmul", res); err != nil {
		t.Fatal(err)
	}
	got, hit, err := cache.Load(key, p.Graph, search.Options{Seed: 1})
	if !hit || err != nil {
		t.Fatalf("after Store: hit %v, %v", hit, err)
	}
	if !bytes.Equal(encode(t, got), encode(t, res)) || got.Stats.States != res.Stats.States {
		t.Error("the cached result differs from the stored one")
	}

	// An entry edited to compute something else is refused: a cache hit
	// is verified before it is used.
	path := filepath.Join(cache.Dir, key+".ugraph.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"op": "div"`)) {
		t.Fatal(`the cached entry has no "div" op to edit`)
	}
	edited := bytes.Replace(data, []byte(`"op": "div"`), []byte(`"op": "mul"`), 1)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, hit, err := cache.Load(key, p.Graph, search.Options{Seed: 1}); hit || err == nil || !strings.Contains(err.Error(), "does not compute the program") {
		t.Errorf("edited entry (div -> mul): hit %v, error %v", hit, err)
	}

	// A damaged entry is an error, not a crash, and Store replaces it.
	if err := os.WriteFile(path, []byte(`{"version": 1, "graphs": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, hit, err := cache.Load(key, p.Graph, search.Options{Seed: 1}); hit || err == nil {
		t.Errorf("damaged entry: hit %v, error %v", hit, err)
	}
	if err := cache.Store(key, "rmsnorm_matmul", res); err != nil {
		t.Fatal(err)
	}
	if _, hit, err := cache.Load(key, p.Graph, search.Options{Seed: 1}); !hit || err != nil {
		t.Errorf("after replacing the damaged entry: hit %v, %v", hit, err)
	}

	// Results of searches cut short are not stored.
	short := *res
	short.Stats.Stopped = "time limit"
	other := search.Key(p.Graph, cfg, search.Options{Seed: 3})
	if err := cache.Store(other, "rmsnorm_matmul", &short); err != nil {
		t.Fatal(err)
	}
	if _, hit, _ := cache.Load(other, p.Graph, search.Options{Seed: 1}); hit {
		t.Error("a search stopped by its time limit was cached")
	}
}

// TestCacheVerifiesWhatTheFastPathCannotSample: an entry whose one sampled
// position costs the fast path more than it may spend (a row of X·W, 512
// by 256, for each position of (X·W)·V) is checked in full, not taken
// because the samples were never compared.
func TestCacheVerifiesWhatTheFastPathCannotSample(t *testing.T) {
	build := func(wrong bool) *kernel.Graph {
		src := []string{
			"g = mi.new_kernel_graph()",
			"X = g.new_input(dims=(16, 512), dtype=mi.float16)",
			"W = g.new_input(dims=(512, 256), dtype=mi.float16)",
			"V = g.new_input(dims=(256, 64), dtype=mi.float16)",
			"H = g.matmul(X, W)",
		}
		if wrong {
			src = append(src, "H = g.silu(H)")
		}
		src = append(src, "g.mark_output(g.matmul(H, V))")
		p, err := frontend.Load("xwv.py", []byte("import mirage as mi\n"+strings.Join(src, "\n")+"\n"), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Graph
	}
	program, wrong := build(false), build(true)
	v, err := ffverify.New(program, ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rejected, err := v.Reject(wrong); err != nil || rejected {
		t.Fatalf("the fast path rejects silu(X·W)·V (%v, %v): the test needs one it cannot sample", rejected, err)
	}
	cache := search.Cache{Dir: t.TempDir()}
	res := &search.Result{Candidates: []*search.Candidate{{Graph: wrong, Hash: kernel.Hash(wrong), Kernels: 3}}}
	if err := cache.Store("k", "xwv", res); err != nil {
		t.Fatal(err)
	}
	if _, hit, err := cache.Load("k", program, search.Options{Seed: 1}); hit || err == nil || !strings.Contains(err.Error(), "does not compute the program") {
		t.Errorf("a cached silu(X·W)·V for (X·W)·V: hit %v, error %v", hit, err)
	}
}

func TestStopsOnBudgetAndDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := loadProgram(t, "gqa.py")
	cfg, _ := search.NamedConfig("attention")
	// Candidates are verified after the search stops, best first: a limit
	// on how many (the CLI's default) keeps that part short.
	opts := search.Options{Workers: 2, MaxStates: 20000, MaxResults: 16}
	res, err := search.Run(context.Background(), p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Stopped != "state budget" {
		t.Errorf("with a state budget: stopped %q", res.Stats.Stopped)
	}
	// gqa's whole enumeration takes about 7 s on two cores: a deadline
	// far inside it, so that a faster machine meets it too.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	opts.MaxStates = 0
	res, err = search.Run(ctx, p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Stopped != "time limit" {
		t.Errorf("with a deadline: stopped %q", res.Stats.Stopped)
	}
	// A live heap past the budget (one byte: at its first look) ends the
	// enumeration; what it found is still ranked and verified.
	opts.MaxLiveHeap = 1
	res, err = search.Run(context.Background(), p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Stopped != "memory" || res.Stats.States > 1<<17 {
		t.Errorf("with a heap budget: stopped %q after %d states", res.Stats.Stopped, res.Stats.States)
	}
	if len(res.Candidates) == 0 {
		t.Error("with a heap budget: no candidate")
	}
}

func sprint(g *kernel.Graph) string {
	var b bytes.Buffer
	kernel.Fprint(&b, g)
	return b.String()
}

// TestProgressCoversVerification checks that progress is reported through
// the verification after the search, which is when candidates are
// verified: the last report has the final counts.
func TestProgressCoversVerification(t *testing.T) {
	p, err := frontend.LoadFile(filepath.Join("..", "bench", "workloads", "ntrans.py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := search.NamedConfig(p.Superopt.Config)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last search.Stats
	reports := 0
	opts := search.Options{Workers: 2, MaxResults: 4, ProgressEvery: time.Millisecond, Progress: func(s search.Stats) {
		mu.Lock()
		defer mu.Unlock()
		last = s
		reports++
	}}
	res, err := search.Run(context.Background(), p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reports == 0 {
		t.Fatal("no progress reported")
	}
	want := res.Stats
	if last.Verified != want.Verified || last.Complete != want.Complete || last.States != want.States {
		t.Errorf("last report: %d states, %d candidates, %d verified; the result: %d, %d, %d",
			last.States, last.Complete, last.Verified, want.States, want.Complete, want.Verified)
	}
	if want.Verified == 0 || want.Complete < want.Verified {
		t.Errorf("%d candidates, %d verified", want.Complete, want.Verified)
	}
}

// TestCandidatesKeepTheProgramsOutputOrder: a program that marks its
// outputs out of tensor order gets candidates whose outputs are in its
// order (the generator finds them in tensor order; the verifier's matching
// puts them back), as the float64 interpreter checks position by position.
func TestCandidatesKeepTheProgramsOutputOrder(t *testing.T) {
	src := `import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 64), dtype=mi.float16)
Wq = g.new_input(dims=(64, 256), dtype=mi.float16)
Wk = g.new_input(dims=(64, 128), dtype=mi.float16)
Q = g.matmul(X, Wq)
K = g.matmul(X, Wk)
g.mark_output(K)
g.mark_output(Q)
`
	p, err := frontend.Load("two.py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, p, 2, 0)
	if len(res.Candidates) == 0 {
		t.Fatal("no candidates")
	}
	in := interp.RandomInputs(p.Graph, 1)
	want, err := interp.Run(p.Graph, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range res.Candidates {
		got, err := interp.Run(c.Graph, in)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := interp.CompareAll(want, got); err != nil || d.MaxRelErr > 1e-9 {
			t.Errorf("candidate %d: %+v, %v", i, d, err)
		}
		if c.Hash != kernel.Hash(c.Graph) {
			t.Errorf("candidate %d: its hash is not its graph's", i)
		}
	}
}

// The mlp preset allows two outputs per graph-defined kernel: the gated
// MLP's verified set holds Mirage's two-output form, one kernel writing
// X·W3 and silu(X·W1) and a mul kernel after it.
func TestTwoOutputKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a whole search")
	}
	src := `import mirage as mi
graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W1 = graph.new_input(dims=(256, 256), dtype=mi.float16)
W3 = graph.new_input(dims=(256, 256), dtype=mi.float16)
graph.mark_output(graph.mul(graph.silu(graph.matmul(X, W1)), graph.matmul(X, W3)))
graph.superoptimize(config="mlp")
`
	p, err := frontend.Load("gated_small.py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := search.NamedConfig("mlp")
	res, err := search.Run(context.Background(), p.Graph, cfg, search.Options{Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Candidates {
		for _, op := range c.Graph.Ops {
			if op.Kind == ugraph.OpCustomized && len(op.Out) == 2 && c.Customized == 1 && c.Kernels == 2 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no verified candidate of a two-output kernel and a mul among %d", len(res.Candidates))
	}
}

// TestBestIsNoWorseThanHandWritten: under the cost model that ranks them,
// the best candidate of each example's search is estimated no slower than
// the example's hand-written μGraph (examples/*_mugraph.py).
func TestBestIsNoWorseThanHandWritten(t *testing.T) {
	arch := target.MustLookup("sm_90")
	for _, name := range []string{"rmsnorm_matmul", "gated_mlp", "gqa"} {
		t.Run(name, func(t *testing.T) {
			_, res := searchedExample(t, name+".py")
			hand := loadProgram(t, name+"_mugraph.py")
			want, err := cost.EstimateGraph(hand.Graph, arch)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Candidates[0].Estimate.Micros; got > want.Micros {
				t.Errorf("best candidate %.2f µs, the hand-written μGraph %.2f µs:\n%s", got, want.Micros, sprint(res.Candidates[0].Graph))
			} else {
				t.Logf("best candidate %.2f µs, the hand-written μGraph %.2f µs", got, want.Micros)
			}
		})
	}
}

// A result whose document passes what Load reads is not stored: the entry
// would be a warning on every later run. (A search keeps up to 65,536
// candidates; with --max-candidates 0, three small outputs made 78 MB, past
// the 64 MiB an entry holds; here a cache holds 64 KiB.)
func TestCacheStoresOnlyWhatItCanLoad(t *testing.T) {
	p, err := frontend.Load("exp.py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\n"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	one := &search.Candidate{Graph: p.Graph, Hash: kernel.Hash(p.Graph)}
	cache := search.CacheHolding(t.TempDir(), 64<<10)
	for i, n := range []int{1, 64 << 10 / 400, 64 << 10 / 100} {
		key := search.Key(p.Graph, search.Config{}, search.Options{Seed: uint64(i)})
		res := &search.Result{Candidates: slices.Repeat([]*search.Candidate{one}, n)}
		size := len(encode(t, res))
		// An entry too large to read, as Store once wrote, is removed.
		if err := os.WriteFile(filepath.Join(cache.Dir, key+".ugraph.json"), make([]byte, 64<<10+1), 0o644); err != nil {
			t.Fatal(err)
		}
		err := cache.Store(key, "exp", res)
		_, hit, loadErr := cache.Load(key, p.Graph, search.Options{Seed: 1})
		switch {
		case size <= 64<<10 && (err != nil || !hit || loadErr != nil):
			t.Errorf("%d candidates, %d bytes: store %v, load hit %v, %v", n, size, err, hit, loadErr)
		case size > 64<<10 && (err == nil || !strings.Contains(err.Error(), "not cached") || hit):
			t.Errorf("%d candidates, %d bytes: store %v, load hit %v, %v; want it not cached", n, size, err, hit, loadErr)
		}
		if t.Failed() {
			return
		}
		if err != nil {
			if _, err := os.Stat(filepath.Join(cache.Dir, key+".ugraph.json")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("entry: %v; want none", err)
			}
		}
	}
}
