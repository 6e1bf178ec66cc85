package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
)

// dynamicFlags are --dynamic and --buckets (DESIGN §9).
type dynamicFlags struct {
	specs   []string // INPUT:DIM=LO..HI
	buckets string
}

func (f *dynamicFlags) register(cmd *cobra.Command, buckets bool) {
	cmd.Flags().StringArrayVar(&f.specs, "dynamic", nil, "make dim DIM of input INPUT the dynamic row count m: `INPUT:DIM=LO..HI` (repeat for inputs sharing m)")
	if buckets {
		cmd.Flags().StringVar(&f.buckets, "buckets", "", "with --dynamic: the bucket sizes, ascending, the last >= HI (default: powers of two up to HI)")
	}
}

func (f *dynamicFlags) on() bool { return len(f.specs) > 0 }

// mark returns the program of in with m marked (its range and buckets
// with it), or an error naming the program's line of an op that mixes rows.
func (f *dynamicFlags) mark(in *driver.Input, errw io.Writer) (*driver.Dynamic, error) {
	d, err := in.MarkDynamic(f.specs, f.buckets)
	if err == nil {
		for _, w := range d.Warnings {
			fmt.Fprintf(errw, "warning: %s\n", w)
		}
	}
	return d, err
}

// runDynamic is superopt --dynamic: a search per bucket, one entry point.
func (f *superoptFlags) runDynamic(cmd *cobra.Command, in *driver.Input, opts driver.Options) error {
	d, err := f.dynamic.mark(in, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	out := f.output(cmd, in)
	if err := out.Check(); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	if out.CUDA != nil {
		if err := driver.CheckLowers(in.Name, d.Program, d.Lo, d.Hi, d.Buckets, *out.CUDA); err != nil {
			return fmt.Errorf("%s: --dynamic %s: %v", in.Path, strings.Join(f.dynamic.specs, " --dynamic "), err)
		}
	}
	errw := cmd.ErrOrStderr()
	// The handler before the header: a signal sent on seeing it is caught.
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	fmt.Fprintf(errw, "superopt %s: m in %d..%d, buckets %v; time budget %v (--time-limit), %d worker(s), %s\n",
		in.Name, d.Lo, d.Hi, d.Buckets, opts.TimeLimit, opts.Workers, opts.Arch)
	res, err := driver.RunDynamic(ctx, d.Program, d.Lo, d.Hi, d.Buckets, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Path, err)
	}
	w, err := res.Write(out)
	if err != nil {
		return err
	}
	atLo, err := res.EstimatesAtLo(w, f.arch.Arch)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), res.Report(w, atLo))
	}
	driver.WriteDynamicTable(cmd.OutOrStdout(), res, w, atLo)
	return nil
}
