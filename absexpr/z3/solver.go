//go:build cgo

package z3

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"math"
	"strings"
	"time"
)

// Solver is an incremental Z3 solver (Z3_mk_solver) with its parameters.
type Solver struct {
	ctx     *Context
	s       C.Z3_solver
	timeout time.Duration
	closed  bool
	// run makes the Z3_solver_check call; tests replace it to stand in for
	// a check that ignores interrupts.
	run func() checkResult
}

// checkResult is what Z3_solver_check returned: a Z3_lbool and an error
// code.
type checkResult struct{ lbool, err int }

// NewSolver makes a solver on ctx with opts set through Z3_params.
func (ctx *Context) NewSolver(opts SolverOptions) (*Solver, error) {
	if err := ctx.usable(); err != nil {
		return nil, err
	}
	r := C.mz_mk_solver(ctx.c)
	if r.err != C.MZ_OK {
		return nil, ctx.fail("NewSolver", r.err)
	}
	s := &Solver{ctx: ctx, s: C.Z3_solver(r.p), timeout: opts.Timeout}
	s.run = func() checkResult {
		r := C.mz_solver_check(ctx.c, s.s)
		return checkResult{int(r.v), int(r.err)}
	}
	live.solvers.Add(1)
	if err := s.setParams(opts); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Solver) setParams(opts SolverOptions) error {
	ctx := s.ctx
	r := C.mz_mk_params(ctx.c)
	if r.err != C.MZ_OK {
		return ctx.fail("NewSolver: params", r.err)
	}
	p := C.Z3_params(r.p)
	defer C.mz_params_dec_ref(ctx.c, p)
	setUint := func(key string, v uint) C.int {
		return cstr(key, func(k *C.char) C.int { return C.mz_params_set_uint(ctx.c, p, k, C.uint(v)) })
	}
	setBool := func(key string, v bool) C.int {
		return cstr(key, func(k *C.char) C.int { return C.mz_params_set_bool(ctx.c, p, k, C.bool(v)) })
	}
	if code := setBool("mbqi", opts.MBQI); code != C.MZ_OK {
		return ctx.fail("NewSolver: mbqi", code)
	}
	if opts.MaxQuantifierInstances > 0 {
		if code := setUint("qi.max_instances", opts.MaxQuantifierInstances); code != C.MZ_OK {
			return ctx.fail("NewSolver: qi.max_instances", code)
		}
	}
	if opts.Timeout > 0 && !opts.z3TimeoutOff {
		ms := uint(min(max(opts.Timeout.Milliseconds(), 1), math.MaxUint32))
		if code := setUint("timeout", ms); code != C.MZ_OK {
			return ctx.fail("NewSolver: timeout", code)
		}
	}
	if code := C.mz_solver_set_params(ctx.c, s.s, p); code != C.MZ_OK {
		return ctx.fail("NewSolver: set params", code)
	}
	return nil
}

// Close releases the solver (once its context is idle); it is idempotent.
func (s *Solver) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.ctx.whenIdle(func() {
		C.mz_solver_dec_ref(s.ctx.c, s.s)
		live.solvers.Add(-1)
	})
}

// usable reports why the solver cannot be used now, or nil.
func (s *Solver) usable() error {
	if s.closed {
		return errors.New("z3: solver is closed")
	}
	return s.ctx.usable()
}

// Assert adds formula f.
func (s *Solver) Assert(f AST) error {
	if err := s.usable(); err != nil {
		return err
	}
	if f.p == nil {
		return &Error{Op: "Assert", Code: -1, Msg: "zero AST"}
	}
	if code := C.mz_solver_assert(s.ctx.c, s.s, f.p); code != C.MZ_OK {
		return s.ctx.fail("Assert", code)
	}
	return nil
}

// Push opens a scope; Pop(n) drops the n innermost scopes and everything
// asserted in them.
func (s *Solver) Push() error {
	if err := s.usable(); err != nil {
		return err
	}
	if code := C.mz_solver_push(s.ctx.c, s.s); code != C.MZ_OK {
		return s.ctx.fail("Push", code)
	}
	return nil
}

// Pop drops the n innermost scopes.
func (s *Solver) Pop(n uint) error {
	if err := s.usable(); err != nil {
		return err
	}
	if code := C.mz_solver_pop(s.ctx.c, s.s, C.uint(n)); code != C.MZ_OK {
		return s.ctx.fail("Pop", code)
	}
	return nil
}

// Check decides the conjunction of the assertions, within the solver's
// bounds. A check Z3 gives up on its own (timeout, instance cap,
// incompleteness) returns Unknown and no error; one that was interrupted
// returns Unknown and ErrInterrupted (or ErrAbandoned).
func (s *Solver) Check() (Result, error) {
	if err := s.usable(); err != nil {
		return Unknown, err
	}
	ctx := s.ctx
	ctx.beginCheck()
	if s.timeout <= 0 {
		r := s.run()
		return s.result(r, ctx.endCheck())
	}
	// The check runs on its own goroutine so that this one can stop
	// waiting for it. Z3's own timeout usually ends it; the Go timer only
	// steps in when Z3 overruns, because an interrupt taints the context.
	done := make(chan checkResult, 1)
	go func() { done <- s.run() }()
	timer := time.NewTimer(s.timeout * 6 / 5)
	defer timer.Stop()
	select {
	case r := <-done:
		return s.result(r, ctx.endCheck())
	case <-timer.C:
	}
	ctx.Interrupt()
	timer.Reset(s.timeout * 2 / 5)
	select {
	case r := <-done:
		return s.result(r, ctx.endCheck())
	case <-timer.C:
	}
	ctx.abandon(done)
	return Unknown, ErrAbandoned
}

// result reads what Z3_solver_check returned.
func (s *Solver) result(r checkResult, interrupted bool) (Result, error) {
	var err error
	if r.err != C.MZ_OK {
		err = s.ctx.fail("Check", C.int(r.err))
	}
	switch {
	case interrupted && (err == nil || isCancel(err)):
		return Unknown, ErrInterrupted
	case err != nil:
		return Unknown, err
	case r.lbool == C.MZ_L_TRUE:
		return Sat, nil
	case r.lbool == C.MZ_L_FALSE:
		return Unsat, nil
	}
	return Unknown, nil
}

// isCancel reports whether err is Z3's report of a cancelled call, which is
// what an interrupt may turn into.
func isCancel(err error) bool {
	var zerr *Error
	return errors.As(err, &zerr) && strings.Contains(zerr.Msg, "cancel")
}

// ReasonUnknown is Z3's explanation of the last Unknown ("timeout",
// "canceled", "max. number of instances reached"... ).
func (s *Solver) ReasonUnknown() string {
	return C.GoString(C.mz_solver_reason_unknown(s.ctx.c, s.s))
}

// String renders the solver's assertions in SMT-LIB; for debugging.
func (s *Solver) String() string {
	return C.GoString(C.mz_solver_to_string(s.ctx.c, s.s))
}
