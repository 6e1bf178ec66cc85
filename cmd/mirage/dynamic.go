package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// dynamicFlags are --dynamic and --buckets (DESIGN §9).
type dynamicFlags struct {
	specs   []string // INPUT:DIM=LO..HI
	buckets string
}

const dynamicHelp = `Dynamic rows (DESIGN §9): --dynamic INPUT:DIM=LO..HI makes dim DIM of
input INPUT (its position from 0, or the program's variable name for it)
the number of rows m a call brings, LO <= m <= HI; the size written in the
program is only an example. Give it once per input that has m (one range
for all). m must stay row-independent: an op that reduces, contracts or
normalizes across m, a weight with m, or a broadcast of m against a static
size is refused (exit 2, the op and the program's line named); and m must
be the outermost dim of extent above 1 of every tensor that has it, not
its last (the emitted kernels cut tensors at row m).
`

func (f *dynamicFlags) register(cmd *cobra.Command, buckets bool) {
	cmd.Flags().StringArrayVar(&f.specs, "dynamic", nil, "make dim DIM of input INPUT the dynamic row count m: `INPUT:DIM=LO..HI` (repeat for inputs sharing m)")
	if buckets {
		cmd.Flags().StringVar(&f.buckets, "buckets", "", "with --dynamic: the bucket sizes, ascending, the last >= HI (default: powers of two up to HI)")
	}
}

func (f *dynamicFlags) on() bool { return len(f.specs) > 0 }

// mark returns the program of in with m, its range and the buckets, or an
// error naming the program's line of an op that mixes rows.
func (f *dynamicFlags) mark(in *input) (*kernel.Graph, int, int, []int, error) {
	if f.buckets != "" && !f.on() {
		return nil, 0, 0, nil, errors.New("--buckets needs --dynamic")
	}
	if in.Program == nil {
		return nil, 0, 0, nil, fmt.Errorf("%s: --dynamic takes a program (.py)", in.Path)
	}
	var flags []driver.DynamicFlag
	for _, s := range f.specs {
		fl, err := driver.ParseDynamicFlag(s)
		if err != nil {
			return nil, 0, 0, nil, err
		}
		flags = append(flags, fl)
	}
	g, lo, hi, err := driver.MarkDynamic(in.Program.Graph, flags, in.Program.Names)
	var de *kernel.DynamicError
	if errors.As(err, &de) {
		op := &in.Program.Graph.Ops[de.Op]
		line := 0
		if len(op.Out) > 0 && int(op.Out[0]) < len(in.Program.Lines) {
			line = in.Program.Lines[op.Out[0]]
		}
		return nil, 0, 0, nil, fmt.Errorf("%s:%d: --dynamic %s: %v", in.Path, line, strings.Join(f.specs, " --dynamic "), de.Err)
	}
	if err != nil {
		return nil, 0, 0, nil, err
	}
	buckets := driver.DefaultBuckets(lo, hi)
	if f.buckets != "" {
		if buckets, err = driver.ParseBuckets(f.buckets, lo, hi); err != nil {
			return nil, 0, 0, nil, err
		}
	}
	return g, lo, hi, buckets, nil
}

// runDynamic is superopt --dynamic: a search per bucket, one entry point.
func (f *superoptFlags) runDynamic(cmd *cobra.Command, in *input, path string, opts driver.Options) error {
	program, lo, hi, buckets, err := f.dynamic.mark(in)
	if err != nil {
		return err
	}
	out := answerOutput(cmd, f.outDir, in.Name, path, f.answerMeta(), f.arch.Arch, !f.noEmit)
	if err := out.Check(); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	if out.CUDA != nil {
		if err := driver.CheckLowers(in.Name, program, lo, hi, buckets, *out.CUDA); err != nil {
			return fmt.Errorf("%s: --dynamic %s: %v", path, strings.Join(f.dynamic.specs, " --dynamic "), err)
		}
	}
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "superopt %s: m in %d..%d, buckets %v; time budget %v (--time-limit), %d worker(s), %s\n",
		in.Name, lo, hi, buckets, opts.TimeLimit, opts.Workers, opts.Arch)
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	res, err := driver.RunDynamic(ctx, program, lo, hi, buckets, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	w, err := res.Write(out)
	if err != nil {
		return err
	}
	atLo := make([]float64, len(res.Buckets))
	for i, b := range res.Buckets {
		e, err := res.EstimateAt(b.Lo, rankOf(w, i), f.arch.Arch)
		if err != nil {
			return err
		}
		atLo[i] = e.Micros
	}
	if f.asJSON {
		return printDynamicJSON(cmd.OutOrStdout(), res, w, atLo)
	}
	printDynamicTable(cmd.OutOrStdout(), res, w, atLo)
	return nil
}

// rankOf is the candidate of bucket i that the entry point runs.
func rankOf(w *driver.DynamicWritten, i int) int {
	if w.Ranks == nil {
		return 0
	}
	return w.Ranks[i]
}

// bucketJSON is one bucket in superopt --dynamic --json.
type bucketJSON struct {
	Size        int           `json:"size"`
	Lo          int           `json:"lo"`
	Hi          int           `json:"hi"`
	EstimatedUs float64       `json:"estimated_us"`       // at m = size
	EstimatedLo float64       `json:"estimated_us_at_lo"` // at m = lo: rows past m move nothing
	UnfusedUs   float64       `json:"unfused_us"`
	Chosen      candidateJSON `json:"chosen"`      // the μGraph the entry point runs for it
	ChosenRows  int           `json:"chosen_rows"` // the m that μGraph is written for: size, or a larger bucket's it adopted
	Emitted     *int          `json:"emitted_candidate,omitempty"`
	Parts       []partJSON    `json:"parts"`
	Stats       search.Stats  `json:"stats"`
	Stopped     string        `json:"stopped,omitempty"`
}

func printDynamicJSON(w io.Writer, res *driver.DynamicResult, written *driver.DynamicWritten, atLo []float64) error {
	var buckets []bucketJSON
	var cands []candidateJSON
	for i, b := range res.Buckets {
		bj := bucketJSON{Size: b.Size, Lo: b.Lo, Hi: b.Hi, EstimatedLo: atLo[i], UnfusedUs: b.Baseline.Micros, Parts: partsJSON(b.Result), Stats: b.Stats, Stopped: b.Stopped}
		rank := rankOf(written, i)
		if written.Ranks != nil {
			bj.Emitted = &written.Ranks[i]
		}
		c := b.Candidates[rank]
		bj.Chosen = candidateSummary(c, b.Baseline)
		bj.ChosenRows = b.Size
		if c.Rows > 0 {
			bj.ChosenRows = c.Rows
		}
		bj.EstimatedUs = c.Estimate.Micros
		buckets = append(buckets, bj)
		cands = append(cands, bj.Chosen)
	}
	return writeJSON(w, struct {
		Stats      search.Stats    `json:"stats"`
		Candidates []candidateJSON `json:"candidates"` // per bucket, the μGraph it runs
		Buckets    []bucketJSON    `json:"buckets"`
		Lo         int             `json:"lo"`
		Hi         int             `json:"hi"`
		Stopped    string          `json:"stopped,omitempty"`
		Output     string          `json:"output"`
		Files      []string        `json:"files,omitempty"`
	}{res.Stats, cands, buckets, res.Lo, res.Hi, res.Stopped, written.Graph, written.CUDA})
}

func printDynamicTable(w io.Writer, res *driver.DynamicResult, written *driver.DynamicWritten, atLo []float64) {
	fmt.Fprintf(w, "m in %d..%d: %d bucket(s); searched %d states in %.1fs", res.Lo, res.Hi, len(res.Buckets), res.Stats.States, res.Stats.Seconds)
	if res.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", res.Stopped)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "bucket\tm\truns\tkernels\tcustomized\tgrids\test. µs\tat m=lo\tunfused µs\tspeedup\tsearch")
	for i, b := range res.Buckets {
		c := b.Candidates[rankOf(written, i)]
		runs := "its own"
		if c.Rows > 0 {
			runs = fmt.Sprintf("bucket %d's", c.Rows)
		}
		fmt.Fprintf(tw, "%d\t%d..%d\t%s\t%d\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.2fx\t%d states, %.1fs\n", b.Size, b.Lo, b.Hi, runs, c.Kernels, c.Customized,
			gridsText(c.Grids), c.Estimate.Micros, atLo[i], b.Baseline.Micros, b.Baseline.Micros/c.Estimate.Micros, b.Stats.States, b.Stats.Seconds)
	}
	tw.Flush()
	for i, b := range res.Buckets {
		if b.Candidates[rankOf(written, i)].Rows > 0 {
			fmt.Fprintf(w, "(a bucket runs a larger bucket's μGraph where the cost model has it faster on its rows: rows past m move nothing)\n")
			break
		}
	}
	fmt.Fprintf(w, "wrote %s\n", written.Graph)
	if len(written.CUDA) > 0 {
		fmt.Fprintf(w, "CUDA, one entry point for m in %d..%d: %s\n", res.Lo, res.Hi, strings.Join(written.CUDA, ", "))
	}
}
