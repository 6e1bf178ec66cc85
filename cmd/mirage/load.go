package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// input is a file named on the command line: a program (.py) or a μGraph
// document (.ugraph.json) holding one or more kernel graphs.
type input struct {
	Path    string
	Name    string
	File    *kernel.File      // the graphs, one for a program
	Program *frontend.Program // set for a .py program
}

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
		if err := cobra.ExactArgs(n)(cmd, files); err != nil {
			return err
		}
		if len(f.args) > 0 && !slices.ContainsFunc(files, isProgram) {
			return fmt.Errorf("the arguments after -- (%s) are a program's, and %s holds no .py program", strings.Join(f.args, " "), strings.Join(files, " and "))
		}
		return nil
	}
}

func isProgram(path string) bool { return strings.HasSuffix(path, ".py") }

// argsHint adds to an unknown flag's error where a program's own
// arguments go.
func argsHint(cmd *cobra.Command, err error) error {
	if cmd.Flags().Lookup("strict") != nil && strings.HasPrefix(err.Error(), "unknown ") {
		return fmt.Errorf("%w (a program's own arguments go after --: mirage %s FILE -- --bs 8)", err, cmd.Name())
	}
	return err
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
func (f *loadFlags) load(cmd *cobra.Command, path string) (*input, error) {
	switch {
	case isProgram(path):
		p, err := frontend.LoadFile(path, f.frontendOptions(cmd))
		if err != nil {
			return nil, err
		}
		return programInput(path, p), nil
	case strings.HasSuffix(path, ".json"):
		file, err := kernel.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return documentInput(path, file), nil
	}
	return nil, fmt.Errorf("%s: unknown kind of file (want a .py program or a .ugraph.json μGraph file)", path)
}

// loadSource is load for a file already read: src is the text of path.
func (f *loadFlags) loadSource(cmd *cobra.Command, path string, src []byte) (*input, error) {
	switch {
	case isProgram(path):
		p, err := frontend.Load(path, src, f.frontendOptions(cmd))
		if err != nil {
			return nil, err
		}
		return programInput(path, p), nil
	case strings.HasSuffix(path, ".json"):
		file, err := kernel.Decode(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return documentInput(path, file), nil
	}
	return nil, fmt.Errorf("%s: unknown kind of file (want a .py program or a .ugraph.json μGraph file)", path)
}

func (f *loadFlags) frontendOptions(cmd *cobra.Command) frontend.Options {
	return frontend.Options{
		Strict: f.strict,
		Args:   f.args,
		Stdout: cmd.ErrOrStderr(),
		Warn:   func(msg string) { fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", msg) },
	}
}

func programInput(path string, p *frontend.Program) *input {
	return &input{Path: path, Name: p.Name, File: kernel.NewFile(p.Name, p.Graph), Program: p}
}

func documentInput(path string, file *kernel.File) *input {
	name := file.Name
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".json"), ".ugraph")
	}
	return &input{Path: path, Name: name, File: file}
}

// memoryFlag is the --max-memory flag of the commands that evaluate
// graphs: the bound on the memory an evaluation may take, in bytes.
type memoryFlag int64

func (f *memoryFlag) register(cmd *cobra.Command) {
	*f = memlimit.Default
	cmd.Flags().Var(f, "max-memory", "refuse evaluations that would take more memory than `SIZE` (e.g. 512MiB, 16GiB)")
}

func (f *memoryFlag) String() string { return memlimit.Format(int64(*f)) }
func (f *memoryFlag) Type() string   { return "size" }

func (f *memoryFlag) Set(s string) error {
	n, err := memlimit.Parse(s)
	*f = memoryFlag(n)
	return err
}

// explain adds to an error of work over the memory bound how to raise it.
func (f *memoryFlag) explain(err error) error {
	var e *memlimit.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%w (--max-memory raises the limit)", err)
	}
	return err
}

// graph returns the n-th graph of the input (0 for a program).
func (in *input) graph(n int) (*kernel.Graph, error) {
	if n < 0 || n >= len(in.File.Graphs) {
		return nil, fmt.Errorf("%s: no candidate %d (the file holds %d graph(s), numbered from 0)", in.Path, n, len(in.File.Graphs))
	}
	return in.File.Graphs[n].Graph, nil
}
