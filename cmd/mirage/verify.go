package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/check"
	"github.com/mirage-go/mirage/driver"
)

// verifyFlags are the flags of mirage verify.
type verifyFlags struct {
	load      loadFlags
	maxMemory memoryFlag
	method    string
	seed      int64
	trials    int
	candidate int
	dynamic   dynamicFlags
	engine    []int
	engineDir string
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify A B [-- PROGRAM-ARGS]",
		Short: "Check that two programs or μGraphs compute the same function",
		Long:  help("verify"),
		Args:  f.load.files(2),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0], args[1]) },
	}
	f.load.register(cmd)
	f.maxMemory.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.method, "method", "ff", "how to compare: ff (finite fields), float (float64 interpreter) or emu (B's emitted CUDA in the CPU emulator)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the random inputs")
	fl.IntVar(&f.trials, "trials", check.DefaultTrials, "independent random draws (--method ff)")
	fl.IntVar(&f.candidate, "candidate", 0, "which graph of B when B holds several candidates (numbered from 0)")
	f.dynamic.register(cmd, false)
	fl.IntSliceVar(&f.engine, "engine", nil, "with --dynamic: run B's entry point in examples/engine's decode loop, in the CPU emulator, at these `m,m,...`")
	fl.StringVar(&f.engineDir, "engine-dir", "", "with --engine: keep the decode loop's sources and data in `DIR` (new or empty), with run-gpu.sh for a GPU")
	pathFlags(cmd, "engine-dir")
	return cmd
}

func (f *verifyFlags) run(cmd *cobra.Command, pathA, pathB string) error {
	if f.method == "ff" && f.trials < 1 { // a flag, refused before anything is read
		return fmt.Errorf("--trials %d: want at least 1", f.trials)
	}
	if f.engineDir != "" && len(f.engine) == 0 {
		return errors.New("--engine-dir keeps what --engine runs: it needs --engine (and --dynamic)")
	}
	a, err := f.load.load(cmd, pathA)
	if err != nil {
		return err
	}
	b, err := f.load.load(cmd, pathB)
	if err != nil {
		return err
	}
	opts := check.Options{Method: check.Method(f.method), Trials: f.trials, Seed: f.seed, MaxBytes: int64(f.maxMemory),
		Note: func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", s) }}
	w := cmd.OutOrStdout()
	if f.dynamic.on() {
		if cmd.Flags().Changed("candidate") {
			return errors.New("--candidate with --dynamic: every graph of B is verified at its own m")
		}
		d, err := f.dynamic.mark(a, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		same, err := check.Dynamic(w, d, a.Path, b, opts)
		if err != nil || !same || len(f.engine) == 0 {
			return verdict(same, f.maxMemory.explain(err))
		}
		// Interruptible: its build directory goes on Ctrl-C or SIGTERM too.
		ctx, stop := driver.InterruptibleSaying(cmd.Context(), cmd.ErrOrStderr(), "stopping the decode loop")
		defer stop()
		err = check.Engine(ctx, w, d, a.Name, b, f.engine, f.engineDir, int64(f.maxMemory))
		if ctx.Err() != nil {
			return interrupted("verify --engine")
		}
		if errors.Is(err, check.ErrEngineFailed) {
			return &exitError{code: exitDiffer, err: err}
		}
		return f.maxMemory.explain(err)
	}
	if len(f.engine) > 0 {
		return errors.New("--engine runs a dynamic program's entry point: it needs --dynamic")
	}
	ga, err := a.Graph(0)
	if err != nil {
		return err
	}
	gb, err := b.Graph(f.candidate)
	if err != nil {
		return err
	}
	if err := check.StaticAgainstDynamic(a.Path, ga, b, gb, f.candidate); err != nil {
		return err
	}
	ctx := cmd.Context()
	if opts.Method == check.Emu {
		// The emulated run stops on the first Ctrl-C, and its build
		// directory goes with it; the other methods keep the default
		// handling (the first signal ends the process).
		var stop func()
		ctx, stop = driver.InterruptibleSaying(ctx, cmd.ErrOrStderr(), "stopping the emulated run")
		defer stop()
	}
	same, err := check.Graphs(ctx, w, check.Named{Path: a.Path, Graph: ga}, check.Named{Path: b.Path, Graph: gb, Arch: check.DocumentArch(b)}, opts)
	if ctx.Err() != nil {
		return interrupted("verify")
	}
	return verdict(same, f.maxMemory.explain(err))
}

// verdict is the exit of a check: an error, or the status that says
// whether the programs agree.
func verdict(same bool, err error) error {
	if err == nil && !same {
		return &exitError{code: exitDiffer}
	}
	return err
}

// interrupted is the exit of a command stopped by Ctrl-C or SIGTERM that
// has nothing to finish with: its temporary files are gone.
func interrupted(what string) error {
	return &exitError{code: driver.ExitInterrupted, err: fmt.Errorf("%s: interrupted", what)}
}
