package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
)

// emitFlags are the flags of mirage emit.
type emitFlags struct {
	load       loadFlags
	outDir     string
	arch       archFlag
	candidate  int
	singleFile bool
	name       string
	asJSON     bool
	counters   bool
	dependent  bool
	dynamic    dynamicFlags
}

func newEmitCmd() *cobra.Command {
	var f emitFlags
	cmd := &cobra.Command{
		Use:   "emit FILE [-- PROGRAM-ARGS]",
		Short: "Write CUDA for a μGraph: NAME.cu, NAME.h and the device runtime",
		Long:  help("emit"),
		Args:  f.load.files(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	registerDocumentArch(cmd, &f.arch, "shared memory per block")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write the files into")
	fl.IntVar(&f.candidate, "candidate", 0, "which graph of a .ugraph.json file (0: the first, the best)")
	fl.BoolVar(&f.singleFile, "single-file", false, "inline the device runtime into NAME.cu")
	fl.StringVar(&f.name, "name", "", "the NAME of the files and of mirage_NAME (default: the program's name), so that several candidates can be linked together")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON manifest of what was written")
	fl.BoolVar(&f.counters, "counters", false, "run the code in the CPU emulator (needs g++) and report each kernel's memory traffic")
	fl.BoolVar(&f.dependent, "dependent-launch", false, "launch every graph-defined kernel as a programmatic dependent launch (sm_90+; by default only those after a cuBLASLt call, which the cost model prices)")
	f.dynamic.register(cmd, true)
	pathFlags(cmd, "out")
	return cmd
}

func (f *emitFlags) run(cmd *cobra.Command, path string) error {
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	f.arch.fromDocument(cmd, in)
	ctx := cmd.Context()
	if f.counters {
		// Interruptible: the emulator's build directory goes on Ctrl-C or
		// SIGTERM too.
		var stop func()
		ctx, stop = driver.InterruptibleSaying(ctx, cmd.ErrOrStderr(), "stopping the emulator and removing its build directory")
		defer stop()
	}
	e, err := driver.Emit(ctx, in, driver.EmitRequest{
		Name: f.name, Candidate: f.candidate, Arch: f.arch.Arch, SingleFile: f.singleFile, Dir: f.outDir,
		Dynamic: f.dynamic.specs, Buckets: f.dynamic.buckets, Counters: f.counters, DependentLaunch: f.dependent,
		Note: func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", s) },
	})
	if f.counters && ctx.Err() != nil {
		return interrupted("emit --counters")
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), e.Report())
	}
	return e.WriteSummary(cmd.OutOrStdout())
}
