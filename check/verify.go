package check

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/target"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mirage-go/mirage/enginerun"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/internal/tempdir"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Method is how two graphs are compared.
type Method string

const (
	// FF is exact arithmetic over two finite fields on Options.Trials
	// independent random draws (ffverify).
	FF Method = "ff"
	// Float is the float64 reference interpreter, within
	// interp.DefaultTolerance.
	Float Method = "float"
	// Emu is the second graph's emitted CUDA, built for the CPU emulator
	// and run on one draw, against the first graph in the float64
	// interpreter, within enginerun.ToleranceOf each output's dtype
	// (enginerun.Static).
	Emu Method = "emu"
)

// DefaultTrials is FF's number of independent draws unless told: a wrong
// program passes them all with probability below 1e-7.
const DefaultTrials = ffverify.DefaultTrials

// Options are a comparison's method, its random draws and its memory
// bound.
type Options struct {
	Method   Method
	Trials   int   // FF: independent draws
	Seed     int64 // of the random inputs
	MaxBytes int64 // the memory an evaluation may take
	// Note, if not nil, is told before a check that takes long (FF at a
	// prefill's shapes: minutes), how long: the check prints nothing
	// until its verdict.
	Note func(string)
}

// longCheck is the predicted time from which a check says how long it
// takes (Options.Note).
const longCheck = 10 * time.Second

func (o Options) ff() ffverify.Options {
	return ffverify.Options{Trials: o.Trials, Seed: uint64(o.Seed), MaxBytes: o.MaxBytes}
}

// normalized checks o and fills in its defaults: the memory bound where
// o has none (memlimit.Default, for every method).
func (o Options) normalized() (Options, error) {
	switch {
	case o.Method != FF && o.Method != Float && o.Method != Emu:
		return o, fmt.Errorf("unknown --method %q (want ff, float or emu)", o.Method)
	case o.Method == FF && o.Trials < 1:
		return o, fmt.Errorf("--trials %d: want at least 1", o.Trials)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = memlimit.Default
	}
	return o, nil
}

// Named is a graph and the file it came from, which errors name.
type Named struct {
	Path  string
	Graph *kernel.Graph
	// Arch is the GPU the graph's code is emitted for where the check
	// runs it (--method emu): the arch a superopt document was written
	// for, so that the code checked is the code superopt wrote. The zero
	// Arch is target.Default.
	Arch target.Arch
}

// DocumentArch is the arch a superopt document was written for
// (driver.Input.Arch), or the zero Arch (target.Default) for a program or
// a document that names none.
func DocumentArch(in *driver.Input) target.Arch {
	arch, _ := in.Arch()
	return arch
}

// Graphs checks that a and b compute the same function: the same inputs,
// by position, and the same outputs in the same order, as B must to take
// A's place. Outputs that agree only in another order are a difference,
// which the verdict names (otherOrder). It
// writes the verdict to w and returns whether they agree; an error means
// no verdict. ctx ends an emulated run.
func Graphs(ctx context.Context, w io.Writer, a, b Named, opts Options) (bool, error) {
	if err := sameInputs(a.Graph, b.Graph); err != nil {
		return false, fmt.Errorf("%s and %s: %v", a.Path, b.Path, err)
	}
	opts, err := opts.normalized()
	if err != nil {
		return false, err
	}
	switch opts.Method {
	case Float:
		return floats(w, a, b, opts.Seed, opts.MaxBytes)
	case Emu:
		return emulated(ctx, w, a, b, opts.Seed, opts.MaxBytes)
	}
	ff := opts.ff()
	if opts.Note != nil {
		if d, draws, cores := ffverify.EvaluationTime(ff, a.Graph, b.Graph); d >= longCheck {
			opts.Note(fmt.Sprintf("the check evaluates both on %d draws, %.2g and %.2g multiply-adds a draw: %s on %s",
				draws, ffverify.MultiplyAdds(a.Graph), ffverify.MultiplyAdds(b.Graph), ffverify.About(d), ffverify.Cores(cores)))
		}
	}
	return fields(w, a, b, opts)
}

// emulated runs b's emitted code in the CPU emulator against a in the
// float64 interpreter (enginerun.Static), in a directory it removes.
func emulated(ctx context.Context, w io.Writer, a, b Named, seed, limit int64) (bool, error) {
	dir, remove, err := tempdir.Make("mirage-emu-*")
	if err != nil {
		return false, err
	}
	defer remove()
	outs, err := enginerun.Static(ctx, dir, a.Graph, b.Graph, b.Arch, uint64(seed), limit)
	if err != nil {
		return false, fmt.Errorf("%s against %s in the CPU emulator: %w", b.Path, a.Path, err)
	}
	worst, bad, loosest := 0.0, -1, 0.0
	for k, o := range outs {
		worst, loosest = max(worst, o.Error), max(loosest, o.Tolerance)
		if !o.OK && bad < 0 {
			bad = k
		}
	}
	if bad >= 0 {
		o := outs[bad]
		fmt.Fprintf(w, "not equivalent (CPU emulator, seed %d): output %d %v: error %.3g of its largest |value| at %v (want %.6g, got %.6g), %d element(s) not finite; tolerance %g\n",
			seed, bad, o.Shape, o.Error, o.Where(), o.Want, o.Got, o.NonFinite, o.Tolerance)
		return false, nil
	}
	for k, o := range outs {
		if o.Compared == 0 {
			return false, inconclusive("CPU emulator", seed, k, o.Shape, a.Path)
		}
	}
	fmt.Fprintf(w, "equivalent (CPU emulator, seed %d): %d output(s) agree, worst error %.3g of the largest |value| (tolerance %g)\n",
		seed, len(outs), worst, loosest)
	return true, nil
}

// inconclusive is the error of a draw on which output k of the program
// (at path) is NaN or infinite everywhere (the square root of a negative
// input, say): that the other side matches it says nothing of what either
// computes, so there is no verdict.
func inconclusive(method string, seed int64, k int, shape ugraph.Shape, path string) error {
	return fmt.Errorf("no verdict (%s, seed %d): output %d %v of %s is NaN or infinite at every position on this draw, so the comparison checks nothing there; try another --seed",
		method, seed, k, shape, path)
}

// sameInputs checks that a and b take inputs of the same shapes and
// dtypes, in the same order.
func sameInputs(a, b *kernel.Graph) error {
	ia, ib := a.Inputs(), b.Inputs()
	if len(ia) != len(ib) {
		return fmt.Errorf("%d inputs vs %d", len(ia), len(ib))
	}
	for i := range ia {
		ta, tb := a.Tensors[ia[i]], b.Tensors[ib[i]]
		if ta != tb {
			return fmt.Errorf("input %d is %v %v in the first but %v %v in the second", i, ta.Shape, ta.DType, tb.Shape, tb.DType)
		}
	}
	return nil
}

// fields compares a and b over finite fields, one draw at a time, and
// where the fields cannot decide alone, once in float64 (magnitudes).
func fields(w io.Writer, a, b Named, opts Options) (bool, error) {
	ff := opts.ff()
	r, err := ffverify.Equivalent(a.Graph, b.Graph, ff)
	if err != nil {
		return false, fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	return verdict(w, r, ff, a, b, opts)
}

// verdict reports the finite fields' verdict r on b against a, checking
// an equal one in float64 where the fields cannot decide alone.
func verdict(w io.Writer, r ffverify.Result, ff ffverify.Options, a, b Named, opts Options) (bool, error) {
	if !r.Equivalent && r.Output < 0 { // no draw: the outputs themselves differ
		fmt.Fprintf(w, "not equivalent: %s has %s; %s has %s\n", a.Path, outputsText(a.Graph), b.Path, outputsText(b.Graph))
		return false, nil
	}
	also := ""
	if r.Equivalent && r.InOrder() {
		checked, err := magnitudes(a, b, opts.Seed, opts.MaxBytes)
		if err != nil {
			return false, err
		}
		if checked {
			also = fmt.Sprintf(", and float64 within %g", interp.DefaultTolerance)
		}
	}
	return report(w, r, ff, a.Path, b.Path, also), nil
}

// errNoVerdict marks a check whose methods disagree: the fields find the
// graphs equal, float64 does not.
var errNoVerdict = errors.New("no verdict")

// magnitudes checks what the finite fields cannot see, and reports
// whether it had to. Their residues keep integers modulo P·Q, and exp's
// arguments modulo Q: a graph whose sums repeat a term 1 + P·Q times (a
// chain of ~90 adds doubling it), that divides by a multiple of P, or
// raises to a power past Q, is the program's twin there. Where the
// graphs' integers and degrees are bounded below all that
// (ffverify.Coefficients: every example and bench workload but a decoder
// layer that sums its heads' softmaxes), the fields see every difference
// and nothing is evaluated. Elsewhere both are evaluated once in float64,
// and outputs further apart than the float method's tolerance (non-finite
// on one side only included) are no verdict, an error: the fields say
// equal, and float64, which rounds, cannot prove otherwise. What this
// still passes is a difference in the reals smaller than that tolerance
// hidden behind a multiple of P·Q, which only a graph built for it has.
func magnitudes(a, b Named, seed, limit int64) (bool, error) {
	if ffverify.CoefficientsOf(a.Graph).Exact(ffverify.CoefficientsOf(b.Graph)) {
		return false, nil
	}
	undecided := fmt.Sprintf("the finite fields find %s and %s equal, but cannot decide them alone (their integers could pass the fields' moduli)", a.Path, b.Path)
	wa, wb, err := evaluateBoth(a, b, seed, limit)
	if err != nil {
		return true, fmt.Errorf("%w: %s, and checking them in float64 failed: %w", errNoVerdict, undecided, err)
	}
	for k := range wa {
		d, err := interp.Compare(wa[k], wb[k])
		if err != nil {
			return true, fmt.Errorf("%s and %s: %v", a.Path, b.Path, err)
		}
		if d.MaxRelErr > interp.DefaultTolerance {
			return true, fmt.Errorf("%w (seed %d): %s, and in float64 output %d differs at %v (want %.9g, got %.9g, relative error %.3g, tolerance %g); --method float shows the outputs on other draws",
				errNoVerdict, seed, undecided, k, d.Index, d.Want, d.Got, d.MaxRelErr, interp.DefaultTolerance)
		}
	}
	return true, nil
}

// report writes the finite-field verdict r on b against a and returns it.
// The seed is printed as --seed takes it (an int64; the field draws read
// its bits).
func report(w io.Writer, r ffverify.Result, opts ffverify.Options, a, b, also string) bool {
	if !r.Equivalent {
		fmt.Fprintf(w, "%s (finite fields, seed %d)\n", r, int64(opts.Seed))
		return false
	}
	if !r.InOrder() {
		fmt.Fprintf(w, "not equivalent in order (finite fields, seed %d): %s\n", int64(opts.Seed), otherOrder(r.Mapping, a, b))
		return false
	}
	fmt.Fprintf(w, "equivalent (finite fields, seed %d, %d trial(s)%s): %d output(s) agree\n", int64(opts.Seed), opts.Trials, also, len(r.Mapping))
	return true
}

// evaluateBoth runs a and b in float64 on one draw of inputs, within the
// memory limit.
func evaluateBoth(a, b Named, seed, limit int64) (wa, wb []*interp.Tensor, err error) {
	ga, gb := a.Graph, b.Graph
	// Each draws the inputs as it reads them (the same values: the graphs
	// take the same inputs) and drops them after; the second holds its
	// own values and the first's outputs.
	need := max(interp.DrawnMemory(ga), ugraph.AddSize(interp.DrawnMemory(gb), interp.OutputMemory(ga)))
	if err := memlimit.Check("evaluating both in float64", need, limit); err != nil {
		if err := interp.CheckDrawnMemory(ga, limit); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", a.Path, err)
		}
		if err := interp.CheckDrawnMemory(gb, limit); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", b.Path, err)
		}
		return nil, nil, fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	if wa, err = interp.RunDrawn(ga, interp.NewDraws(ga, seed, -1, 1), limit); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", a.Path, err)
	}
	if wb, err = interp.RunDrawn(gb, interp.NewDraws(gb, seed, -1, 1), limit); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", b.Path, err)
	}
	return wa, wb, nil
}

// floats compares a and b in float64 on one draw.
func floats(w io.Writer, a, b Named, seed, limit int64) (bool, error) {
	wa, wb, err := evaluateBoth(a, b, seed, limit)
	if err != nil {
		return false, err
	}
	if len(wa) != len(wb) {
		fmt.Fprintf(w, "not equivalent: %s has %d outputs, %s has %d\n", a.Path, len(wa), b.Path, len(wb))
		return false, nil
	}
	diffs, inOrder := compareInOrder(wa, wb)
	if !inOrder {
		var match []int
		if match, diffs = matchOutputs(wa, wb); match != nil {
			of := make([]int, len(match)) // b's output -> a's
			for i, j := range match {
				of[j] = i
			}
			fmt.Fprintf(w, "not equivalent in order (float64, seed %d): %s\n", seed, otherOrder(of, a.Path, b.Path))
			return false, nil
		}
		worst := diffs[0]
		for _, d := range diffs {
			if d.MaxRelErr > worst.MaxRelErr {
				worst = d
			}
		}
		fmt.Fprintf(w, "not equivalent (float64, seed %d): output %d: worst relative error %.3g at %v (want %.9g, got %.9g), tolerance %g\n",
			seed, worst.Output, worst.MaxRelErr, worst.Index, worst.Want, worst.Got, interp.DefaultTolerance)
		return false, nil
	}
	worst := 0.0
	for i, d := range diffs {
		if d.Compared == 0 {
			return false, inconclusive("float64", seed, i, wa[i].Shape, a.Path)
		}
		worst = max(worst, d.MaxRelErr)
	}
	fmt.Fprintf(w, "equivalent (float64, seed %d): %d output(s) agree, worst relative error %.3g (tolerance %g)\n",
		seed, len(wa), worst, interp.DefaultTolerance)
	return true, nil
}

// compareInOrder compares each output of got with want's in its place: the
// comparisons, and whether every one agrees within tolerance.
func compareInOrder(want, got []*interp.Tensor) ([]interp.Diff, bool) {
	diffs := make([]interp.Diff, len(want))
	for i := range want {
		d, err := interp.Compare(want[i], got[i])
		if err != nil || d.MaxRelErr > interp.DefaultTolerance {
			return nil, false
		}
		d.Output = i
		diffs[i] = d
	}
	return diffs, true
}

// otherOrder says that b computes a's outputs in another order: of gives,
// for each output of b, the output of a it computes.
func otherOrder(of []int, a, b string) string {
	var pairs []string
	for j, i := range of {
		if i != j {
			pairs = append(pairs, fmt.Sprintf("its output %d is %s's output %d", j, a, i))
		}
	}
	return fmt.Sprintf("%s computes %s's outputs in another order (%s); mark its outputs in %s's order to use it in its place",
		b, a, strings.Join(pairs, ", "), a)
}

// matchOutputs pairs each output of want with a distinct output of got of
// the same shape that agrees within tolerance, trying outputs in order. It
// returns the pairing (want index -> got index), or nil and, for each want
// output, its comparison with the first same-shaped got output (Output set
// to the want index) so the caller can say where they differ.
func matchOutputs(want, got []*interp.Tensor) ([]int, []interp.Diff) {
	match := make([]int, len(want))
	used := make([]bool, len(got))
	diffs := make([]interp.Diff, len(want))
	ok := true
	for i, w := range want {
		match[i] = -1
		first := true
		for j, g := range got {
			if used[j] || g.Shape != w.Shape {
				continue
			}
			d, err := interp.Compare(w, g)
			if err != nil {
				continue
			}
			d.Output = i
			if first {
				diffs[i], first = d, false
			}
			if d.MaxRelErr <= interp.DefaultTolerance {
				match[i], used[j], diffs[i] = j, true, d
				break
			}
		}
		if match[i] < 0 {
			ok = false
			if first { // no output of that shape at all
				diffs[i] = interp.Diff{Output: i, MaxRelErr: math.Inf(1)}
			}
		}
	}
	if !ok {
		return nil, diffs
	}
	return match, diffs
}

// StaticAgainstDynamic refuses to check program a against graph candidate
// of a dynamic program's document b (superopt --dynamic wrote it) when
// that graph is written for other rows than a's: the check would only say
// that their inputs differ, not that --dynamic is how b is checked.
func StaticAgainstDynamic(pathA string, ga *kernel.Graph, b *driver.Input, gb *kernel.Graph, candidate int) error {
	rows, _, ok, err := driver.ReadDynamic(b.File)
	if !ok || err != nil {
		return nil // not dynamic; or its error is the document's, said elsewhere
	}
	if sameInputs(ga, gb) == nil {
		return nil // the graph's rows are a's: a check of that bucket
	}
	return fmt.Errorf("%s is a dynamic program's document (m in %d..%d) whose graph %d takes other inputs than %s: verify it with --dynamic, as superopt was given it, to check every bucket's graph at its own m",
		b.Path, rows.Lo, rows.Hi, candidate, pathA)
}

// outputsText says g's outputs: "2 outputs, float16 [4, 18944] and float16 [4, 1]".
func outputsText(g *kernel.Graph) string {
	var each []string
	for _, t := range g.Outputs {
		each = append(each, fmt.Sprintf("%v %v", g.Tensors[t].DType, g.Tensors[t].Shape))
	}
	switch len(each) {
	case 0:
		return "no outputs"
	case 1:
		return "1 output, " + each[0]
	default:
		return fmt.Sprintf("%d outputs, %s and %s", len(each), strings.Join(each[:len(each)-1], ", "), each[len(each)-1])
	}
}
