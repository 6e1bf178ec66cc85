package z3

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// What does not depend on cgo: the loader's public face, errors, counters
// and options. The binding itself is in the files built with cgo; nocgo.go
// stands in for them when cgo is off.

// EnvLibrary names the environment variable that, when set, is the only
// library path tried.
const EnvLibrary = "MIRAGE_LIBZ3"

// ErrUnavailable matches (errors.Is) every error that means Z3 cannot be
// used here; the error's text says why and what to do.
var ErrUnavailable = errors.New("z3 unavailable")

type unavailableError struct{ msg string }

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

var lib struct {
	once    sync.Once
	err     error
	path    string
	version string
}

// Available loads libz3 if that has not been tried yet and reports why it
// cannot be used, or nil.
func Available() error {
	lib.once.Do(load)
	return lib.err
}

// Version is the loaded library's version ("4.8.12.0"), or "" when Z3 is not
// available.
func Version() string {
	if Available() != nil {
		return ""
	}
	return lib.version
}

// LibraryPath is the path libz3 was loaded from, or "".
func LibraryPath() string {
	if Available() != nil {
		return ""
	}
	return lib.path
}

// Error is an error Z3 reported through its error handler.
type Error struct {
	Op   string // the binding call that failed, e.g. "App"
	Code int    // Z3_error_code
	Msg  string // Z3's message
}

// Error reports the first line of Z3's message: some messages go on to list
// every legal parameter.
func (e *Error) Error() string {
	msg, _, _ := strings.Cut(e.Msg, "\n")
	return fmt.Sprintf("z3: %s: %s (code %d)", e.Op, msg, e.Code)
}

var (
	errClosed = errors.New("z3: context is closed")
	// ErrBusy is returned by calls on a context whose abandoned check (see
	// ErrAbandoned) still runs.
	ErrBusy = errors.New("z3: context is busy with an abandoned check")
	// ErrInterrupted is returned, with Unknown, by a Check that was
	// interrupted: by the Go timer because Z3 overran its own timeout, or
	// by Context.Interrupt. Z3 may leave the context's cancel flag raised
	// and then fail the next Push ("push canceled"); its authors' advice is
	// to abandon what depended on the push. Callers that push should make a
	// fresh context.
	ErrInterrupted = errors.New("z3: check interrupted")
	// ErrAbandoned is returned, with Unknown, by a Check that Z3 did not
	// end even after the interrupt: Z3 polls its cancel flag only at safe
	// points, and E-matching in a large e-graph can run on for seconds. The
	// check goes on in the background; until it ends the context refuses
	// work with ErrBusy and defers Close and Release. It wraps
	// ErrInterrupted.
	ErrAbandoned = fmt.Errorf("%w, and abandoned", ErrInterrupted)
)

// live counts what the binding holds across all contexts; see Live.
var live struct{ contexts, solvers, refs, abandoned atomic.Int64 }

// Counts is a snapshot of what the binding holds alive.
type Counts struct {
	Contexts  int64 // contexts not yet deleted
	Solvers   int64 // solvers not yet released
	Refs      int64 // AST references held by arenas
	Abandoned int64 // abandoned checks still running
}

// Live reports what is alive across all contexts. A workload that releases
// its arenas and closes its solvers and contexts returns these to where they
// were before it started, once its abandoned checks (if any) have ended.
func Live() Counts {
	return Counts{live.contexts.Load(), live.solvers.Load(), live.refs.Load(), live.abandoned.Load()}
}

// Result is the outcome of a satisfiability check.
type Result int8

const (
	Unknown Result = iota // Z3 gave up: timeout, instance cap, interrupt, incompleteness
	Sat
	Unsat
)

func (r Result) String() string {
	switch r {
	case Sat:
		return "sat"
	case Unsat:
		return "unsat"
	}
	return "unknown"
}

// SolverOptions bound what one check may cost. The zero value means no
// timeout, no instance cap and MBQI off.
type SolverOptions struct {
	// Timeout bounds one Check. It is the solver's own "timeout" parameter;
	// a check still running at 1.2×Timeout is interrupted (Z3_interrupt),
	// and one still running at 1.6×Timeout is abandoned (ErrAbandoned).
	Timeout time.Duration
	// MaxQuantifierInstances caps quantifier instantiations per check
	// (smt.qi.max_instances); 0 leaves Z3's default (no cap).
	MaxQuantifierInstances uint
	// MBQI turns model-based quantifier instantiation on. It finds models
	// that E-matching cannot, and can also run for very long; mirage leaves
	// it off and relies on E-matching with patterns.
	MBQI bool

	// z3TimeoutOff leaves Z3's own timeout unset, so that only the Go timer
	// bounds a check; tests use it to show that the timer alone suffices.
	z3TimeoutOff bool
}
