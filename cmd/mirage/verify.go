package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"slices"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/enginerun"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func newVerifyCmd() *cobra.Command {
	var (
		lf        loadFlags
		maxMemory memoryFlag
		method    string
		seed      int64
		trials    int
		candidate int
		dynamic   dynamicFlags
		engine    []int
		engineDir string
	)
	cmd := &cobra.Command{
		Use:   "verify A B [-- PROGRAM-ARGS]",
		Short: "Check that two programs or μGraphs compute the same function",
		Long: `verify runs the same random inputs through A and B (inputs are matched by
position; their shapes must agree) and compares the outputs (in any order, as
long as shapes agree).

  --method ff     (default) exact arithmetic over two finite fields on
                  --trials independent random draws (ffverify): a wrong
                  program passes one draw with probability below 1e-7
  --method float  the float64 reference interpreter; outputs must agree within
                  a relative tolerance of 1e-6

Draws are compared one by one (a few at a time, in parallel), so memory
does not grow with --trials. A comparison that would take more than
--max-memory (default 4GiB) is refused before anything is allocated.
(With --dynamic, the program's outputs on every draw are kept for the
graphs of one m, where they fit in --max-memory.)

Exit status: 0 when all outputs agree, 1 when they differ (the output, the
worst relative error and where are printed), 2 for unusable input (a
comparison over the memory limit included). B may be a .ugraph.json file of
several candidates: --candidate picks one (default 0, the best).

` + dynamicHelp + `
With --dynamic, A is the program and every graph of B (superopt --dynamic's
NAME.ugraph.json holds each bucket's candidates) is verified against A at
its own number of rows m, read from its inputs: a line per graph, exit 1 if
any differs. --engine 1,3,5,13,33,64 then also emits B's one entry point
(each bucket's first graph), builds examples/engine over it for the CPU
emulator (g++) and runs its decode loop at those m, one after another on
buffers allocated once: each step's outputs must match A's interpreter on
the same rows (fp16 tolerance) and leave the rows past m untouched, and an
m outside the range must be refused. --engine-dir DIR keeps what it ran in
DIR (the sources, inputs.bin, reference.bin) with run-gpu.sh, which builds
the same decode loop with nvcc and runs it on a GPU (bench/gpu).`,
		Args: lf.files(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if method == "ff" && trials < 1 {
				return fmt.Errorf("--trials %d: want at least 1", trials)
			}
			a, err := lf.load(cmd, args[0])
			if err != nil {
				return err
			}
			b, err := lf.load(cmd, args[1])
			if err != nil {
				return err
			}
			if dynamic.on() {
				if cmd.Flags().Changed("candidate") {
					return errors.New("--candidate with --dynamic: every graph of B is verified at its own m")
				}
				err := verifyDynamic(cmd, &dynamic, a, b, method, ffverify.Options{Trials: trials, Seed: uint64(seed), MaxBytes: int64(maxMemory)}, seed, int64(maxMemory))
				if err != nil || len(engine) == 0 {
					return maxMemory.explain(err)
				}
				return runEngine(cmd, &dynamic, a, b, engine, engineDir)
			}
			if len(engine) > 0 {
				return errors.New("--engine runs a dynamic program's entry point: it needs --dynamic")
			}
			ga, err := a.graph(0)
			if err != nil {
				return err
			}
			gb, err := b.graph(candidate)
			if err != nil {
				return err
			}
			if err := sameInputs(ga, gb); err != nil {
				return fmt.Errorf("%s and %s: %v", a.Path, b.Path, err)
			}
			switch method {
			case "ff":
				err = verifyFF(cmd, a, b, ga, gb, ffverify.Options{Trials: trials, Seed: uint64(seed), MaxBytes: int64(maxMemory)})
			case "float":
				err = verifyFloat(cmd, a, b, ga, gb, seed, int64(maxMemory))
			default:
				err = fmt.Errorf("unknown --method %q (want ff or float)", method)
			}
			return maxMemory.explain(err)
		},
	}
	lf.register(cmd)
	maxMemory.register(cmd)
	cmd.Flags().StringVar(&method, "method", "ff", "how to compare: ff (finite fields) or float (float64 interpreter)")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the random inputs")
	cmd.Flags().IntVar(&trials, "trials", ffverify.DefaultTrials, "independent random draws (--method ff)")
	cmd.Flags().IntVar(&candidate, "candidate", 0, "which graph of B when B holds several candidates (numbered from 0)")
	dynamic.register(cmd, false)
	cmd.Flags().IntSliceVar(&engine, "engine", nil, "with --dynamic: run B's entry point in examples/engine's decode loop, in the CPU emulator, at these `m,m,...`")
	cmd.Flags().StringVar(&engineDir, "engine-dir", "", "with --engine: keep the decode loop's sources and data in `DIR` (new or empty), with run-gpu.sh for a GPU")
	pathFlags(cmd, "engine-dir")
	return cmd
}

// sameInputs checks that a and b take inputs of the same shapes and dtypes,
// in the same order.
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

func verifyFF(cmd *cobra.Command, a, b *input, ga, gb *kernel.Graph, opts ffverify.Options) error {
	r, err := ffverify.Equivalent(ga, gb, opts)
	if err != nil {
		return fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	return reportFF(cmd, r, opts)
}

// reportFF prints the finite-field verdict r and returns the exit status
// that says it.
func reportFF(cmd *cobra.Command, r ffverify.Result, opts ffverify.Options) error {
	w := cmd.OutOrStdout()
	if !r.Equivalent {
		fmt.Fprintf(w, "%s (finite fields, seed %d)\n", r, opts.Seed)
		return &exitError{code: exitDiffer}
	}
	fmt.Fprintf(w, "equivalent (finite fields, seed %d, %d trial(s)): %d output(s) agree\n", opts.Seed, opts.Trials, len(r.Mapping))
	return nil
}

func verifyFloat(cmd *cobra.Command, a, b *input, ga, gb *kernel.Graph, seed, limit int64) error {
	// Both evaluations' memory counts: the first's outputs and the shared
	// inputs stay while the second runs.
	if err := memlimit.Check("evaluating both in float64", ugraph.AddSize(interp.Memory(ga), interp.Memory(gb)), limit); err != nil {
		if err := interp.CheckMemory(ga, limit); err != nil {
			return fmt.Errorf("%s: %w", a.Path, err)
		}
		if err := interp.CheckMemory(gb, limit); err != nil {
			return fmt.Errorf("%s: %w", b.Path, err)
		}
		return fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	inputs := interp.RandomInputs(ga, seed)
	wa, err := interp.RunWithin(ga, inputs, limit)
	if err != nil {
		return fmt.Errorf("%s: %v", a.Path, err)
	}
	wb, err := interp.RunWithin(gb, inputs, limit)
	if err != nil {
		return fmt.Errorf("%s: %v", b.Path, err)
	}
	w := cmd.OutOrStdout()
	if len(wa) != len(wb) {
		fmt.Fprintf(w, "not equivalent: %s has %d outputs, %s has %d\n", a.Path, len(wa), b.Path, len(wb))
		return &exitError{code: exitDiffer}
	}
	match, diffs := matchOutputs(wa, wb)
	if match == nil {
		worst := diffs[0]
		for _, d := range diffs {
			if d.MaxRelErr > worst.MaxRelErr {
				worst = d
			}
		}
		fmt.Fprintf(w, "not equivalent (float64, seed %d): output %d: worst relative error %.3g at %v (want %.9g, got %.9g), tolerance %g\n",
			seed, worst.Output, worst.MaxRelErr, worst.Index, worst.Want, worst.Got, interp.DefaultTolerance)
		return &exitError{code: exitDiffer}
	}
	worst := 0.0
	for _, d := range diffs {
		worst = max(worst, d.MaxRelErr)
	}
	fmt.Fprintf(w, "equivalent (float64, seed %d): %d output(s) agree, worst relative error %.3g (tolerance %g)\n",
		seed, len(wa), worst, interp.DefaultTolerance)
	return nil
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
				diffs[i] = interp.Diff{Output: i, MaxRelErr: inf()}
			}
		}
	}
	if !ok {
		return nil, diffs
	}
	return match, diffs
}

// verifyDynamic verifies every graph of b against program a, marked by
// --dynamic, at the m its inputs have.
func verifyDynamic(cmd *cobra.Command, dyn *dynamicFlags, a, b *input, method string, ff ffverify.Options, seed, limit int64) error {
	program, lo, _, _, err := dyn.mark(a)
	if err != nil {
		return err
	}
	ins, _ := program.DynamicDims()
	k := slices.IndexFunc(ins, func(d int) bool { return d >= 0 })
	// Every graph's m and the program at that m, checked before any is
	// verified.
	type atM struct {
		m      int
		ga, gb *kernel.Graph
	}
	var graphs []atM
	for i, e := range b.File.Graphs {
		gb := e.Graph
		if len(gb.Inputs()) != len(ins) {
			return fmt.Errorf("%s: graph %d has %d inputs, the program %d", b.Path, i, len(gb.Inputs()), len(ins))
		}
		s := gb.Tensors[gb.Inputs()[k]].Shape
		if s.Rank() <= ins[k] {
			return fmt.Errorf("%s: graph %d's input %d is %v, with no dim %d for m", b.Path, i, k, s, ins[k])
		}
		m := s.Dim(ins[k])
		if m < lo {
			return fmt.Errorf("%s: graph %d has m = %d rows, below the range's %d", b.Path, i, m, lo)
		}
		ga, err := program.Bind(m)
		if err != nil {
			return fmt.Errorf("%s: %v", a.Path, err)
		}
		if err := sameInputs(ga, gb); err != nil {
			return fmt.Errorf("%s at m = %d and graph %d of %s: %v", a.Path, m, i, b.Path, err)
		}
		graphs = append(graphs, atM{m, ga, gb})
	}
	var at *programAt
	if method == "ff" && len(graphs) > 0 {
		largest := slices.MaxFunc(graphs, func(x, y atM) int { return x.m - y.m })
		if at, err = newProgramAt(largest.ga, largest.m, ff); err != nil {
			return fmt.Errorf("%s at m = %d: %w", a.Path, largest.m, err)
		}
	}
	w := cmd.OutOrStdout()
	differ := 0
	for i, g := range graphs {
		fmt.Fprintf(w, "graph %d, m = %d: ", i, g.m)
		switch method {
		case "ff":
			err = at.verify(cmd, g.m, a, b, g.ga, g.gb)
		case "float":
			err = verifyFloat(cmd, a, b, g.ga, g.gb, seed, limit)
		default:
			return fmt.Errorf("unknown --method %q (want ff or float)", method)
		}
		var ee *exitError
		switch {
		case errors.As(err, &ee) && ee.code == exitDiffer:
			differ++
		case err != nil:
			return err
		}
	}
	if differ > 0 {
		fmt.Fprintf(w, "%d of %d graph(s) differ from the program at their m\n", differ, len(b.File.Graphs))
		return &exitError{code: exitDiffer}
	}
	fmt.Fprintf(w, "all %d graph(s) are the program at their m\n", len(b.File.Graphs))
	return nil
}

// programAt holds the program's fingerprints for the graphs of one m at a
// time. The program at the largest m is evaluated first and kept: at a
// smaller m the program is evaluated on the first rows of its inputs
// (ffverify.Verifier.Rows) rather than on inputs drawn again, still on its
// own, so that no verdict rests on its rows being independent.
type programAt struct {
	opts        ffverify.Options
	largestRows int
	full        *ffverify.Verifier // the program at largestRows; nil where it would pass the memory limit
	rows        int                // the m of v; 0 before the first graph
	v           *ffverify.Verifier // the program at rows; nil where it would pass the memory limit
}

// newProgramAt evaluates largest, the program at its largest m, on every
// draw, unless that would pass the memory limit.
func newProgramAt(largest *kernel.Graph, m int, opts ffverify.Options) (*programAt, error) {
	full, err := ffverify.New(largest, opts)
	if err != nil && !tooBig(err) {
		return nil, err
	}
	return &programAt{opts: opts, largestRows: m, full: full}, nil
}

// verify verifies gb against ga, the program at m rows. Where keeping the
// program's fingerprints on every draw, or checking gb beside them, would
// pass the memory limit, it checks gb alone as verify without --dynamic
// does (one draw at a time).
func (p *programAt) verify(cmd *cobra.Command, m int, a, b *input, ga, gb *kernel.Graph) error {
	if p.rows != m {
		p.rows, p.v = 0, nil // the previous m's fingerprints go first
		var v *ffverify.Verifier
		var err error
		switch {
		case p.full != nil && m == p.largestRows:
			v = p.full
		case p.full != nil:
			v, err = p.full.Rows(ga)
		default:
			v, err = ffverify.New(ga, p.opts)
		}
		if err != nil && !tooBig(err) {
			return fmt.Errorf("%s at m = %d: %w", a.Path, m, err)
		}
		p.rows, p.v = m, v
	}
	if p.v == nil {
		return p.alone(cmd, a, b, ga, gb)
	}
	r, err := p.v.Verify(gb)
	if tooBig(err) {
		return p.alone(cmd, a, b, ga, gb)
	}
	if err != nil {
		return fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	return reportFF(cmd, r, p.v.Options())
}

// alone checks gb against ga one draw at a time, as verify without
// --dynamic does, within the memory limit: the fingerprints kept so far
// are let go first, and the graphs after it make their own.
func (p *programAt) alone(cmd *cobra.Command, a, b *input, ga, gb *kernel.Graph) error {
	p.full, p.v = nil, nil
	return verifyFF(cmd, a, b, ga, gb, p.opts)
}

// tooBig says whether err is an evaluation refused for passing its memory
// limit.
func tooBig(err error) bool {
	_, ok := errors.AsType[*memlimit.Error](err)
	return ok
}

// runEngine emits b's entry point and runs examples/engine's decode loop
// over it at steps, checked against program a.
func runEngine(cmd *cobra.Command, dyn *dynamicFlags, a, b *input, steps []int, keep string) error {
	program, lo, hi, _, err := dyn.mark(a)
	if err != nil {
		return err
	}
	rows, docs, ok, err := driver.ReadDynamic(b.File)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %v", b.Path, err)
	case !ok:
		return fmt.Errorf("%s: --engine runs a dynamic program's entry point: B must be superopt --dynamic's document", b.Path)
	}
	if rows.Lo != lo || rows.Hi != hi {
		return fmt.Errorf("%s covers m in %d..%d, --dynamic says %d..%d", b.Path, rows.Lo, rows.Hi, lo, hi)
	}
	var buckets []cuda.Bucket
	for _, d := range docs {
		buckets = append(buckets, cuda.Bucket{Size: d.Rows[0], Lo: d.Lo, Hi: d.Hi, Graph: d.Graphs[0]})
	}
	code, err := cuda.EmitDynamic(a.Name, rows, buckets, cuda.Options{Source: b.Path})
	if err != nil {
		return fmt.Errorf("%s: %v", b.Path, err)
	}
	dir := keep
	if keep == "" {
		if dir, err = os.MkdirTemp("", "mirage-engine-*"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := emptyDir(keep); err != nil {
		return fmt.Errorf("--engine-dir %s: %v", keep, err)
	}
	res, err := enginerun.Run(cmd.Context(), dir, program, code, lo, hi, steps)
	w := cmd.OutOrStdout()
	for _, s := range res {
		switch {
		case s.M < lo || s.M > hi:
			fmt.Fprintf(w, "engine m = %d: outside %d..%d: %s\n", s.M, lo, hi, map[bool]string{true: "refused", false: "ACCEPTED"}[s.Refused])
		default:
			note := ""
			if s.Past {
				note = ", rows past m written"
			}
			fmt.Fprintf(w, "engine m = %d (%s): error %.3g of max |want|%s: %s\n", s.M, servedBy(docs, s.M), s.Error, note, map[bool]string{true: "ok", false: "FAILED"}[s.OK])
		}
	}
	if errors.Is(err, enginerun.ErrFailed) {
		return &exitError{code: exitDiffer, err: err}
	}
	if err == nil && keep != "" {
		var ms []string
		for _, m := range steps {
			ms = append(ms, fmt.Sprint(m))
		}
		script := fmt.Sprintf(`#!/usr/bin/env bash
# The decode loop that mirage verify --engine ran in the CPU emulator, built
# with nvcc for a GPU: run-gpu.sh [ARCH] (default sm_90).
set -euo pipefail
cd "$(dirname "$0")"
"${NVCC:-nvcc}" -O2 -std=c++17 -arch="${1:-sm_90}" -DMIRAGE_PROGRAM=%[1]s -include %[1]s.h -x cu engine.cpp %[1]s.cu -o engine-gpu%[3]s
./engine-gpu inputs.bin reference.bin %[2]s
`, code.Name, strings.Join(ms, " "), linkArgs(code.Links))
		if err := os.WriteFile(filepath.Join(keep, "run-gpu.sh"), []byte(script), 0o755); err != nil {
			return err
		}
		fmt.Fprintf(w, "kept the decode loop in %s (run-gpu.sh builds it with nvcc)\n", keep)
	}
	return err
}

// emptyDir makes dir, or checks that it is empty.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return errors.New("not empty")
	}
	return nil
}

// servedBy says which bucket serves m and whose graph it runs.
func servedBy(docs []driver.DocBucket, m int) string {
	for _, b := range docs {
		if m >= b.Lo && m <= b.Hi {
			if b.Rows[0] != b.Size {
				return fmt.Sprintf("bucket %d, bucket %d's graph", b.Size, b.Rows[0])
			}
			return fmt.Sprintf("bucket %d", b.Size)
		}
	}
	return "no bucket"
}

// linkArgs is " -lNAME" for each library in links (cuda.Result.Links).
func linkArgs(links []string) string {
	var b strings.Builder
	for _, l := range links {
		b.WriteString(" -l" + l)
	}
	return b.String()
}
