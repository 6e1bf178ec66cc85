package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "mirage",
		Short: "A superoptimizer for tensor programs (multi-level μGraphs)",
		Long: `mirage reads a tensor program written in Mirage's Python API (a .py file,
run hermetically in Starlark) or a μGraph file (.ugraph.json), and shows,
evaluates or verifies it.

Exit status: 0 on success, 1 when verify finds that programs differ,
2 for unusable input (unreadable file, invalid graph, bad flag).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newSuperoptCmd(),
		newShowCmd(),
		newEvalCmd(),
		newVerifyCmd(),
		newVersionCmd(),
	)
	return root
}
