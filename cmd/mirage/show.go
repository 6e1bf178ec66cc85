package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/inspect"
)

// showFlags are the flags of mirage show.
type showFlags struct {
	load      loadFlags
	asJSON    bool
	asDot     bool
	asAbsexpr bool
	estimate  bool
	arch      archFlag
	candidate int
	dynamic   dynamicFlags
}

func newShowCmd() *cobra.Command {
	var f showFlags
	cmd := &cobra.Command{
		Use:   "show FILE [-- PROGRAM-ARGS]",
		Short: "Print a program or μGraph file: every op with its output shape",
		Long:  help("show"),
		Args:  f.load.files(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.asJSON, "json", false, "print the graph(s) as a .ugraph.json document")
	fl.BoolVar(&f.asDot, "dot", false, "print the graph as Graphviz DOT")
	fl.BoolVar(&f.asAbsexpr, "absexpr", false, "print each tensor's abstract expression")
	fl.BoolVar(&f.estimate, "estimate", false, "print the cost model's estimate, per kernel and in total")
	registerDocumentArch(cmd, &f.arch, "the cost model of --estimate")
	fl.IntVar(&f.candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	f.dynamic.register(cmd, true)
	return cmd
}

func (f *showFlags) run(cmd *cobra.Command, path string) error {
	forms := 0
	for _, on := range []bool{f.asJSON && !f.estimate, f.asDot, f.asAbsexpr, f.estimate} {
		if on {
			forms++
		}
	}
	if forms > 1 {
		return fmt.Errorf("--json, --dot, --absexpr and --estimate exclude each other (--estimate takes --json)")
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	f.arch.fromDocument(cmd, in)
	out := cmd.OutOrStdout()
	if f.dynamic.on() || f.dynamic.buckets != "" { // (--buckets alone: mark says it needs --dynamic)
		// The program with m: its shapes, or the op that mixes rows.
		if forms > 0 || f.asJSON {
			return errors.New("--dynamic prints the program's shapes with m; it takes no --json, --dot, --absexpr or --estimate")
		}
		d, err := f.dynamic.mark(in, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "# m in %d..%d, buckets %v\n", d.Lo, d.Hi, d.Buckets)
		if d.Program.Padded() {
			fmt.Fprintf(out, "# m is inside an outer dim: the entry point copies the inputs and outputs with m through buffers of the bucket's rows\n")
		}
		return inspect.Text(out, d.Program)
	}
	// A dynamic document's buckets: a damaged one's (an edited meta) are
	// nil, and its graphs are still shown one by one; only the estimate
	// of every bucket needs them.
	_, buckets, dynamic, dynErr := driver.ReadDynamic(in.File)
	picked := cmd.Flags().Changed("candidate")
	if !picked && !f.estimate && !f.asDot {
		if f.asJSON {
			return in.File.Encode(out)
		}
		return f.all(cmd, in, buckets)
	}
	if !picked && f.estimate && dynamic {
		if dynErr != nil {
			return fmt.Errorf("%s: %v (show --estimate --candidate N estimates one graph)", in.Path, dynErr)
		}
		return f.estimateBuckets(cmd, in, buckets)
	}
	g, err := in.Graph(f.candidate)
	if err != nil {
		return err
	}
	switch {
	case f.estimate && f.asJSON:
		e, err := inspect.Estimate(g, f.arch.Arch)
		if err != nil {
			return fmt.Errorf("%s: %v", in.Path, err)
		}
		return writeJSON(out, e)
	case f.estimate:
		if err := inspect.WriteEstimate(out, g, f.arch.Arch); err != nil {
			return fmt.Errorf("%s: %v", in.Path, err)
		}
		return nil
	case f.asJSON:
		return inspect.Document(out, in.Name, g)
	case f.asDot:
		return inspect.Dot(out, g)
	case f.asAbsexpr:
		return inspect.Absexpr(out, g)
	}
	return inspect.Text(out, g)
}

// all prints every graph of in, numbered when there are several; a
// dynamic document's (buckets not nil) with its bucket and rank.
func (f *showFlags) all(cmd *cobra.Command, in *driver.Input, buckets []driver.DocBucket) error {
	print := inspect.Text
	if f.asAbsexpr {
		print = inspect.Absexpr
	}
	where := map[int]string{}
	for _, b := range buckets {
		for rank, i := range b.Index {
			where[i] = fmt.Sprintf(": bucket %d (m %d..%d), rank %d", b.Size, b.Lo, b.Hi, rank)
		}
	}
	out := cmd.OutOrStdout()
	for i, e := range in.File.Graphs {
		if len(in.File.Graphs) > 1 {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "# candidate %d%s\n", i, where[i])
		}
		if err := print(out, e.Graph); err != nil {
			return err
		}
	}
	return nil
}

// bucketEstimate is one bucket of show --estimate --json on a dynamic
// document.
type bucketEstimate struct {
	Bucket    int                    `json:"bucket"`
	Lo        int                    `json:"lo"`
	Hi        int                    `json:"hi"`
	Candidate int                    `json:"candidate"` // the graph's place in the document
	Rows      int                    `json:"rows"`      // the m the graph is written for
	Estimate  *inspect.GraphEstimate `json:"estimate"`
}

// estimateBuckets prints, for each bucket of a dynamic document, the
// estimate of the graph emit writes for it (the bucket's best), at the
// rows that graph is written for.
func (f *showFlags) estimateBuckets(cmd *cobra.Command, in *driver.Input, buckets []driver.DocBucket) error {
	out := cmd.OutOrStdout()
	var all []bucketEstimate
	for k, b := range buckets {
		g := b.Graphs[0]
		if f.asJSON {
			e, err := inspect.Estimate(g, f.arch.Arch)
			if err != nil {
				return fmt.Errorf("%s: bucket %d: %v", in.Path, b.Size, err)
			}
			all = append(all, bucketEstimate{b.Size, b.Lo, b.Hi, b.Index[0], b.Rows[0], e})
			continue
		}
		if k > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "# bucket %d (m %d..%d): candidate %d, the bucket's best, written for %d row(s)\n", b.Size, b.Lo, b.Hi, b.Index[0], b.Rows[0])
		if err := inspect.WriteEstimate(out, g, f.arch.Arch); err != nil {
			return fmt.Errorf("%s: bucket %d: %v", in.Path, b.Size, err)
		}
	}
	if f.asJSON {
		return writeJSON(out, map[string]any{"buckets": all})
	}
	return nil
}
