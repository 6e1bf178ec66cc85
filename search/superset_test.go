package search_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// Mirage's search space, on the forms it finds for RMSNorm+MatMul and the
// gated MLP: the single-kernel μGraph of examples/*_mugraph.py at every
// grid and for-loop range Mirage's generator tries (src/search/config.cc:
// x = n/t for every dim n of the kernel's inputs and tiles t from 8 to 256,
// 32 <= x <= 1024; for-loop ranges 4, 16 and 64), and the gated MLP's
// two-output form (one kernel writes silu(X·W1) and X·W2, a mul kernel
// follows). Our complete set (every candidate verified) must hold each
// one that fits the target's shared memory, which Mirage checks too.

// mirageGrids returns Mirage's grid sizes x for a kernel reading inputs of
// the given shapes.
func mirageGrids(shapes ...[]int) []int {
	var xs []int
	for _, s := range shapes {
		for _, n := range s {
			for t := 8; t <= 256; t *= 2 {
				if x := n / t; n%t == 0 && x >= 32 && x <= 1024 && !slices.Contains(xs, x) {
					xs = append(xs, x)
				}
			}
		}
	}
	slices.Sort(xs)
	return xs
}

var mirageRanges = []int{4, 16, 64}

// supersetCase is a program and the forms of Mirage's space for it.
type supersetCase struct {
	name    string
	program string // a program's source
	forms   []string
}

// rmsnormCase is RMSNorm+MatMul at X m×k, W k×n.
func rmsnormCase(t *testing.T, m, k, n int) supersetCase {
	shapes := map[string]string{"(16, 4096)": fmt.Sprintf("(%d, %d)", m, k), "(4096, 6144)": fmt.Sprintf("(%d, %d)", k, n)}
	src := example(t, "rmsnorm_matmul_mugraph.py", shapes)
	shapes["normalized_shape=(4096,)"] = fmt.Sprintf("normalized_shape=(%d,)", k)
	c := supersetCase{name: fmt.Sprintf("rmsnorm_matmul/%dx%dx%d", m, k, n), program: example(t, "rmsnorm_matmul.py", shapes)}
	for _, x := range mirageGrids([]int{m, k}, []int{k, n}) {
		for _, f := range mirageRanges {
			if n%x == 0 && k%f == 0 {
				c.forms = append(c.forms, launch(src, x, f))
			}
		}
	}
	return c
}

// gatedCase is the gated MLP at X m×k, W1 and W2 k×n, with its two-output
// form at every launch of the one-kernel form.
func gatedCase(t *testing.T, m, k, n int) supersetCase {
	dims := map[string]string{"(8, 4096)": fmt.Sprintf("(%d, %d)", m, k), "(4096, 4096)": fmt.Sprintf("(%d, %d)", k, n)}
	c := supersetCase{name: fmt.Sprintf("gated_mlp/%dx%dx%d", m, k, n), program: example(t, "gated_mlp.py", dims)}
	one := example(t, "gated_mlp_mugraph.py", dims)
	// The two-output form: the kernel's outputs are silu(X·W1) and X·W2.
	two := strings.Replace(one, `tO = tb.mul(tb.silu(tA1), tA2)
tb.new_output(stensor=tO, output_map=(1, -1, -1))

O = graph.customized([X, W1, W2], tb)
graph.mark_output(O[0])`, `tb.new_output(stensor=tb.silu(tA1), output_map=(1, -1, -1))
tb.new_output(stensor=tA2, output_map=(1, -1, -1))

O = graph.customized([X, W1, W2], tb)
graph.mark_output(graph.mul(O[0], O[1]))`, 1)
	if two == one {
		t.Fatal("gated_mlp_mugraph.py: the kernel's output is not where the two-output form expects it")
	}
	for _, x := range mirageGrids([]int{m, k}, []int{k, n}) {
		for _, f := range mirageRanges {
			if n%x == 0 && k%f == 0 {
				c.forms = append(c.forms, launch(one, x, f), launch(two, x, f))
			}
		}
	}
	return c
}

// example returns the text of examples/name (a path from there) with its
// shapes replaced.
func example(t *testing.T, name string, shapes map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for from, to := range shapes {
		if !strings.Contains(src, from) {
			t.Fatalf("%s has no %s", name, from)
		}
		src = strings.ReplaceAll(src, from, to)
	}
	return src
}

// launch sets the grid and for-loop range of a μGraph example's kernel.
func launch(src string, x, f int) string {
	for _, field := range []string{"grid_dim=(", "forloop_range="} {
		i := strings.Index(src, field) + len(field)
		j := i + strings.IndexAny(src[i:], ",)")
		if field == "grid_dim=(" {
			src = src[:i] + fmt.Sprint(x) + src[j:]
		} else {
			src = src[:i] + fmt.Sprint(f) + src[j:]
		}
	}
	return src
}

func TestCompleteSetHoldsMiragesForms(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: complete searches take a while")
	}
	arch := target.MustLookup("sm_90")
	cases := []supersetCase{
		rmsnormCase(t, 16, 4096, 6144), rmsnormCase(t, 8, 2048, 3072),
		gatedCase(t, 8, 4096, 4096), gatedCase(t, 4, 2048, 2048),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := completeSet(t, c.program)
			found := map[string]bool{}
			for _, cand := range res.Candidates {
				found[canonical(cand.Graph)] = true
			}
			checked := 0
			for _, src := range c.forms {
				form, err := frontend.Load("form.py", []byte(src), frontend.Options{})
				if err != nil {
					t.Fatalf("%v\n%s", err, src)
				}
				if !fitsSmem(form.Graph, arch) {
					continue
				}
				checked++
				if !found[canonical(form.Graph)] {
					t.Errorf("the complete set (%d candidates) lacks Mirage's form:\n%s", len(res.Candidates), canonical(form.Graph))
				}
			}
			t.Logf("%d of Mirage's forms fit shared memory, in a complete set of %d", checked, len(res.Candidates))
			if checked < len(c.forms)/4 {
				t.Errorf("only %d of %d forms fit shared memory", checked, len(c.forms))
			}
		})
	}
}

// completeSets holds one complete search per program text.
var completeSets sync.Map // program source -> func() *search.Result

// completeSet searches the program src for every verified candidate, once
// for all the tests that ask.
func completeSet(t *testing.T, src string) *search.Result {
	t.Helper()
	f, _ := completeSets.LoadOrStore(src, sync.OnceValues(func() (*search.Result, error) {
		p, err := frontend.Load("program.py", []byte(src), frontend.Options{})
		if err != nil {
			return nil, err
		}
		return runComplete(t, p), nil
	}))
	res, err := f.(func() (*search.Result, error))()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCompleteSetKeepsWhatItHad: the complete sets of the examples and
// bench workloads whose whole space takes under a minute hold every
// candidate recorded in testdata/complete (by the hash of its canonical
// rendering): a change to the generator may add candidates, never lose
// one. Record again with go test ./search -run CompleteSetKeeps -update,
// in a commit that says why.
func TestCompleteSetKeepsWhatItHad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: complete searches take a while")
	}
	for _, name := range []string{"rmsnorm_matmul.py", "gated_mlp.py", "../bench/workloads/lora.py", "../bench/workloads/ntrans.py"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			res := completeSet(t, example(t, name, nil))
			var got []string
			for _, c := range res.Candidates {
				sum := sha256.Sum256([]byte(canonical(c.Graph)))
				got = append(got, hex.EncodeToString(sum[:8]))
			}
			slices.Sort(got)
			got = slices.Compact(got)
			path := filepath.Join("testdata", "complete", strings.TrimSuffix(filepath.Base(name), ".py")+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var lost []string
			want := strings.Fields(string(b))
			for _, h := range want {
				if _, ok := slices.BinarySearch(got, h); !ok {
					lost = append(lost, h)
				}
			}
			t.Logf("complete set: %d candidates, %d recorded", len(got), len(want))
			if len(lost) > 0 {
				t.Errorf("%d of the %d recorded candidates are no longer in the complete set (%d candidates): %v", len(lost), len(want), len(got), lost)
			}
		})
	}
}

// fitsSmem reports whether every graph-defined kernel of g fits arch's
// shared memory as the code generator lays it out.
func fitsSmem(g *kernel.Graph, arch target.Arch) bool {
	for _, op := range g.Ops {
		if op.Block != nil {
			if _, err := thread.Derive(op.Block, arch, thread.Options{}); err != nil {
				return false
			}
		}
	}
	return true
}

// canonical renders a kernel graph independently of the order of its ops
// and of the operands of commutative ops: each output as the tree that
// computes it, a graph-defined kernel's result as its launch and the tree
// of its output op. Two graphs render alike exactly when they compute
// through the same ops, maps and launches.
func canonical(g *kernel.Graph) string {
	producer := map[kernel.TensorID][2]int{}
	for i, op := range g.Ops {
		for r, t := range op.Out {
			producer[t] = [2]int{i, r}
		}
	}
	inputs := g.Inputs()
	var tensor func(t kernel.TensorID) string
	tensor = func(t kernel.TensorID) string {
		i, r := producer[t][0], producer[t][1]
		op := &g.Ops[i]
		var args []string
		for _, a := range op.In {
			args = append(args, tensor(a))
		}
		switch op.Kind {
		case ugraph.OpInput:
			return fmt.Sprintf("in%d:%v", slices.Index(inputs, t), g.Tensors[t].DType)
		case ugraph.OpCustomized:
			return fmt.Sprintf("kernel{%s}(%s)", blockCanonical(op.Block, r, args), strings.Join(args, ", "))
		}
		return render(op.Kind, op.Attr, args)
	}
	var outs []string
	for _, t := range g.Outputs {
		outs = append(outs, tensor(t))
	}
	return strings.Join(outs, "\n")
}

// blockCanonical renders the launch of b and the tree of its r-th output.
func blockCanonical(b *block.Graph, r int, args []string) string {
	producer := map[block.TensorID]int{}
	for i, op := range b.Ops {
		if op.Out != block.NoTensor {
			producer[op.Out] = i
		}
	}
	var tile func(t block.TensorID) string
	tile = func(t block.TensorID) string {
		op := &b.Ops[producer[t]]
		if op.Kind == ugraph.OpInput {
			k := 0
			for _, o := range b.Ops[:producer[t]] {
				if o.Kind == ugraph.OpInput {
					k++
				}
			}
			return fmt.Sprintf("load(%s, imap %v, fmap %d)", args[k], op.Input.IMap, op.Input.FMap)
		}
		var in []string
		for _, a := range op.Operands() {
			in = append(in, tile(a))
		}
		return render(op.Kind, op.Attr, in)
	}
	out := b.OutputOps()[r]
	// The block size is not part of a form: the enumeration builds every
	// kernel with the first of the configuration's sizes (128 threads, as
	// the recorded forms have it) and the cost model sizes each candidate's
	// kernels after. It renders as the enumeration's, whatever was chosen.
	return fmt.Sprintf("grid %v threads %v forloop %d dimx %d: store(%s, omap %v)",
		b.Grid, block.Dim3{128, 1, 1}, b.ForloopRange, b.ReductionDimx, tile(out.In[0]), out.Output.OMap)
}

// render names an op on rendered operands, sorted for commutative kinds.
func render(k ugraph.OpKind, a ugraph.Attr, args []string) string {
	if k == ugraph.OpAdd || k == ugraph.OpMul {
		args = slices.Sorted(slices.Values(args))
	}
	return fmt.Sprintf("%v%+v(%s)", k, a, strings.Join(args, ", "))
}

// TestCompleteSetReadsLoopInvariantInputs: a per-row scale of width 1 that
// the for-loop does not walk reaches the post-loop product through a mean
// accumulator: the mean of F equal tiles is the tile. The oracle once took
// it for a sum of F different ones and pruned the form.
func TestCompleteSetReadsLoopInvariantInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: complete searches take a while")
	}
	program := `import mirage as mi
graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 256), dtype=mi.float16)
S = graph.new_input(dims=(8, 1), dtype=mi.float16)
graph.mark_output(graph.mul(graph.matmul(X, W), S))
graph.superoptimize(config="default")
`
	form := `import mirage as mi
graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 256), dtype=mi.float16)
S = graph.new_input(dims=(8, 1), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
tS = tb.new_input(dtensor=S, input_map=(-1, -1, -1), forloop_dim=-1)
tb.new_output(stensor=tb.mul(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tS, "mean")), output_map=(1, -1, -1))
graph.mark_output(graph.customized([X, W, S], tb)[0])
`
	res := completeSet(t, program)
	want, err := frontend.Load("form.py", []byte(form), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Candidates {
		if canonical(c.Graph) == canonical(want.Graph) {
			return
		}
	}
	t.Errorf("the complete set (%d candidates) lacks the form:\n%s", len(res.Candidates), canonical(want.Graph))
}
