package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/check"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// load returns the program of source, named name.py, as a file gives it.
func load(t *testing.T, name, source string) *driver.Input {
	t.Helper()
	in, err := driver.LoadSource(name+".py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\n"+source), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func named(t *testing.T, in *driver.Input) check.Named {
	t.Helper()
	g, err := in.Graph(0)
	if err != nil {
		t.Fatal(err)
	}
	return check.Named{Path: in.Path, Graph: g}
}

// (X + Y) * Z and X*Z + Y*Z are one function; (X + Y) * Y is another;
// wider takes inputs of another shape.
const (
	xyz      = "X = g.new_input(dims=(8, 64), dtype=mi.float16)\nY = g.new_input(dims=(8, 64), dtype=mi.float16)\nZ = g.new_input(dims=(8, 64), dtype=mi.float16)\n"
	factored = xyz + "g.mark_output(g.mul(g.add(X, Y), Z))\n"
	expanded = xyz + "g.mark_output(g.add(g.mul(X, Z), g.mul(Y, Z)))\n"
	other    = xyz + "g.mark_output(g.mul(g.add(X, Y), Y))\n"
	wider    = "X = g.new_input(dims=(8, 128), dtype=mi.float16)\nY = g.new_input(dims=(8, 64), dtype=mi.float16)\nZ = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.add(Y, Z))\n"
)

// Two outputs, and the same two marked the other way round; and two equal
// outputs, which agree in either order.
const (
	twoOuts        = "X = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\ng.mark_output(g.silu(X))\n"
	twoOutsSwapped = "X = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.silu(X))\ng.mark_output(g.exp(X))\n"
	twoEqual       = "X = g.new_input(dims=(8, 64), dtype=mi.float16)\nE = g.exp(X)\ng.mark_output(g.exp(X))\ng.mark_output(E)\n"
)

// The gated MLP silu(X·W1) * (X·W2) at 8 × 256 by 256 × 512, as its ops
// and as one graph-defined kernel (examples/gated_mlp_mugraph.py's form);
// gateOnW2 gates the other product: another function.
const (
	gatedInputs = "X = g.new_input(dims=(8, 256), dtype=mi.float16)\nW1 = g.new_input(dims=(256, 512), dtype=mi.float16)\nW2 = g.new_input(dims=(256, 512), dtype=mi.float16)\n"
	gatedOps    = gatedInputs + "g.mark_output(g.mul(g.silu(g.matmul(X, W1)), g.matmul(X, W2)))\n"
	gatedKernel = gatedInputs + `tb = mi.new_threadblock_graph(grid_dim=(8, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW1 = tb.new_input(dtensor=W1, input_map=(1, -1, -1), forloop_dim=0)
tW2 = tb.new_input(dtensor=W2, input_map=(1, -1, -1), forloop_dim=0)
tA1 = tb.forloop_accum(tb.matmul(tX, tW1))
tA2 = tb.forloop_accum(tb.matmul(tX, tW2))
tb.new_output(stensor=tb.mul(tb.silu(tA1), tA2), output_map=(1, -1, -1))
g.mark_output(g.customized([X, W1, W2], tb)[0])
`
	gateOnW2 = gatedInputs + "g.mark_output(g.mul(g.silu(g.matmul(X, W2)), g.matmul(X, W1)))\n"
	// An fp32 matmul, which cuBLASLt runs in fp32.
	fp32Matmul = "X = g.new_input(dims=(8, 64), dtype=mi.float32)\nW = g.new_input(dims=(64, 48), dtype=mi.float32)\ng.mark_output(g.matmul(X, W))\n"
	// X over the root of -E², NaN or infinite on every draw, and 2X over it:
	// another function, which no draw can tell apart.
	nanInputs = "X = g.new_input(dims=(4, 64), dtype=mi.float16)\nE = g.new_input(dims=(1, 1), dtype=mi.float16)\nR = g.sqrt(g.mul_scalar(g.square(E), -1.0))\n"
	nanOfX    = nanInputs + "g.mark_output(g.div(X, R))\n"
	nanOf2X   = nanInputs + "g.mark_output(g.div(g.mul_scalar(X, 2.0), R))\n"
)

// noVerdict is the error of a check whose draw gives a.py's output 0 of
// shape shape no finite element.
func noVerdict(method, shape string) string {
	return "no verdict (" + method + ", seed 1): output 0 " + shape + " of a.py is NaN or infinite at every position on this draw, so the comparison checks nothing there; try another --seed"
}

func TestGraphs(t *testing.T) {
	for _, tt := range []struct {
		name, a, b string
		method     check.Method
		same       bool
		says, err  string
	}{
		{"ff agree", factored, expanded, check.FF, true, "equivalent (finite fields, seed 1, 2 trial(s)): 1 output(s) agree", ""},
		{"float agree", factored, expanded, check.Float, true, "equivalent (float64, seed 1): 1 output(s) agree", ""},
		{"ff differ", factored, other, check.FF, false, "finite fields, seed 1", ""},
		{"float differ", factored, other, check.Float, false, "not equivalent (float64, seed 1): output 0", ""},
		{"ff, outputs in another order", twoOuts, twoOutsSwapped, check.FF, false,
			"not equivalent in order (finite fields, seed 1): b.py computes a.py's outputs in another order (its output 0 is a.py's output 1, its output 1 is a.py's output 0)", ""},
		{"float, outputs in another order", twoOuts, twoOutsSwapped, check.Float, false,
			"not equivalent in order (float64, seed 1): b.py computes a.py's outputs in another order (its output 0 is a.py's output 1, its output 1 is a.py's output 0)", ""},
		{"ff, another number of outputs", "X = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\n", twoOuts, check.FF, false,
			"not equivalent: a.py has 1 output, float16 [8, 64]; b.py has 2 outputs, float16 [8, 64] and float16 [8, 64]", ""},
		{"ff, equal outputs", twoEqual, twoEqual, check.FF, true, "equivalent (finite fields, seed 1, 2 trial(s)): 2 output(s) agree", ""},
		{"float, equal outputs", twoEqual, twoEqual, check.Float, true, "equivalent (float64, seed 1): 2 output(s) agree", ""},
		{"inputs differ", factored, wider, check.FF, false, "", "a.py and b.py: input 0 is [8, 64] float16 in the first but [8, 128] float16 in the second"},
		{"emu agree", factored, expanded, check.Emu, true, "equivalent (CPU emulator, seed 1): 1 output(s) agree", ""},
		{"emu differ", factored, other, check.Emu, false, "not equivalent (CPU emulator, seed 1): output 0 [8, 64]", ""},
		{"emu kernel agrees", gatedOps, gatedKernel, check.Emu, true, "equivalent (CPU emulator, seed 1): 1 output(s) agree", ""},
		{"emu kernel differs", gateOnW2, gatedKernel, check.Emu, false, "not equivalent (CPU emulator, seed 1): output 0 [8, 512]", ""},
		{"emu fp32, fp32's tolerance", fp32Matmul, fp32Matmul, check.Emu, true, "(tolerance 0.0001)", ""},
		{"float, nothing finite", nanOfX, nanOf2X, check.Float, false, "", noVerdict("float64", "[4, 64]")},
		{"emu, nothing finite", nanOfX, nanOf2X, check.Emu, false, "", noVerdict("CPU emulator", "[4, 64]")},
		{"ff, nothing finite in floats", nanOfX, nanOf2X, check.FF, false, "finite fields, seed 1", ""},
		{"unknown method", factored, expanded, "exact", false, "", `unknown --method "exact" (want ff, float or emu)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w bytes.Buffer
			opts := check.Options{Method: tt.method, Trials: check.DefaultTrials, Seed: 1, MaxBytes: 1 << 30}
			same, err := check.Graphs(context.Background(), &w, named(t, load(t, "a", tt.a)), named(t, load(t, "b", tt.b)), opts)
			switch {
			case tt.err != "":
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case same != tt.same || !strings.Contains(w.String(), tt.says):
				t.Errorf("same = %v, said %q; want %v, %q", same, w.String(), tt.same, tt.says)
			}
		})
	}
}

// Options are checked, and their defaults filled, in one place: what a
// verdict reports is what ran.
func TestGraphsOptions(t *testing.T) {
	a, b := named(t, load(t, "a", factored)), named(t, load(t, "b", expanded))
	if _, err := check.Graphs(context.Background(), &bytes.Buffer{}, a, b, check.Options{Method: check.FF, Trials: 0, Seed: 1}); err == nil || err.Error() != "--trials 0: want at least 1" {
		t.Errorf("no trials: %v", err)
	}
	for _, m := range []check.Method{check.FF, check.Float} {
		var w bytes.Buffer // MaxBytes 0: the default bound, for either method
		if same, err := check.Graphs(context.Background(), &w, a, b, check.Options{Method: m, Trials: 3, Seed: 2}); err != nil || !same {
			t.Errorf("%s with no bound given: %v, %v", m, same, err)
		}
		if m == check.FF && !strings.Contains(w.String(), "seed 2, 3 trial(s)") {
			t.Errorf("reported %q, want the 3 trials that ran", w.String())
		}
	}
	// A negative seed is reported as given, so that it can be given again.
	var w bytes.Buffer
	if same, err := check.Graphs(context.Background(), &w, a, b, check.Options{Method: check.FF, Trials: 1, Seed: -1}); err != nil || !same || !strings.Contains(w.String(), "seed -1, 1 trial(s)") {
		t.Errorf("--seed -1: %v, %v, reported %q", same, err, w.String())
	}
}

// A comparison over the memory bound is refused before it runs.
func TestGraphsKeepToTheMemoryBound(t *testing.T) {
	for _, m := range []check.Method{check.FF, check.Float, check.Emu} {
		opts := check.Options{Method: m, Trials: 1, Seed: 1, MaxBytes: 1024}
		_, err := check.Graphs(context.Background(), &bytes.Buffer{}, named(t, load(t, "a", factored)), named(t, load(t, "b", expanded)), opts)
		if !memlimit.IsOver(err) {
			t.Errorf("%s with 1 KiB: %v, want a memory limit error", m, err)
		}
	}
	// The emulated check counts the values it holds beside the
	// interpreter's: a bound the interpreter alone fits is not enough.
	a, b := named(t, load(t, "a", factored)), named(t, load(t, "b", expanded))
	opts := check.Options{Method: check.Emu, Seed: 1, MaxBytes: interp.Memory(a.Graph)}
	if _, err := check.Graphs(context.Background(), &bytes.Buffer{}, a, b, opts); !memlimit.IsOver(err) || !strings.Contains(err.Error(), "CPU emulator") {
		t.Errorf("emu with the interpreter's memory alone: %v, want a memory limit error", err)
	}
}

// Dynamic checks each graph of a document at its own m, with one pool of
// the program's fingerprints: a wrong graph among right ones is found. With
// m inside the heads ([4, m, 64]) fewer rows are not the first of the
// program's memory, and each m gets fingerprints of its own.
func TestDynamic(t *testing.T) {
	for _, tc := range []struct {
		name, dims, flag string
	}{
		{"rows outermost", "(%d, 64)", "0:0=1..16"},
		{"rows inside the heads", "(4, %d, 64)", "0:1=1..16"},
	} {
		a := load(t, "a", "X = g.new_input(dims="+fmt.Sprintf(tc.dims, 16)+", dtype=mi.float16)\ng.mark_output(g.exp(X))\n")
		d, err := a.MarkDynamic([]string{tc.flag}, "")
		if err != nil {
			t.Fatal(err)
		}
		var graphs []*kernel.Graph
		for _, g := range []struct {
			rows int
			op   string
		}{{16, "exp"}, {4, "exp"}, {2, "sqrt"}} {
			b := load(t, "b", fmt.Sprintf("X = g.new_input(dims="+tc.dims+", dtype=mi.float16)\ng.mark_output(g.%s(X))\n", g.rows, g.op))
			graphs = append(graphs, b.File.Graphs[0].Graph)
		}
		b := &driver.Input{Path: "b.ugraph.json", Name: "b", File: kernel.NewFile("b", graphs...)}
		for _, method := range []check.Method{check.FF, check.Float} {
			var w bytes.Buffer
			same, err := check.Dynamic(&w, d, a.Path, b, check.Options{Method: method, Trials: 2, Seed: 1, MaxBytes: 1 << 30})
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, method, err)
			}
			said := w.String()
			if same || !strings.Contains(said, "graph 0, m = 16: equivalent") || !strings.Contains(said, "graph 1, m = 4: equivalent") ||
				strings.Contains(said, "graph 2, m = 2: equivalent") || !strings.HasSuffix(said, "1 of 3 graph(s) differ from the program at their m\n") {
				t.Errorf("%s, %s: same = %v:\n%s", tc.name, method, same, said)
			}
		}
	}
	a := load(t, "a", "X = g.new_input(dims=(16, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\n")
	d, err := a.MarkDynamic([]string{"0:0=1..16"}, "")
	if err != nil {
		t.Fatal(err)
	}
	b := &driver.Input{Path: "b.ugraph.json", Name: "b", File: kernel.NewFile("b", a.File.Graphs[0].Graph)}
	// The emulator runs one graph; a dynamic program's entry point is
	// --engine's.
	if _, err := check.Dynamic(&bytes.Buffer{}, d, a.Path, b, check.Options{Method: check.Emu, Seed: 1}); err == nil || !strings.Contains(err.Error(), "--engine") {
		t.Errorf("--method emu with --dynamic: %v, want a refusal naming --engine", err)
	}
}

// repeated is a program whose output is X summed with itself 1 + P·Q
// times, P·Q the product of the verifier's moduli, by doubling and adding:
// X in the finite fields, 2.3e18·X in the reals.
const repeated = `def times(x, k):
    acc = None
    for i in range(64):
        if (k >> i) & 1:
            acc = x if acc == None else g.add(acc, x)
        x = g.add(x, x)
    return acc
g.mark_output(times(X, 1 + 2147481143 * 1073740571))
`

// What the finite fields cannot see, a term repeated a multiple of their
// moduli times, float64 does: the check gives no verdict rather than
// "equivalent", statically and for every graph of a dynamic document.
func TestMagnitudesTheFieldsCannotSee(t *testing.T) {
	x := "X = g.new_input(dims=(%d, 64), dtype=mi.float16)\n"
	a := load(t, "a", fmt.Sprintf(x, 16)+"g.mark_output(g.mul_scalar(X, 1.0))\n")
	b := load(t, "b", fmt.Sprintf(x, 16)+repeated)
	// The premise: the fields alone find them equal.
	if r, err := ffverify.Equivalent(named(t, a).Graph, named(t, b).Graph, ffverify.Options{Trials: 2, Seed: 1}); err != nil || !r.Equivalent {
		t.Fatalf("the fields alone: %v, %v; want equivalent (else this test shows nothing)", r, err)
	}
	opts := check.Options{Method: check.FF, Trials: 2, Seed: 1, MaxBytes: 1 << 30}
	var w bytes.Buffer
	same, err := check.Graphs(context.Background(), &w, named(t, a), named(t, b), opts)
	if same || err == nil || !strings.HasPrefix(err.Error(), "no verdict (seed 1): the finite fields find a.py and b.py equal, but cannot decide them alone") ||
		!strings.Contains(err.Error(), "in float64 output 0 differs") || w.Len() > 0 {
		t.Errorf("static: same = %v, err %v, said %q; want no verdict and nothing said", same, err, w.String())
	}

	d, err := a.MarkDynamic([]string{"0:0=1..16"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var graphs []*kernel.Graph
	for _, rows := range []int{16, 4} {
		graphs = append(graphs, load(t, "b", fmt.Sprintf(x, rows)+"g.mark_output(g.mul_scalar(X, 1.0))\n").File.Graphs[0].Graph)
	}
	graphs = append(graphs, load(t, "b", fmt.Sprintf(x, 2)+repeated).File.Graphs[0].Graph)
	doc := &driver.Input{Path: "b.ugraph.json", Name: "b", File: kernel.NewFile("b", graphs...)}
	w.Reset()
	same, err = check.Dynamic(&w, d, a.Path, doc, opts)
	if same || err == nil || err.Error() != "no verdict on 1 of 3 graph(s) of b.ugraph.json (said above)" ||
		!strings.Contains(w.String(), "graph 1, m = 4: equivalent") || !strings.Contains(w.String(), "graph 2, m = 2: no verdict (seed 1)") {
		t.Errorf("dynamic: same = %v, err %v, said %q; want graphs 0 and 1 equivalent, then no verdict", same, err, w.String())
	}

	// A graph without a verdict does not hide a later one that differs.
	graphs = []*kernel.Graph{
		load(t, "b", fmt.Sprintf(x, 16)+repeated).File.Graphs[0].Graph,
		load(t, "b", fmt.Sprintf(x, 4)+"g.mark_output(g.mul_scalar(X, 2.0))\n").File.Graphs[0].Graph,
	}
	doc = &driver.Input{Path: "b.ugraph.json", Name: "b", File: kernel.NewFile("b", graphs...)}
	w.Reset()
	same, err = check.Dynamic(&w, d, a.Path, doc, opts)
	if same || err != nil || !strings.Contains(w.String(), "graph 0, m = 16: no verdict") || !strings.Contains(w.String(), "graph 1, m = 4: not equivalent") {
		t.Errorf("dynamic, a difference after no verdict: same = %v, err %v, said %q; want graph 1 reported as differing", same, err, w.String())
	}
}

// Pairs the finite fields find equal that differ in the reals (found by
// review): beyond what the fields decide alone, so evaluated in float64,
// which tells them apart (float64's infinities and a difference of 1%
// included). Each is no verdict, never equivalent.
func TestNoEqualVerdictTheRealsContradict(t *testing.T) {
	const (
		xy = "X = g.new_input(dims=(16, 64), dtype=mi.float16)\nY = g.new_input(dims=(16, 64), dtype=mi.float16)\n"
		// times sums x k times by doubling; bits is how many doublings.
		helpers = `def times(x, k, bits):
    acc = None
    for i in range(bits):
        if (k >> i) & 1:
            acc = x if acc == None else g.add(acc, x)
        x = g.add(x, x)
    return acc
def power(x, k):
    acc = None
    for i in range(64):
        if (k >> i) & 1:
            acc = x if acc == None else g.mul(acc, x)
        x = g.square(x)
    return acc
`
		q, pq = "1073740571", "2147481143 * 1073740571"
		x     = xy + "g.mark_output(g.mul_scalar(X, 1.0))\n"
	)
	for _, c := range []struct{ name, a, b string }{
		{"degree: X to the 1+Q(Q-1)", x, xy + helpers + "g.mark_output(power(X, 1 + 1073740571 * 1073740570))\n"},
		{"exp: Q·exp(X) against Q·exp(X + 1.07·Y)", xy + helpers + "g.mark_output(times(g.exp(X), " + q + ", 31))\n",
			xy + helpers + "g.mark_output(times(g.exp(g.add(X, times(g.mul_scalar(Y, 1e-9), " + q + ", 31))), " + q + ", 31))\n"},
		{"a divisor 0 modulo P: X + (Q·X)/(P·X)", x, xy + helpers + "g.mark_output(g.add(X, g.div(times(X, " + q + ", 31), times(X, 2147481143, 31))))\n"},
		{"two values of one graph: X + silu(u) - silu(v)", x, xy + helpers +
			"u = g.div(times(X, 2147483648, 57), times(Y, 29, 57))\nv = g.div(times(X, 79512013438994319, 57), times(Y, 2147483648, 57))\n" +
			"g.mark_output(g.add(X, g.sub(g.silu(u), g.silu(v))))\n"},
		{"overflow: (1+P·Q)·1e300·X", xy + "g.mark_output(g.mul_scalar(X, 1e300))\n",
			xy + helpers + "g.mark_output(times(g.mul_scalar(X, 1e300), 1 + " + pq + ", 62))\n"},
		{"small: X·(1 + 0.0092·Y)", x, xy + helpers + "g.mark_output(g.add(X, times(g.mul_scalar(g.mul(X, Y), 4e-21), " + pq + ", 62)))\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := named(t, load(t, "a", c.a)), named(t, load(t, "b", c.b))
			if r, err := ffverify.Equivalent(a.Graph, b.Graph, ffverify.Options{Trials: 2, Seed: 1}); err != nil || !r.Equivalent {
				t.Fatalf("the fields alone: %v, %v; want equivalent (else this test shows nothing)", r, err)
			}
			var w bytes.Buffer
			same, err := check.Graphs(context.Background(), &w, a, b, check.Options{Method: check.FF, Trials: 2, Seed: 1, MaxBytes: 1 << 30})
			if same || err == nil || !strings.HasPrefix(err.Error(), "no verdict (seed 1): the finite fields find a.py and b.py equal") {
				t.Errorf("same = %v, err %v, said %q; want no verdict", same, err, w.String())
			}
		})
	}
}

// Where both graphs' integers are bounded below the fields' moduli
// (ffverify.Coefficients), the fields' verdict stands alone: nothing is
// evaluated in float64, so a memory bound that a float64 evaluation would
// pass is enough. (Where they are not, TestMagnitudesTheFieldsCannotSee
// shows the evaluation.)
func TestMagnitudesOnlyWhereTheFieldsCannotSee(t *testing.T) {
	a, b := named(t, load(t, "a", gatedOps)), named(t, load(t, "b", gatedKernel))
	limit := interp.Memory(a.Graph) / 2
	var w bytes.Buffer
	if same, err := check.Graphs(context.Background(), &w, a, b, check.Options{Method: check.FF, Trials: 2, Seed: 1, MaxBytes: limit}); err != nil || !same {
		t.Errorf("gated MLP within %d bytes: same = %v, %v; want equivalent, with no float64 evaluation", limit, same, err)
	}
	// Heads' softmaxes summed over the heads, each with its own
	// denominator: past the bound, so checked in float64 too, and said so.
	heads := load(t, "a", `Q = g.new_input(dims=(16, 1, 64), dtype=mi.float16)
K = g.new_input(dims=(16, 64, 64), dtype=mi.float16)
V = g.new_input(dims=(16, 64, 64), dtype=mi.float16)
E = g.exp(g.matmul(Q, K))
g.mark_output(g.reduction(g.matmul(g.div(E, g.reduction(E, 2)), V), 0))
`)
	a = named(t, heads)
	if ffverify.CoefficientsOf(a.Graph).Exact(ffverify.CoefficientsOf(a.Graph)) {
		t.Fatal("heads' softmaxes summed: Exact (else this test shows nothing)")
	}
	w.Reset()
	if same, err := check.Graphs(context.Background(), &w, a, a, check.Options{Method: check.FF, Trials: 2, Seed: 1, MaxBytes: 1 << 30}); err != nil || !same ||
		w.String() != "equivalent (finite fields, seed 1, 2 trial(s), and float64 within 1e-06): 1 output(s) agree\n" {
		t.Errorf("heads' softmaxes summed, against themselves: same = %v, %v, said %q", same, err, w.String())
	}
}

func TestMatchOutputs(t *testing.T) {
	row := func(vs ...float64) *interp.Tensor {
		return &interp.Tensor{Shape: ugraph.MustShape(len(vs)), Data: vs}
	}
	inf := math.Inf(1)
	for _, tt := range []struct {
		name      string
		want, got []*interp.Tensor
		match     []int     // nil: no pairing
		worst     []float64 // per want output: its worst relative error against its pair, or the first of its shape
	}{
		{"in order", []*interp.Tensor{row(1, 2), row(3)}, []*interp.Tensor{row(1, 2), row(3)}, []int{0, 1}, []float64{0, 0}},
		{"swapped", []*interp.Tensor{row(1, 2), row(3, 4)}, []*interp.Tensor{row(3, 4), row(1, 2)}, []int{1, 0}, []float64{0, 0}},
		{"each once", []*interp.Tensor{row(1, 2), row(1, 2)}, []*interp.Tensor{row(1, 2), row(1, 2)}, []int{0, 1}, []float64{0, 0}},
		{"values differ", []*interp.Tensor{row(1, 2)}, []*interp.Tensor{row(1, 3)}, nil, []float64{1.0 / 3}}, // relative to the larger magnitude
		{"no such shape", []*interp.Tensor{row(1, 2)}, []*interp.Tensor{row(1, 2, 3)}, nil, []float64{inf}},
	} {
		match, diffs := check.MatchOutputs(tt.want, tt.got)
		if !slices.Equal(match, tt.match) || len(diffs) != len(tt.want) {
			t.Errorf("%s: %v, %d diffs; want %v", tt.name, match, len(diffs), tt.match)
			continue
		}
		for i, d := range diffs {
			if d.Output != i || math.Abs(d.MaxRelErr-tt.worst[i]) > 1e-9 && !(math.IsInf(d.MaxRelErr, 1) && math.IsInf(tt.worst[i], 1)) {
				t.Errorf("%s: output %d: %+v, want worst %v", tt.name, i, d, tt.worst[i])
			}
		}
	}
}

func TestEval(t *testing.T) {
	g := named(t, load(t, "a", "X = g.new_input(dims=(8, 64), dtype=mi.float16)\ng.mark_output(g.mul(X, X))\n")).Graph
	sums, err := check.Eval(g, 1, 1<<30)
	if err != nil || len(sums) != 1 {
		t.Fatalf("%d summaries, %v", len(sums), err)
	}
	// Squares of draws from [-1, 1): a sum of 512 of them near 512/3.
	s := sums[0]
	if !slices.Equal(s.Shape, []int{8, 64}) || s.Sum < 120 || s.Sum > 220 || s.MaxAbs > 1 || s.L2 <= 0 {
		t.Errorf("%+v", sums)
	}
	if want := "[8, 64]  sum "; !strings.HasPrefix(s.String(), want) {
		t.Errorf("String() = %q, want it to begin %q", s.String(), want)
	}
	if _, err := check.Eval(g, 1, 1024); !memlimit.IsOver(err) {
		t.Errorf("with 1 KiB: %v", err)
	}
}

// TestSummaryJSON: a program that divides by zero has summaries JSON
// cannot write as numbers; they go as the strings the text form prints,
// and come back as the same values.
func TestSummaryJSON(t *testing.T) {
	g := named(t, load(t, "a", "X = g.new_input(dims=(4, 8), dtype=mi.float16)\ng.mark_output(g.div(X, g.mul_scalar(X, 0.0)))\ng.mark_output(X)\n")).Graph
	sums, err := check.Eval(g, 1, 1<<30)
	if err != nil || len(sums) != 2 {
		t.Fatalf("%d summaries, %v", len(sums), err)
	}
	sums = append(sums, check.Summary{Shape: []int{1}, Sum: check.Value(math.Inf(-1)), L2: check.Value(math.NaN()), MaxAbs: 0.5})
	b, err := json.Marshal(sums)
	if err != nil {
		t.Fatalf("marshal %v: %v", sums, err)
	}
	for _, want := range []string{`"l2":"NaN"`, `"sum":"-Inf"`, `"max_abs":0.5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back []check.Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	same := func(a, b check.Value) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) }
	for i := range sums {
		if !same(back[i].Sum, sums[i].Sum) || !same(back[i].L2, sums[i].L2) || !same(back[i].MaxAbs, sums[i].MaxAbs) {
			t.Errorf("summary %d: %+v came back as %+v", i, sums[i], back[i])
		}
	}
	if !math.IsInf(float64(sums[0].MaxAbs), 1) || math.IsInf(float64(sums[1].MaxAbs), 0) {
		t.Errorf("x/0 and x: %+v", sums[:2])
	}
	if err := json.Unmarshal([]byte(`{"sum": "lots"}`), &check.Summary{}); err == nil || !strings.Contains(err.Error(), `"lots"`) {
		t.Errorf("a string that is no value: %v", err)
	}
}

// A check that takes long says so first (Options.Note), from the
// programs' matmuls; a short one says nothing.
func TestLongCheckSaysHowLong(t *testing.T) {
	big := load(t, "big", "X = g.new_input(dims=(8192, 8192), dtype=mi.float16)\nW = g.new_input(dims=(8192, 8192), dtype=mi.float16)\ng.mark_output(g.matmul(X, W))\n")
	var notes []string
	opts := check.Options{Method: check.FF, Trials: 2, MaxBytes: 1 << 20, Note: func(s string) { notes = append(notes, s) }}
	// The memory bound refuses it right after the note: nothing is evaluated.
	_, err := check.Graphs(context.Background(), &bytes.Buffer{}, named(t, big), named(t, big), opts)
	if !memlimit.IsOver(err) {
		t.Errorf("err = %v, want the memory bound's", err)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "the check evaluates both on 2 draws, 5.5e+11 and 5.5e+11 multiply-adds a draw: about ") {
		t.Errorf("notes %q", notes)
	}
	notes = nil
	small := load(t, "small", factored)
	if _, err := check.Graphs(context.Background(), &bytes.Buffer{}, named(t, small), named(t, small), opts); err != nil || len(notes) != 0 {
		t.Errorf("a short check: %v, notes %q", err, notes)
	}
}

// Engine runs what superopt --dynamic writes: each bucket's first graph
// that lowers to CUDA. Here the first (an RMSNorm over all of 1 × m × 16,
// which the runtime cannot cut at row m) does not, and the second, the
// program, runs.
func TestEngineRunsTheGraphSuperoptWrites(t *testing.T) {
	a := load(t, "a", "X = g.new_input(dims=(1, 8, 16), dtype=mi.float16)\ng.mark_output(g.exp(X))\n")
	d, err := a.MarkDynamic([]string{"0:1=1..8"}, "8")
	if err != nil {
		t.Fatal(err)
	}
	var graphs []*driver.Candidate
	for _, src := range []string{
		"g.mark_output(g.rms_norm(X, normalized_shape=(8, 16)))\n",
		"g.mark_output(g.exp(X))\n",
	} {
		b := load(t, "b", "X = g.new_input(dims=(1, 8, 16), dtype=mi.float16)\n"+src)
		graphs = append(graphs, &driver.Candidate{Graph: b.File.Graphs[0].Graph})
	}
	res := &driver.DynamicResult{Program: d.Program, Lo: 1, Hi: 8,
		Buckets: []*driver.Bucket{{Size: 8, Lo: 1, Hi: 8, Result: &driver.Result{Candidates: graphs}}}}
	f, err := res.File("b", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &driver.Input{Path: "b.ugraph.json", Name: "b", File: f}
	var w bytes.Buffer
	if err := check.Engine(context.Background(), &w, d, "a", b, []int{1, 5, 8, 9}, "", 0); err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	for _, want := range []string{"engine m = 5 (bucket 8, its graph 1): error ", "engine m = 9: outside 1..8: refused"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("no %q in\n%s", want, w.String())
		}
	}
}

// Engine runs the code superopt wrote for the arch it searched (meta.arch),
// not code for the default arch (found by review: a document written for
// sm_80 was checked, and kept for run-gpu.sh, as sm_90 code).
func TestEngineRunsTheArchSuperoptSearched(t *testing.T) {
	a := load(t, "a", "X = g.new_input(dims=(8, 16), dtype=mi.float16)\ng.mark_output(g.exp(X))\n")
	d, err := a.MarkDynamic([]string{"0:0=1..8"}, "8")
	if err != nil {
		t.Fatal(err)
	}
	b := load(t, "b", "X = g.new_input(dims=(8, 16), dtype=mi.float16)\ng.mark_output(g.exp(X))\n")
	res := &driver.DynamicResult{Program: d.Program, Lo: 1, Hi: 8,
		Buckets: []*driver.Bucket{{Size: 8, Lo: 1, Hi: 8, Result: &driver.Result{Candidates: []*driver.Candidate{{Graph: b.File.Graphs[0].Graph}}}}}}
	f, err := res.File("b", nil)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	meta["arch"] = "sm_80"
	if f.Meta, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(t.TempDir(), "engine")
	in := &driver.Input{Path: "b.ugraph.json", Name: "b", File: f}
	var w bytes.Buffer
	if err := check.Engine(context.Background(), &w, d, "a", in, []int{1, 8}, keep, 0); err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	cu, err := os.ReadFile(filepath.Join(keep, "a.cu"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(cu), "\n"); !strings.Contains(first, " for sm_80") {
		t.Errorf("the engine ran %q, want the code for sm_80", first)
	}
}
