package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError explains a flag the command does not have: the nearest of its
// own where the flag is a likely typo of one (--time-limt), the commands
// that have it where others do (show -o), and else, for a command that
// reads programs, where a program's own arguments go (after --).
func flagError(cmd *cobra.Command, err error) error {
	name, short, ok := unknownFlag(err.Error())
	if !ok {
		return err
	}
	if !short {
		if near := nearestFlag(cmd, name); near != "" {
			return fmt.Errorf("%w (did you mean --%s?)", err, near)
		}
	}
	var why []string
	if others := commandsWith(cmd, name, short); len(others) > 0 {
		why = append(why, fmt.Sprintf("a flag of mirage %s, not of %s", list(others), cmd.Name()))
	}
	if cmd.Flags().Lookup("strict") != nil && cmd.Name() != "bench" { // the commands that pass a program its arguments
		why = append(why, fmt.Sprintf("a program's own arguments go after --: mirage %s FILE -- --bs 8", cmd.Name()))
	}
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(why, "; "))
}

// list joins names as a sentence does: "a", "a and b", "a, b and c".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// unknownFlag reads the flag out of pflag's error for one it does not
// know: "unknown flag: --name" or "unknown shorthand flag: 'o' in -o".
func unknownFlag(msg string) (name string, short, ok bool) {
	if rest, found := strings.CutPrefix(msg, "unknown flag: --"); found {
		name, _, _ = strings.Cut(rest, "=")
		return name, false, name != ""
	}
	if rest, found := strings.CutPrefix(msg, "unknown shorthand flag: '"); found {
		if c, _, found := strings.Cut(rest, "'"); found && c != "" {
			return c, true, true
		}
	}
	return "", false, false
}

// nearestFlag is the flag of cmd whose name is within two edits of name
// (and less than a third of it), the nearest; "" if none is.
func nearestFlag(cmd *cobra.Command, name string) string {
	best, bestD := "", 3
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); d < bestD && 3*d < len(f.Name) {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// commandsWith names mirage's other commands that have the flag.
func commandsWith(cmd *cobra.Command, name string, short bool) []string {
	var names []string
	for _, c := range cmd.Root().Commands() {
		if c == cmd || c.Hidden {
			continue
		}
		var f *pflag.Flag
		if short {
			f = c.Flags().ShorthandLookup(name)
		} else {
			f = c.Flags().Lookup(name)
		}
		if f != nil {
			names = append(names, c.Name())
		}
	}
	slices.Sort(names)
	return names
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
