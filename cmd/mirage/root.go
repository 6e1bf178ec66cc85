package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "mirage",
		Short:         "A superoptimizer for tensor programs (multi-level μGraphs)",
		Long:          help("mirage"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --cpuprofile and --memprofile are for developers of mirage: where a
	// search spends its time, and what it holds at the end (go tool pprof
	// mirage FILE).
	var cpuprofile, memprofile string
	var profile *os.File
	root.PersistentFlags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to `FILE`")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	_ = root.MarkPersistentFlagFilename("cpuprofile")
	root.PersistentFlags().StringVar(&memprofile, "memprofile", "", "write a heap profile to `FILE` when the command ends")
	_ = root.PersistentFlags().MarkHidden("memprofile")
	_ = root.MarkPersistentFlagFilename("memprofile")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := checkPaths(cmd, args); err != nil {
			return err
		}
		if cpuprofile == "" {
			return nil
		}
		f, err := os.Create(cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		profile = f
		return pprof.StartCPUProfile(f)
	}
	// Stopped on every way out, failures included.
	cobra.OnFinalize(func() {
		if profile != nil {
			pprof.StopCPUProfile()
			profile.Close()
			profile = nil
		}
		if memprofile != "" {
			if f, err := os.Create(memprofile); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			memprofile = ""
		}
	})
	root.SetFlagErrorFunc(flagError)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newSuperoptCmd(),
		newMergeCmd(),
		newEmitCmd(),
		newBenchCmd(),
		newShowCmd(),
		newEvalCmd(),
		newVerifyCmd(),
		newTuneCmd(),
		newVersionCmd(),
	)
	strictHelpCommands(root)
	return root
}

// strictHelpCommands makes cobra's help and completion commands fail on
// what they do not know (exit status 2), as every other command does:
// `mirage help nonexist` printed "Unknown help topic" and exited 0, and
// `mirage completion nope` printed its help and exited 0.
func strictHelpCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Run = nil
			c.RunE = func(c *cobra.Command, args []string) error {
				cmd, _, err := c.Root().Find(args)
				if err != nil || cmd == nil {
					return fmt.Errorf("unknown help topic %q (mirage --help lists the commands)", strings.Join(args, " "))
				}
				return cmd.Help()
			}
		case "completion":
			c.Args = cobra.NoArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
}

// writeJSON writes v to w as indented JSON, the form of every --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
