package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pathFlags marks cmd's flags names as paths (files or directories): an
// empty one is then refused (checkPaths), and shells complete them.
func pathFlags(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		if err := cmd.MarkFlagFilename(name); err != nil {
			panic(err) // a name of a flag the command does not have
		}
	}
}

// checkPaths refuses an empty path, given as a path flag or as an
// argument (every argument before -- is a path): "" would otherwise read
// as the flag left out (an empty --compare comparing with nothing, an
// empty --history running the whole suite) or as the working directory.
// It refuses any other string flag given as "" too (--name or --buckets
// from an unset variable in a script), which no flag takes for a value.
func checkPaths(cmd *cobra.Command, args []string) error {
	var err error
	visit := func(f *pflag.Flag) {
		if err != nil || f.Value.String() != "" {
			return
		}
		if _, isPath := f.Annotations[cobra.BashCompFilenameExt]; isPath {
			err = fmt.Errorf("--%s '': an empty path names no file", f.Name)
		} else if f.Value.Type() == "string" {
			err = fmt.Errorf("--%s '': an empty value (leave the flag out for its default)", f.Name)
		}
	}
	cmd.Flags().Visit(visit) // the flags given, the inherited ones among them
	if err != nil {
		return err
	}
	if d := cmd.ArgsLenAtDash(); d >= 0 {
		args = args[:d]
	}
	for i, a := range args {
		if a == "" {
			return fmt.Errorf("argument %d is '': an empty path names no file", i+1)
		}
	}
	return nil
}

// checkNotNegative returns an error naming the first of cmd's flags names
// (durations and ints, where 0 means no limit) that is negative.
func checkNotNegative(cmd *cobra.Command, names ...string) error {
	fl := cmd.Flags()
	for _, name := range names {
		var neg bool
		switch f := fl.Lookup(name); f.Value.Type() {
		case "duration":
			d, _ := fl.GetDuration(name)
			neg = d < 0
		case "int":
			n, _ := fl.GetInt(name)
			neg = n < 0
		case "int64":
			n, _ := fl.GetInt64(name)
			neg = n < 0
		default:
			panic("checkNotNegative: --" + name + " is a " + f.Value.Type())
		}
		if neg {
			return fmt.Errorf("--%s %s: want 0 or more", name, fl.Lookup(name).Value)
		}
	}
	return nil
}
