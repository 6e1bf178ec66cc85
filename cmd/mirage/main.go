// Command mirage is the command-line interface of the μGraph
// superoptimizer: it reads tensor programs written in Mirage's Python API
// (run hermetically in Starlark) and μGraph files (.ugraph.json), shows,
// evaluates and verifies them.
//
// Exit status: 0 on success, 1 when verify finds the programs differ, 2 for
// unusable input (an unreadable file, an invalid graph, a bad flag).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/internal/memlimit"
)

func main() {
	// The garbage collector's soft limit, unless the user set one: a search
	// at 70B shapes would otherwise let its heap grow to twice its live data.
	if os.Getenv("GOMEMLIMIT") == "" {
		if l := memlimit.SoftLimit(); l > 0 {
			debug.SetMemoryLimit(l)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK       = 0
	exitDiffer   = 1 // verify: the programs are not equivalent
	exitUnusable = 2 // unusable input or usage error
)

// exitError carries an exit status other than exitUnusable, the status of
// every other error.
type exitError struct {
	code int
	err  error // printed unless nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	driver.RemoveMadeDirs() // an output directory the command made and left empty
	if err == nil {
		return exitOK
	}
	code := exitUnusable
	if e, ok := err.(*exitError); ok {
		code = e.code
		err = e.err
	}
	if err != nil {
		fmt.Fprintf(stderr, "mirage: %v\n", err)
	}
	return code
}
