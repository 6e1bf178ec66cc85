package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/bench"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/search"
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
		Long: `bench runs superopt on each workload and prints one table: search seconds,
states, the share of candidate ops pruned by abstract expressions, verified
candidates, the best answer's kernels and estimated time, the unfused
program's estimate and the speedup. The workloads are built in (the Mirage
paper's GQA decode, QKNorm+GQA, RMSNorm+MatMul, LoRA, gated MLP and nTrans,
and two whole programs at LLaMA-7B shapes) and, after them, those at each
PATH: a program (.py), a μGraph file (.ugraph.json, its first graph) or a
directory of them. --workload picks among the built-in ones; the programs
at each PATH always run. --only-paths leaves the built-in ones out. The
cache is not used.

Each run writes, in DIR (-o): latest.md (the table), speedup.svg (a chart
of the speedups), results.json (the tool's version and commit, the
machine, the options, and per workload its figures and the hashes of its
program and configuration) and a line of history.jsonl.

--compare BASELINE.json compares this run with a results.json kept from
an earlier one and prints the delta table. A workload regresses when it
loses its fused result, when its verified candidates fall to 0, when its
best estimate grows by more than --tolerance (the cost model is
deterministic), when a measured time (--profile) grows by more than 5%
beyond the spread of its runs, or when its search time, divided by a short
CPU calibration loop timed in the same process, grows by more than
--time-ratio. A workload whose program changed is not compared: its row
says so, and the baseline must be recorded again. Workloads on one side
only are listed.

--history DIR draws DIR/history.jsonl as DIR/history.svg (the speedup and
search seconds of each workload over the runs) and runs nothing.

--json prints {"arch": ..., "rows": [...]} and, with --compare,
"comparison": {"workloads": [{"workload", "verdict", "reasons", ...}]}.

Exit status: 0, or 0 with --compare when nothing regressed; 1 when a
workload regressed or its program changed; 2 for unusable input (a path
that is not a program, a missing, corrupted or foreign baseline, one for
another arch), before anything is searched or written.`,
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
	fl.IntVar(&f.maxCandidates, "max-candidates", 2, "verify each part's candidates best first and keep the first N that pass, as superopt does (0: all of them, the complete set)")
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
	switch {
	case f.workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	case f.tol.Estimate < 0:
		return fmt.Errorf("--tolerance %v: want 0 or more", f.tol.Estimate)
	case f.tol.SearchTime != 0 && f.tol.SearchTime < 1:
		return fmt.Errorf("--time-ratio %v: want 1 or more, or 0 to turn the check off", f.tol.SearchTime)
	case f.onlyPaths && len(paths) == 0:
		return errors.New("--only-paths: no PATH given")
	}
	if f.history != "" {
		if len(paths) > 0 || f.compare != "" {
			return errors.New("--history draws a history and runs nothing: it takes no PATH and no --compare")
		}
		return drawHistory(cmd, f.history)
	}
	if f.config != "" {
		if _, err := search.NamedConfig(f.config); err != nil {
			return fmt.Errorf("--config: %v", err)
		}
	}

	// Everything that can make the run unusable is checked before any
	// search, so that a bad input writes nothing.
	var baseline *bench.Results
	if f.compare != "" {
		b, err := bench.ReadResults(f.compare)
		if err != nil {
			return fmt.Errorf("--compare: %v", err)
		}
		if err := bench.CheckComparable(b, f.arch.Name); err != nil {
			return fmt.Errorf("--compare %s: %v", f.compare, err)
		}
		baseline = b
	}
	ws, err := f.workloads(paths)
	if err != nil {
		return err
	}
	inputs := make([]*input, len(ws))
	for i, w := range ws {
		if inputs[i], err = f.load.loadSource(cmd, w.File, w.Source); err != nil {
			return err
		}
	}
	var profiles *cost.Profiles
	if f.profile != "" {
		if profiles, err = cost.LoadProfiles(f.profile); err != nil {
			return fmt.Errorf("--profile: %v", err)
		}
	}
	if err := driver.CheckOutputDir(f.outDir); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	if err := bench.CheckOutput(f.outDir, benchFiles...); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}

	errw := cmd.ErrOrStderr()
	calibration := bench.Calibrate()
	fmt.Fprintf(errw, "bench: %d workload(s), %v each, %d worker(s), %s; calibration loop %.3f s\n",
		len(ws), f.timeLimit, f.workers, f.arch.Arch, calibration)
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	var rows []bench.Row
	for i, w := range ws {
		fmt.Fprintf(errw, "bench: %s\n", w.Name)
		rows = append(rows, f.runOne(ctx, inputs[i], w, profiles))
		if ctx.Err() != nil {
			// Part of a suite compares with no baseline: nothing is written.
			return &exitError{code: driver.ExitInterrupted, err: errors.New("bench: interrupted; nothing written")}
		}
	}
	var balance *bench.ShardBalance
	if i := slices.IndexFunc(ws, func(w bench.Workload) bool { return w.Name == "gqa" }); i >= 0 && f.shards > 0 {
		fmt.Fprintf(errw, "bench: gqa in %d shards\n", f.shards)
		if balance, err = f.shardBalance(ctx, inputs[i], ws[i]); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return &exitError{code: driver.ExitInterrupted, err: errors.New("bench: interrupted; nothing written")}
		}
	}
	var dynamic *bench.DynamicCost
	if i := slices.IndexFunc(ws, func(w bench.Workload) bool { return w.Name == "rmsnorm_matmul" }); i >= 0 && f.dynamicRange != "" {
		fmt.Fprintf(errw, "bench: rmsnorm_matmul with m in %s\n", f.dynamicRange)
		if dynamic, err = f.dynamicCost(ctx, inputs[i], ws[i]); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return &exitError{code: driver.ExitInterrupted, err: errors.New("bench: interrupted; nothing written")}
		}
	}
	results := bench.NewResults(version, f.arch.Name, calibration, bench.Options{
		TimeLimit: f.timeLimit.String(), Workers: f.workers, Seed: f.seed,
		Config: f.config, MaxStates: f.maxStates, NoSeeds: f.noSeeds, MaxCandidates: f.maxCandidates, Profile: f.profile,
	}, rows)
	results.Shards, results.Dynamic = balance, dynamic
	title := fmt.Sprintf("mirage bench: estimated on %s, %d workers, time limit %v per workload", f.arch.Name, f.workers, f.timeLimit)
	var md, svg bytes.Buffer
	if err := bench.WriteMarkdown(&md, title, rows); err != nil {
		return err
	}
	if balance != nil {
		if err := bench.WriteShardBalance(&md, balance); err != nil {
			return err
		}
	}
	if dynamic != nil {
		if err := bench.WriteDynamicCost(&md, dynamic); err != nil {
			return err
		}
	}
	if err := bench.WriteSVG(&svg, "Estimated speedup over the unfused program ("+f.arch.Name+")", rows); err != nil {
		return err
	}
	if err := os.MkdirAll(f.outDir, 0o755); err != nil {
		return err
	}
	if err := results.Save(f.outDir, atomicfile.File{Name: benchFiles[0], Data: md.Bytes()}, atomicfile.File{Name: benchFiles[1], Data: svg.Bytes()}); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}

	var cmp *bench.Comparison
	if baseline != nil {
		if cmp, err = bench.Compare(baseline, results, f.tol); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		err = writeJSON(out, struct {
			Arch         string              `json:"arch"`
			Rows         []bench.Row         `json:"rows"`
			ShardBalance *bench.ShardBalance `json:"shard_balance,omitempty"`
			DynamicBatch *bench.DynamicCost  `json:"dynamic_batch,omitempty"`
			Comparison   *bench.Comparison   `json:"comparison,omitempty"`
		}{f.arch.Name, rows, balance, dynamic, cmp})
	} else {
		_, err = out.Write(md.Bytes())
		if err == nil && cmp != nil {
			fmt.Fprintln(out)
			err = bench.WriteComparison(out, cmp)
		}
	}
	if err != nil {
		return err
	}
	if cmp != nil && cmp.Failed() {
		var names []string
		for _, d := range cmp.Deltas {
			if d.Verdict.Failing() {
				names = append(names, d.Workload+" ("+string(d.Verdict)+")")
			}
		}
		return &exitError{code: exitDiffer, err: fmt.Errorf("bench: against %s: %s", f.compare, strings.Join(names, ", "))}
	}
	return nil
}

// benchFiles are the files of a run beside results.json and
// history.jsonl: the table and the chart.
var benchFiles = []string{"latest.md", "speedup.svg"}

// workloads returns the workloads to run: the built-in ones unless
// --only-paths (those --workload names, when it does), then every program
// at paths: a path given is always run.
func (f *benchFlags) workloads(paths []string) ([]bench.Workload, error) {
	var ws []bench.Workload
	switch {
	case f.onlyPaths && len(f.only) > 0:
		return nil, errors.New("--workload picks among the built-in workloads, which --only-paths leaves out; name the programs' files as PATHs instead")
	case !f.onlyPaths:
		var err error
		if ws, err = bench.Workloads(); err != nil {
			return nil, err
		}
	}
	if len(f.only) > 0 {
		for _, name := range f.only {
			if !slices.ContainsFunc(ws, func(w bench.Workload) bool { return w.Name == name }) {
				return nil, fmt.Errorf("--workload %s names no built-in workload", name)
			}
		}
		ws = slices.DeleteFunc(ws, func(w bench.Workload) bool { return !slices.Contains(f.only, w.Name) })
	}
	return bench.FromPaths(ws, paths)
}

// options are the configuration a workload is searched with (--config,
// else the program's preset and its restrictions) and the driver's options
// for it, as superopt would run it.
func (f *benchFlags) options(in *input) (bench.Configuration, driver.Options) {
	conf := bench.Configuration{Preset: f.config, MaxStates: f.maxStates, NoSeeds: f.noSeeds}
	if prog := in.Program; prog != nil && prog.Superopt != nil {
		if conf.Preset == "" {
			conf.Preset = prog.Superopt.Config
		}
		conf.Restrict = search.Restrictions(prog.Superopt.Lists)
	}
	return conf, driver.Options{
		Name: in.Name, Arch: f.arch.Arch, Preset: conf.Preset, Restrict: conf.Restrict,
		TimeLimit: f.timeLimit, Workers: f.workers, Seed: f.seed, MaxStates: f.maxStates, NoSeeds: f.noSeeds,
		// The suite reports the best answer alone: verifying more
		// combinations of a whole program's parts would only cost time.
		PartResults: partResults(f.maxCandidates), Answers: 1,
	}
}

// runOne superoptimizes one workload, as superopt does, without the cache;
// a failure of the search is reported in its row.
func (f *benchFlags) runOne(ctx context.Context, in *input, w bench.Workload, profiles *cost.Profiles) bench.Row {
	row := bench.Row{Workload: w.Name, File: w.File, FirstFusedSec: -1}
	g, err := in.graph(0)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	conf, opts := f.options(in)
	opts.Profiles = profiles
	row.ProgramHash, row.ConfigHash = bench.ProgramHash(g), conf.Hash()
	res, err := driver.Run(ctx, g, opts)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	row.UnfusedUs = res.Baseline.Micros
	s := res.Stats
	// When every part had a fused candidate, since the run began.
	row.Seconds, row.States, row.Stopped, row.FirstFusedSec = s.Seconds, s.States, res.Stopped, s.FirstFused
	if s.Seconds > 0 {
		row.StatesPerCore = float64(s.States) / s.Seconds / float64(min(f.workers, runtime.GOMAXPROCS(0)))
	}
	if judged := s.PrunedAbsexpr + s.PrunedShape + s.PrunedDead + s.States; judged > 0 {
		row.PrunedShare = float64(s.PrunedAbsexpr) / float64(judged)
	}
	row.Complete, row.Verified = s.Complete, int(s.Verified)
	best := res.Candidates[0]
	row.Fused = best.Customized > 0
	row.BestKernels, row.BestUs = best.Kernels, best.Estimate.Micros
	row.Speedup = res.Baseline.Micros / best.Estimate.Micros
	if m, ok := profiles.Measurement(f.arch.Name, in.Name, best.Graph); ok {
		row.Measured = &bench.Measured{MedianUs: m.MedianMicros, SpreadUs: m.Spread()}
	}
	return row
}

// shardBalance runs the workload as f.shards shards, one after another,
// each with the workers and time limit of a workload, and times them.
func (f *benchFlags) shardBalance(ctx context.Context, in *input, w bench.Workload) (*bench.ShardBalance, error) {
	g, err := in.graph(0)
	if err != nil {
		return nil, err
	}
	_, opts := f.options(in)
	var secs []float64
	incomplete := 0
	for i := range f.shards {
		start := time.Now()
		res, err := driver.RunShard(ctx, g, opts, driver.Shard{Index: i, Count: f.shards})
		if err != nil {
			return nil, fmt.Errorf("%s, shard %d of %d: %v", w.Name, i, f.shards, err)
		}
		secs = append(secs, time.Since(start).Seconds())
		if res.Stopped != "" {
			incomplete++
		}
	}
	return bench.NewShardBalance(w.Name, secs, incomplete), nil
}

// dynamicCost searches the workload with input 0's dim 0 dynamic over
// f.dynamicRange, every default bucket in one run (each with the time
// limit of a workload), then its largest bucket alone, and times both.
func (f *benchFlags) dynamicCost(ctx context.Context, in *input, w bench.Workload) (*bench.DynamicCost, error) {
	flag, err := driver.ParseDynamicFlag("0:0=" + f.dynamicRange)
	if err != nil {
		return nil, fmt.Errorf("--dynamic-batch: %v", err)
	}
	g, err := in.graph(0)
	if err != nil {
		return nil, err
	}
	program, lo, hi, err := driver.MarkDynamic(g, []driver.DynamicFlag{flag}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: --dynamic-batch: %v", w.Name, err)
	}
	_, opts := f.options(in)
	buckets := driver.DefaultBuckets(lo, hi)
	opts.TimeLimit *= time.Duration(len(buckets))
	start := time.Now()
	res, err := driver.RunDynamic(ctx, program, lo, hi, buckets, opts)
	if err != nil {
		return nil, err
	}
	all := time.Since(start).Seconds()
	var per []float64
	for _, b := range res.Buckets {
		per = append(per, b.Stats.Seconds)
	}
	largest, err := program.Bind(buckets[len(buckets)-1])
	if err != nil {
		return nil, err
	}
	_, opts = f.options(in)
	start = time.Now()
	if _, err := driver.Run(ctx, largest, opts); err != nil {
		return nil, err
	}
	return bench.NewDynamicCost(w.Name, 0, lo, hi, buckets, per, all, time.Since(start).Seconds()), nil
}

// drawHistory writes dir/history.svg from dir/history.jsonl.
func drawHistory(cmd *cobra.Command, dir string) error {
	runs, err := bench.ReadHistory(filepath.Join(dir, bench.HistoryFile))
	if err != nil {
		return fmt.Errorf("--history: %v", err)
	}
	var svg bytes.Buffer
	if err := bench.WriteHistorySVG(&svg, runs); err != nil {
		return err
	}
	out := filepath.Join(dir, "history.svg")
	if err := atomicfile.WriteFile(out, svg.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d runs)\n", out, len(runs))
	return nil
}
