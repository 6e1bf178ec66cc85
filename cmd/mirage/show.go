package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/ugraph"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

func newShowCmd() *cobra.Command {
	var (
		lf        loadFlags
		asJSON    bool
		asDot     bool
		asAbsexpr bool
		candidate int
	)
	cmd := &cobra.Command{
		Use:   "show FILE [-- PROGRAM-ARGS]",
		Short: "Print a program or μGraph file: every op with its output shape",
		Long: `show prints every op of a program (.py) or μGraph file (.ugraph.json) with
its output shape and dtype; graph-defined kernels are nested with their grid,
for-loop range, and input, output and for-loop maps.

With --json it prints the graph(s) as a .ugraph.json document; with --dot, as
Graphviz; with --absexpr, the abstract expression of every tensor and tile
(the k-th input is inK), as the search's pruning sees them. For a file holding several candidates, --candidate picks one
(default: all for the text form, 0 for --dot).`,
		Args: lf.files(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n := countTrue(asJSON, asDot, asAbsexpr); n > 1 {
				return fmt.Errorf("--json, --dot and --absexpr exclude each other")
			}
			in, err := lf.load(cmd, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			picked := cmd.Flags().Changed("candidate")
			switch {
			case asJSON:
				f := in.File
				if picked {
					g, err := in.graph(candidate)
					if err != nil {
						return err
					}
					f = kernel.NewFile(in.Name, g)
				}
				return f.Encode(out)
			case asDot:
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				return kernel.WriteDot(out, g)
			}
			print := kernel.Fprint
			if asAbsexpr {
				print = printAbsexpr
			}
			if picked {
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				return print(out, g)
			}
			for i, e := range in.File.Graphs {
				if len(in.File.Graphs) > 1 {
					if i > 0 {
						fmt.Fprintln(out)
					}
					fmt.Fprintf(out, "# candidate %d\n", i)
				}
				if err := print(out, e.Graph); err != nil {
					return err
				}
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the graph(s) as a .ugraph.json document")
	cmd.Flags().BoolVar(&asDot, "dot", false, "print the graph as Graphviz DOT")
	cmd.Flags().BoolVar(&asAbsexpr, "absexpr", false, "print each tensor's abstract expression")
	cmd.Flags().IntVar(&candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	return cmd
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// printAbsexpr prints the abstract expression of every tensor of g, and of
// every tile of its graph-defined kernels, nested under them. Tensors
// without one (computed through concat) show "-".
func printAbsexpr(w io.Writer, g *kernel.Graph) error {
	exprs, err := absexpr.ForKernel(g)
	if err != nil {
		return err
	}
	show := func(e *absexpr.Expr) string {
		if e == nil {
			return "-"
		}
		return e.String()
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := range g.Ops {
		op := &g.Ops[i]
		for _, t := range op.Out {
			fmt.Fprintf(tw, "t%d\t%v\t%s\n", t, op.Kind, show(exprs[t]))
		}
		if op.Kind != ugraph.OpCustomized {
			continue
		}
		args := make([]*absexpr.Expr, len(op.In))
		for j, t := range op.In {
			args[j] = exprs[t]
		}
		tiles, _, err := absexpr.ForBlock(op.Block, args)
		if err != nil {
			return err
		}
		for _, bop := range op.Block.Ops {
			if bop.Out < 0 {
				continue // output ops: their tile is printed
			}
			name := bop.Kind.String()
			if bop.Kind == ugraph.OpForloopAccum {
				name += "(" + bop.Attr.Accum.String() + ")"
			}
			fmt.Fprintf(tw, "    s%d\t%s\t%s\n", bop.Out, name, show(tiles[bop.Out]))
		}
	}
	return tw.Flush()
}
