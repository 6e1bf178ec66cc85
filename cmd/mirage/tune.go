package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/tune"
)

// tuneFlags are the flags of mirage tune.
type tuneFlags struct {
	load       loadFlags
	arch       archFlag
	candidates int
	runs       int
	warmup     int
	timeout    time.Duration
	out        string
	program    string
	asJSON     bool
	emulate    bool
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune FILE.ugraph.json",
		Short: "Time a μGraph file's best candidates on the GPU and write the profile superopt ranks by",
		Long:  help("tune"),
		Args:  f.load.files(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	registerDocumentArch(cmd, &f.arch, "the code built, the GPU it must run on, and the cost model's estimates")
	fl := cmd.Flags()
	fl.IntVar(&f.candidates, "candidates", 4, "how many of the file's graphs to time, best first (0: all)")
	fl.IntVar(&f.runs, "runs", 200, "timed runs of each candidate (the median is kept)")
	fl.IntVar(&f.warmup, "warmup", 20, "untimed runs of each candidate first (at least 1: the first loads the code and creates cuBLASLt's handle)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "stop the timing program after this long (a kernel that hangs)")
	fl.StringVarP(&f.out, "out", "o", "", "the profile to write (default: profile_ARCH.json beside FILE)")
	fl.StringVar(&f.program, "program", "", "the program's name the profile keys the times by (default: the file's)")
	fl.BoolVar(&f.asJSON, "json", false, "print the measurements as JSON")
	// --emulate runs the timing program in the CPU emulator: mirage's own
	// tests of tune on machines without a GPU. Its times are the CPU's.
	fl.BoolVar(&f.emulate, "emulate", false, "build for the CPU emulator instead of the GPU (for testing tune; the times are meaningless)")
	_ = fl.MarkHidden("emulate")
	pathFlags(cmd, "out")
	return cmd
}

func (f *tuneFlags) run(cmd *cobra.Command, path string) error {
	if err := checkNotNegative(cmd, "candidates"); err != nil {
		return err
	}
	if f.runs < 1 || f.warmup < 1 {
		return fmt.Errorf("--runs %d, --warmup %d: want at least one of each (the first run loads the code and creates cuBLASLt's handle)", f.runs, f.warmup)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", f.timeout)
	}
	if driver.IsProgram(path) {
		return fmt.Errorf("%s: tune times the candidates of a μGraph file (superopt FILE.py --max-candidates K writes one)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	f.arch.fromDocument(cmd, in)
	switch _, _, dynamic, err := driver.ReadDynamic(in.File); {
	case err != nil:
		return fmt.Errorf("%s: %v", path, err)
	case dynamic:
		return fmt.Errorf("%s: a dynamic program's document: tune one bucket's graphs (show --candidate) at a time", path)
	}
	out := f.out
	if out == "" {
		out = filepath.Join(filepath.Dir(path), "profile_"+f.arch.Arch.Name+".json")
	}
	// Before the GPU's minutes are spent: where the profile goes exists,
	// and is not taken by a directory.
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return fmt.Errorf("-o %s: %s is not a directory", out, filepath.Dir(out))
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return fmt.Errorf("-o %s: a directory; -o names the profile file to write", out)
	}
	program := in.File.Name
	if f.program != "" {
		program = f.program
	}
	// Interruptible: the build directory goes on Ctrl-C or SIGTERM too.
	ctx, stop := driver.InterruptibleSaying(cmd.Context(), cmd.ErrOrStderr(), "stopping the timing")
	defer stop()
	res, err := tune.Run(ctx, in.File, tune.Options{Arch: f.arch.Arch, Program: program, Candidates: f.candidates,
		Runs: f.runs, Warmup: f.warmup, Timeout: f.timeout, Emulate: f.emulate})
	if ctx.Err() != nil {
		return interrupted("tune")
	}
	if errors.Is(err, tune.ErrNoGPU) || errors.Is(err, tune.ErrNoNVCC) {
		return fmt.Errorf("tune needs a GPU and nvcc: %v", err)
	}
	if errors.Is(err, tune.ErrNothingMeasured) {
		res.WriteTable(cmd.ErrOrStderr(), "") // why each failed
		return fmt.Errorf("%s: %v; %s is left as it was", path, err, out)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := res.WriteProfile(out); err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), res.Report(f.arch.Arch.Name, program, out))
	}
	res.WriteTable(cmd.OutOrStdout(), out)
	return nil
}
