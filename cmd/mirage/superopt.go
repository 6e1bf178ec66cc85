package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
)

// superoptFlags are the flags of mirage superopt.
type superoptFlags struct {
	load       loadFlags
	outDir     string
	config     string
	arch       archFlag
	timeLimit  time.Duration
	workers    int
	seed       uint64
	maxStates  int64
	maxResults int
	cacheDir   string
	noCache    bool
	noSeeds    bool
	noEmit     bool
	profile    string
	asJSON     bool
	shard      string // I/N or auto: search one slice (DESIGN §8)
	shardDir   string
	shards     int // N, for --shard auto in a Kubernetes Indexed Job
	dynamic    dynamicFlags
	maxMemory  memoryFlag
}

func newSuperoptCmd() *cobra.Command {
	var f superoptFlags
	cmd := &cobra.Command{
		Use:   "superopt FILE [-- PROGRAM-ARGS]",
		Short: "Search for fused μGraphs equivalent to a program",
		Long:  help("superopt"),
		Args:  f.load.files(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	registerArch(cmd, &f.arch, "shared memory per block and the cost model")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write the files into")
	fl.StringVar(&f.config, "config", "", "a preset configuration for every part (default: the program's, else one chosen per part)")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "budget of the whole run (e.g. 150s; 0: "+driver.DefaultTimeLimit.String()+")")
	fl.IntVar(&f.workers, "workers", 2, "parallel search workers")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the verifier's random draws")
	fl.Int64Var(&f.maxStates, "max-states", 0, "stop each part's search after this many states (0: no limit)")
	fl.IntVar(&f.maxResults, "max-candidates", 2, "verify each part's candidates best first and keep the first N that pass, and write the N best whole-program answers (0: all of them, of the best 65,536 each part's search keeps)")
	fl.StringVar(&f.cacheDir, "cache", "", "result cache directory (default: the user cache directory)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the result cache")
	fl.BoolVar(&f.noSeeds, "no-seeds", false, "search without the rules' seeds: the enumeration's candidates only")
	f.maxMemory.register(cmd)
	fl.BoolVar(&f.noEmit, "no-emit", false, "do not write CUDA for the best candidate")
	fl.StringVar(&f.profile, "profile", "", "measured times (a profile file from bench/gpu, or a directory of profile*.json) that override the model")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics, candidates and parts as one JSON object")
	fl.StringVar(&f.shard, "shard", "", "search only slice `I/N` (I from 0) of the run, or auto: from the Slurm array or Kubernetes Indexed Job; needs --shard-dir")
	fl.StringVar(&f.shardDir, "shard-dir", "", "with --shard: the (shared) directory the slice's file goes to, for mirage merge")
	fl.IntVar(&f.shards, "shards", 0, "with --shard auto in a Kubernetes Indexed Job: N, the Job's completions")
	f.dynamic.register(cmd, true)
	pathFlags(cmd, "out", "cache", "profile", "shard-dir")
	return cmd
}

func (f *superoptFlags) run(cmd *cobra.Command, path string) error {
	if err := checkNotNegative(cmd, "time-limit", "max-candidates", "max-states"); err != nil {
		return err
	}
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	if !driver.IsProgram(path) {
		return fmt.Errorf("%s: superopt takes a program (.py)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	shard, sharded, err := f.shardFlags(cmd)
	if err != nil {
		return err
	}
	opts, err := driver.Configure(in, f.settings(cmd), warner(cmd))
	if err != nil {
		return err
	}
	dynamic := f.dynamic.on() || f.dynamic.buckets != ""
	switch {
	case sharded && dynamic:
		return errors.New("--dynamic with --shard: shard a dynamic program's buckets by hand (--buckets), one static run each")
	case sharded:
		return f.runShard(cmd, in, opts, shard)
	case dynamic:
		return f.runDynamic(cmd, in, opts)
	}
	// The output directory is checked before the search, not after it.
	out := f.output(cmd, in)
	if err := out.Check(); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	errw := cmd.ErrOrStderr()
	// The handler before the header: a signal sent on seeing it is caught.
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	fmt.Fprintf(errw, "superopt %s: time budget %v (--time-limit), %d worker(s), %s\n", in.Name, opts.TimeLimit, opts.Workers, opts.Arch)
	res, err := driver.Run(ctx, in.Program.Graph, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	written, emitted, err := res.WriteAnswer(out)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), res.Report(written, emitted, nil))
	}
	driver.WriteTable(cmd.OutOrStdout(), res, opts, written, emitted)
	return nil
}

// settings are the run's settings as the flags give them.
func (f *superoptFlags) settings(cmd *cobra.Command) driver.Settings {
	return driver.Settings{
		Arch: f.arch.Arch, Preset: f.config, TimeLimit: f.timeLimit, Workers: f.workers, Seed: f.seed,
		MaxStates: f.maxStates, NoSeeds: f.noSeeds, MaxCandidates: f.maxResults, Profile: f.profile,
		CacheDir: f.cacheDir, NoCache: f.noCache, MaxMemory: int64(f.maxMemory),
		Log: func(line string) { fmt.Fprintln(cmd.ErrOrStderr(), line) },
	}
}

// answerMeta is the meta of the answers this command writes (or its
// shards' merge does): the flags that shaped them and the program's
// arguments.
func (f *superoptFlags) answerMeta() driver.AnswerMeta {
	return driver.AnswerMeta{Config: f.config, Arch: f.arch.Name, Seed: f.seed, Args: f.load.args}
}

// output is the output set of in's answer, with its CUDA unless --no-emit.
func (f *superoptFlags) output(cmd *cobra.Command, in *driver.Input) driver.Output {
	return driver.NewOutput(f.outDir, in.Name, in.Path, f.answerMeta(), f.arch.Arch, !f.noEmit, warner(cmd))
}

// warner prints a warning on cmd's error stream.
func warner(cmd *cobra.Command) func(string) {
	return func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+msg) }
}
