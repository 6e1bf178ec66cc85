package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/target"
)

// archFlag is --arch: a name from target's table, checked when the flag is
// parsed, so a bad name is refused before any work.
type archFlag struct{ target.Arch }

func (a *archFlag) String() string { return a.Name }
func (a *archFlag) Type() string   { return "arch" }

func (a *archFlag) Set(name string) error {
	arch, err := target.Lookup(name)
	if err != nil {
		return err
	}
	a.Arch = arch
	return nil
}

// registerArch adds --arch to cmd, target.Default unless given; what says
// what the arch decides for the command.
func registerArch(cmd *cobra.Command, a *archFlag, what string) {
	a.Arch = target.MustLookup(target.Default)
	var known []string
	for _, arch := range target.Archs() {
		known = append(known, fmt.Sprintf("%s (%s)", arch.Name, arch.GPU))
	}
	cmd.Flags().Var(a, "arch", "target architecture: "+strings.Join(known, " or ")+": "+what)
}
