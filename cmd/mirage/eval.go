package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/interp"
)

// summary is what eval reports of one output tensor.
type summary struct {
	Shape  []int   `json:"shape"`
	Sum    float64 `json:"sum"`
	L2     float64 `json:"l2"`
	MaxAbs float64 `json:"max_abs"`
}

func summarize(t *interp.Tensor) summary {
	s := summary{Shape: t.Shape.Dims()}
	for _, v := range t.Data {
		s.Sum += v
		s.L2 += v * v
		s.MaxAbs = math.Max(s.MaxAbs, math.Abs(v))
	}
	s.L2 = math.Sqrt(s.L2)
	return s
}

func newEvalCmd() *cobra.Command {
	var (
		lf        loadFlags
		maxMemory memoryFlag
		seed      int64
		asJSON    bool
		candidate int
		dynamic   dynamicFlags
		rows      int
	)
	cmd := &cobra.Command{
		Use:   "eval FILE [-- PROGRAM-ARGS]",
		Short: "Run a program in float64 on seeded random inputs and summarize its outputs",
		Long: `eval runs the reference interpreter (float64, with the exact grid and for-loop
semantics of graph-defined kernels) on random inputs drawn uniformly from
[-1, 1) with the given seed, and prints each output's shape, sum, L2 norm and
largest magnitude. --json prints {"seed": N, "outputs": [...]}.

Every value takes 8 bytes, and every tensor is kept until the end: a
program that would take more than --max-memory (default 4GiB) is refused
before anything is allocated, with exit status 2.

With --dynamic, the program runs at --rows m rows (default: the range's
HI), as the entry point superopt --dynamic writes would for that m.

` + dynamicHelp,
		Args: lf.files(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := lf.load(cmd, args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("rows") && !dynamic.on() {
				return errors.New("--rows needs --dynamic")
			}
			g, err := in.graph(candidate)
			if err != nil {
				return err
			}
			if dynamic.on() {
				program, lo, hi, _, err := dynamic.mark(in)
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("rows") {
					rows = hi
				}
				if rows < lo || rows > hi {
					return fmt.Errorf("--rows %d: outside the range %d..%d", rows, lo, hi)
				}
				if g, err = program.Bind(rows); err != nil {
					return fmt.Errorf("%s: %v", in.Path, err)
				}
			}
			limit := int64(maxMemory)
			if err := interp.CheckMemory(g, limit); err != nil {
				return fmt.Errorf("%s: %w", in.Path, maxMemory.explain(err))
			}
			outs, err := interp.RunWithin(g, interp.RandomInputs(g, seed), limit)
			if err != nil {
				return fmt.Errorf("%s: %v", in.Path, err)
			}
			sums := make([]summary, len(outs))
			for i, t := range outs {
				sums[i] = summarize(t)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, struct {
					Seed    int64     `json:"seed"`
					Outputs []summary `json:"outputs"`
				}{seed, sums})
			}
			for i, s := range sums {
				fmt.Fprintf(w, "output %d  %v  sum %.9g  l2 %.9g  max|x| %.9g\n", i, outs[i].Shape, s.Sum, s.L2, s.MaxAbs)
			}
			return nil
		},
	}
	lf.register(cmd)
	maxMemory.register(cmd)
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the random inputs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().IntVar(&candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	dynamic.register(cmd, false)
	cmd.Flags().IntVar(&rows, "rows", 0, "with --dynamic: m, the rows to run the program at (default: HI)")
	return cmd
}

func inf() float64 { return math.Inf(1) }
