package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/bench"
	"github.com/mirage-go/mirage/driver"
)

// benchFlags are the flags of mirage bench.
type benchFlags struct {
	load          loadFlags
	outDir        string
	arch          archFlag
	timeLimit     time.Duration
	workers       int
	seed          uint64
	config        string
	maxStates     int64
	noSeeds       bool
	maxCandidates int
	only          []string
	onlyPaths     bool
	profile       string
	asJSON        bool
	compare       string
	tol           bench.Tolerances
	history       string
	shards        int
	dynamicRange  string // LO..HI for the dynamic-batch line; "": none
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [PATH...]",
		Short: "Run the search over a suite of workloads, record the results and compare them with a baseline",
		Long:  help("bench"),
		Args: func(cmd *cobra.Command, _ []string) error {
			if cmd.ArgsLenAtDash() >= 0 {
				return errors.New("bench passes no arguments to its programs (after --): each runs with its argparse defaults")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.load.register(cmd)
	registerArch(cmd, &f.arch, "the cost model")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", filepath.Join("bench", "results"), "directory for latest.md, speedup.svg, results.json and history.jsonl")
	fl.DurationVar(&f.timeLimit, "time-limit", 4*time.Minute+30*time.Second, "time limit per workload, superopt's --time-limit (gqa's whole space takes about 10 s on 2 cores, qknorm_gqa's about a minute)")
	fl.IntVar(&f.workers, "workers", 2, "parallel search workers")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the verifier's random draws")
	fl.StringVar(&f.config, "config", "", "a preset configuration for every workload (default: each program's, else one chosen per part)")
	fl.Int64Var(&f.maxStates, "max-states", 0, "stop each part's search after this many states (0: no limit)")
	fl.BoolVar(&f.noSeeds, "no-seeds", false, "search without the rules' seeds: the enumeration's candidates only")
	fl.IntVar(&f.maxCandidates, "max-candidates", 2, "verify each part's candidates best first and keep the first N that pass, as superopt does (0: all of them, of the best 65,536 each part's search keeps)")
	fl.StringSliceVar(&f.only, "workload", nil, "run only these of the built-in workloads (comma-separated names); programs at PATH always run")
	fl.BoolVar(&f.onlyPaths, "only-paths", false, "run the workloads at PATH only, not the built-in ones")
	fl.StringVar(&f.profile, "profile", "", "measured times (a profile file from bench/gpu, or a directory of profile*.json) that override the model")
	fl.BoolVar(&f.asJSON, "json", false, "print the rows (and the comparison) as JSON")
	fl.StringVar(&f.compare, "compare", "", "compare with `BASELINE.json`, the results.json of an earlier run; exit 1 on a regression")
	fl.Float64Var(&f.tol.Estimate, "tolerance", bench.DefaultTolerances.Estimate, "relative growth of a best estimate that --compare allows")
	fl.Float64Var(&f.tol.SearchTime, "time-ratio", bench.DefaultTolerances.SearchTime, "growth of a calibrated search time that --compare allows (0: not checked)")
	fl.IntVar(&f.shards, "shard-balance", 4, "search gqa (when among the workloads) as this many shards too and report how evenly they share it (0: not)")
	fl.StringVar(&f.dynamicRange, "dynamic-batch", "1..64", "search rmsnorm_matmul (when among the workloads) with its rows dynamic over this `LO..HI`, every bucket, and report the time against its largest bucket alone (\"\": not)")
	fl.StringVar(&f.history, "history", "", "draw `DIR`/history.jsonl as DIR/history.svg and run nothing")
	f.tol.Measured = bench.DefaultTolerances.Measured
	pathFlags(cmd, "out", "profile", "compare", "history")
	return cmd
}

func (f *benchFlags) run(cmd *cobra.Command, paths []string) error {
	if err := checkNotNegative(cmd, "time-limit", "max-states", "max-candidates"); err != nil {
		return err
	}
	suite := f.suite(cmd, paths)
	if err := suite.Check(); err != nil {
		return err
	}
	if f.history != "" {
		if len(paths) > 0 || f.compare != "" {
			return errors.New("--history draws a history and runs nothing: it takes no PATH and no --compare")
		}
		out, n, err := bench.DrawHistory(f.history)
		if err != nil {
			return err
		}
		if f.asJSON {
			return writeJSON(cmd.OutOrStdout(), struct {
				Wrote string `json:"wrote"`
				Runs  int    `json:"runs"`
			}{out, n})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d runs)\n", out, n)
		return nil
	}
	ctx, stop := driver.Interruptible(cmd.Context(), cmd.ErrOrStderr())
	defer stop()
	run, err := suite.Run(ctx)
	if errors.Is(err, bench.ErrInterrupted) {
		return &exitError{code: driver.ExitInterrupted, err: err}
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		err = writeJSON(out, run.Report(f.arch.Name))
	} else {
		_, err = out.Write(run.Markdown)
		if err == nil && run.Comparison != nil {
			fmt.Fprintln(out)
			err = bench.WriteComparison(out, run.Comparison)
		}
	}
	if err != nil {
		return err
	}
	if names := run.Regressions(); len(names) > 0 {
		return &exitError{code: exitDiffer, err: fmt.Errorf("bench: against %s: %s", f.compare, strings.Join(names, ", "))}
	}
	return nil
}

// suite is the run the flags ask for.
func (f *benchFlags) suite(cmd *cobra.Command, paths []string) *bench.Suite {
	return &bench.Suite{
		Arch: f.arch.Arch, TimeLimit: f.timeLimit, Workers: f.workers, Seed: f.seed, Config: f.config,
		MaxStates: f.maxStates, NoSeeds: f.noSeeds, MaxCandidates: f.maxCandidates,
		Only: f.only, OnlyPaths: f.onlyPaths, Paths: paths, Profile: f.profile,
		Compare: f.compare, Tolerances: f.tol, ShardBalance: f.shards, DynamicBatch: f.dynamicRange,
		Out: f.outDir, Version: version, Load: f.load.options(cmd),
		Log: func(line string) { fmt.Fprintln(cmd.ErrOrStderr(), line) },
	}
}
