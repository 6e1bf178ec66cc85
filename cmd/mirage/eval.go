package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/check"
)

// evalFlags are the flags of mirage eval.
type evalFlags struct {
	load      loadFlags
	maxMemory memoryFlag
	seed      int64
	asJSON    bool
	candidate int
	dynamic   dynamicFlags
	rows      int
}

func newEvalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval FILE [-- PROGRAM-ARGS]",
		Short: "Run a program in float64 on seeded random inputs and summarize its outputs",
		Long:  help("eval"),
		Args:  f.load.files(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	f.maxMemory.register(cmd)
	fl := cmd.Flags()
	fl.Int64Var(&f.seed, "seed", 1, "seed of the random inputs")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fl.IntVar(&f.candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	f.dynamic.register(cmd, false)
	fl.IntVar(&f.rows, "rows", 0, "with --dynamic: m, the rows to run the program at (default: HI)")
	return cmd
}

func (f *evalFlags) run(cmd *cobra.Command, path string) error {
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	rowsGiven := cmd.Flags().Changed("rows")
	if rowsGiven && !f.dynamic.on() {
		return errors.New("--rows needs --dynamic")
	}
	g, err := in.Graph(f.candidate)
	if err != nil {
		return err
	}
	if f.dynamic.on() {
		d, err := f.dynamic.mark(in, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if !rowsGiven {
			f.rows = d.Hi
		}
		if f.rows < d.Lo || f.rows > d.Hi {
			return fmt.Errorf("--rows %d: outside the range %d..%d", f.rows, d.Lo, d.Hi)
		}
		if g, err = d.Program.Bind(f.rows); err != nil {
			return fmt.Errorf("%s: %v", in.Path, err)
		}
	}
	sums, err := check.Eval(g, f.seed, int64(f.maxMemory))
	if err != nil {
		return fmt.Errorf("%s: %w", in.Path, f.maxMemory.explain(err))
	}
	w := cmd.OutOrStdout()
	if f.asJSON {
		return writeJSON(w, struct {
			Seed    int64           `json:"seed"`
			Outputs []check.Summary `json:"outputs"`
		}{f.seed, sums})
	}
	for i, s := range sums {
		fmt.Fprintf(w, "output %d  %v\n", i, s)
	}
	return nil
}
