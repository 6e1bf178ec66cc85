package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/memlimit"
)

// loadFlags are the flags of every command that reads inputs, and the
// program's own arguments, given after --.
type loadFlags struct {
	strict bool
	args   []string // after --: frontend.Options.Args of every .py input
}

// files checks a command's arguments: n files, then optionally -- and the
// arguments of the program(s) among them (mirage superopt rmsnorm.py --
// --bs 8), which it keeps for load.
func (f *loadFlags) files(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		files := args
		if d := cmd.ArgsLenAtDash(); d >= 0 {
			files, f.args = args[:d], args[d:]
		}
		if len(files) != n {
			what := map[int]string{1: "one file", 2: "two files"}[n]
			if len(files) > n {
				return fmt.Errorf("%s takes %s, not %d (usage: %s; a program's own arguments go after --: mirage %s FILE -- --bs 8)", cmd.Name(), what, len(files), cmd.UseLine(), cmd.Name())
			}
			return fmt.Errorf("%s takes %s (usage: %s)", cmd.Name(), what, cmd.UseLine())
		}
		if len(f.args) > 0 && !slices.ContainsFunc(files, driver.IsProgram) {
			return fmt.Errorf("the arguments after -- (%s) are a program's, and %s holds no .py program", strings.Join(f.args, " "), strings.Join(files, " and "))
		}
		return nil
	}
}

func (f *loadFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.strict, "strict", false, "refuse imports of modules other than mirage (by default torch, numpy, os, ... are inert stubs, with one warning)")
	// Loading became lenient by default; --lenient stays so that scripts
	// that pass it still work.
	cmd.Flags().Bool("lenient", false, "no effect: loading is lenient by default (other modules are inert stubs; --strict refuses them)")
	cmd.MarkFlagsMutuallyExclusive("strict", "lenient")
}

// load reads the input file at path; warnings from the front-end go to
// cmd's error stream.
func (f *loadFlags) load(cmd *cobra.Command, path string) (*driver.Input, error) {
	return driver.Load(path, f.options(cmd))
}

// options are the front-end's options: the program's arguments, its
// prints and the loader's warnings to cmd's error stream.
func (f *loadFlags) options(cmd *cobra.Command) frontend.Options {
	return frontend.Options{
		Strict: f.strict,
		Args:   f.args,
		Stdout: cmd.ErrOrStderr(),
		Warn:   func(msg string) { fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", msg) },
	}
}

// memoryFlag is the --max-memory flag of the commands that evaluate
// graphs: the bound on the memory an evaluation may take, in bytes.
type memoryFlag int64

func (f *memoryFlag) register(cmd *cobra.Command) {
	*f = memlimit.Default
	cmd.Flags().Var(f, "max-memory", "refuse evaluations that would take more memory than `SIZE` (e.g. 512MiB, 16GiB)")
}

func (f *memoryFlag) String() string {
	if *f == 0 {
		return "0" // unset (merge's): help prints no default
	}
	return memlimit.Format(int64(*f))
}
func (f *memoryFlag) Type() string { return "size" }

func (f *memoryFlag) Set(s string) error {
	n, err := memlimit.Parse(s)
	*f = memoryFlag(n)
	return err
}

// explain adds to an error of work over the memory bound how to raise it.
func (f *memoryFlag) explain(err error) error {
	if memlimit.IsOver(err) {
		return fmt.Errorf("%w (--max-memory raises the limit)", err)
	}
	return err
}
