// Package z3 is a small binding to the Z3 theorem prover's C API: just what
// mirage's abstract-expression oracle needs (uninterpreted sorts and
// functions, integer arithmetic, quantifiers with patterns, incremental
// solvers).
//
// # Loading
//
// Nothing at build time needs Z3. The shared library is opened with dlopen at
// first use: $MIRAGE_LIBZ3 when set, else libz3.so.4, else libz3.so. The
// few prototypes the binding calls are declared in shim.h, not taken from
// z3.h. [Available] reports why Z3 cannot be used; NewContext returns that
// error too, so commands that need Z3 fail with a message that says what to
// install. A build without cgo compiles (nocgo.go) and reports so.
//
// # Ownership
//
// Contexts are made with Z3_mk_context_rc: every AST the binding hands out is
// reference-counted. The binding takes the reference when it makes the AST
// and records it in an [Arena]; [Arena.Release] drops them all at once. A
// [Context] has one permanent arena (released by [Context.Close]) and any
// number of short-lived ones, typically one per query. An AST must not be
// used after its arena is released. [Live] counts what is alive, so tests can
// show that a workload leaks nothing.
//
// # Errors
//
// Z3's default error handler exits the process. Each context gets a handler
// that records the error instead; the call that raised it returns it as a Go
// error. Building ASTs uses an arena's sticky error (see [Arena.Err]) so that
// encoders read like the formulas they build.
//
// # Goroutines
//
// A Context, and everything made from it, must be used by one goroutine at a
// time; contexts are never shared. Separate contexts run in parallel. The one
// exception is [Context.Interrupt], which any goroutine may call at any time.
//
// # Bounding a query
//
// Z3's own timeout can overshoot by orders of magnitude while it instantiates
// quantifiers (E-matching in a large e-graph does not poll for cancellation),
// so a check is bounded several ways: a cap on quantifier instances, which
// bounds the work; model-based quantifier instantiation off unless asked
// for; the solver's timeout parameter; a Go timer that calls Z3_interrupt
// when Z3 overruns it; and, should Z3 ignore even that, abandonment: Check
// returns at 1.6× its timeout and the check finishes in the background
// (ErrAbandoned), the context refusing work until it does. Parameters are
// set per solver through Z3_params, never through process-global ones.
package z3
