package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
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
	// By CUDA architecture, the one named after it first: sm_80, sm_90,
	// then the other GPUs of sm_90.
	archs := target.Archs()
	slices.SortStableFunc(archs, func(x, y target.Arch) int {
		return cmp.Or(cmp.Compare(x.CUDA, y.CUDA), cmp.Compare(boolRank(x.Name != x.CUDA), boolRank(y.Name != y.CUDA)))
	})
	var known []string
	for _, arch := range archs {
		gpu := arch.GPU
		if arch.Name != arch.CUDA {
			gpu += ", " + arch.CUDA + " code"
		}
		known = append(known, fmt.Sprintf("%s (%s)", arch.Name, gpu))
	}
	list := strings.Join(known[:len(known)-1], ", ") + " or " + known[len(known)-1]
	cmd.Flags().Var(a, "arch", "target architecture: "+list+": "+what)
}

// registerDocumentArch is registerArch for a command that reads μGraph
// documents, whose --arch defaults to the one a document was written for
// (fromDocument).
func registerDocumentArch(cmd *cobra.Command, a *archFlag, what string) {
	registerArch(cmd, a, what+" (default: the arch a superopt document was written for, else "+target.Default+")")
	cmd.Flags().Lookup("arch").DefValue = "" // said above: pflag would add "(default sm_90)"
}

// fromDocument sets a to the arch a μGraph document was written for
// (driver.Input.Arch) when --arch was not given: a document superopt wrote
// for sm_80 is shown and emitted for sm_80.
func (a *archFlag) fromDocument(cmd *cobra.Command, in *driver.Input) {
	if cmd.Flags().Changed("arch") {
		return
	}
	if arch, ok := in.Arch(); ok {
		a.Arch = arch
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
