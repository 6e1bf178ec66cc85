package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

func newShowCmd() *cobra.Command {
	var (
		lf        loadFlags
		asJSON    bool
		asDot     bool
		candidate int
	)
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print a program or μGraph file: every op with its output shape",
		Long: `show prints every op of a program (.py) or μGraph file (.ugraph.json) with
its output shape and dtype; graph-defined kernels are nested with their grid,
for-loop range, and input, output and for-loop maps.

With --json it prints the graph(s) as a .ugraph.json document; with --dot, as
Graphviz. For a file holding several candidates, --candidate picks one
(default: all for the text form, 0 for --dot).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asDot {
				return fmt.Errorf("--json and --dot exclude each other")
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
			if picked {
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				return kernel.Fprint(out, g)
			}
			for i, e := range in.File.Graphs {
				if len(in.File.Graphs) > 1 {
					if i > 0 {
						fmt.Fprintln(out)
					}
					fmt.Fprintf(out, "# candidate %d\n", i)
				}
				if err := kernel.Fprint(out, e.Graph); err != nil {
					return err
				}
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the graph(s) as a .ugraph.json document")
	cmd.Flags().BoolVar(&asDot, "dot", false, "print the graph as Graphviz DOT")
	cmd.Flags().IntVar(&candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	return cmd
}
