//go:build cgo

package z3

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Context is a Z3 context made with Z3_mk_context_rc. See the package
// documentation for the rules on goroutines.
type Context struct {
	c    C.Z3_context
	perm *Arena
	refs atomic.Int64 // AST references held by this context's arenas

	closed atomic.Bool // Close was called
	// busy is set while an abandoned check runs; only the owner goroutine
	// sets it (in Check), only the check's waiter clears it.
	busy    atomic.Bool
	deleted chan struct{} // closed once the Z3 context is deleted

	// mu serialises Interrupt against the start and end of a check and
	// against deletion, so that Z3_interrupt only reaches a context that is
	// checking, never a deleted one, and so that the check learns it was
	// interrupted. It also guards pending.
	mu          sync.Mutex
	checking    bool     // a check is in flight
	interrupted bool     // Z3_interrupt reached the check in flight
	pending     []func() // releases deferred until an abandoned check ends
}

// NewContext makes a context. It fails when Z3 is not available.
func NewContext() (*Context, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	r := C.mz_mk_context()
	if r.err != C.MZ_OK || r.p == nil {
		return nil, &Error{Op: "NewContext", Code: int(r.err), Msg: "cannot make a context"}
	}
	ctx := &Context{c: C.Z3_context(r.p), deleted: make(chan struct{})}
	ctx.perm = ctx.NewArena()
	live.contexts.Add(1)
	return ctx, nil
}

// Close releases the permanent arena and deletes the context; arenas and
// solvers made from it must be released or closed first. When an abandoned
// check still runs, the deletion waits for it to end (see Deleted). Close
// is idempotent.
func (ctx *Context) Close() {
	if ctx.closed.Swap(true) {
		return
	}
	ctx.whenIdle(func() {
		ctx.perm.release()
		ctx.mu.Lock()
		C.mz_del_context(ctx.c)
		ctx.mu.Unlock()
		live.contexts.Add(-1)
		close(ctx.deleted)
	})
}

// Deleted is closed once Close has deleted the Z3 context.
func (ctx *Context) Deleted() <-chan struct{} { return ctx.deleted }

// Arena is the context's permanent arena, released by Close.
func (ctx *Context) Arena() *Arena { return ctx.perm }

// LiveRefs is the number of AST references this context's arenas hold.
func (ctx *Context) LiveRefs() int64 { return ctx.refs.Load() }

// Interrupt stops the check running on this context, if any; the check
// returns Unknown and ErrInterrupted. Any goroutine may call it.
func (ctx *Context) Interrupt() {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if ctx.checking && !ctx.closed.Load() {
		C.mz_interrupt(ctx.c)
		ctx.interrupted = true
	}
}

// usable reports why the owner may not use the context now, or nil.
func (ctx *Context) usable() error {
	switch {
	case ctx.closed.Load():
		return errClosed
	case ctx.busy.Load():
		return ErrBusy
	}
	return nil
}

// whenIdle runs release now and reports true, or defers it until the
// abandoned check ends and reports false.
func (ctx *Context) whenIdle(release func()) bool {
	if !ctx.busy.Load() { // only the owner, calling here, could set it
		release()
		return true
	}
	ctx.mu.Lock()
	if ctx.busy.Load() {
		ctx.pending = append(ctx.pending, release)
		ctx.mu.Unlock()
		return false
	}
	ctx.mu.Unlock()
	release()
	return true
}

func (ctx *Context) beginCheck() {
	ctx.mu.Lock()
	ctx.checking, ctx.interrupted = true, false
	ctx.mu.Unlock()
}

// endCheck reports whether an interrupt reached the check.
func (ctx *Context) endCheck() (interrupted bool) {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	ctx.checking = false
	return ctx.interrupted
}

// abandon marks the context busy until the check that will send on done
// ends, then runs the releases deferred meanwhile.
func (ctx *Context) abandon(done <-chan checkResult) {
	ctx.busy.Store(true)
	live.abandoned.Add(1)
	go func() {
		<-done
		ctx.endCheck()
		ctx.mu.Lock()
		ctx.busy.Store(false)
		pending := ctx.pending
		ctx.pending = nil
		ctx.mu.Unlock()
		live.abandoned.Add(-1)
		for _, release := range pending {
			release()
		}
	}()
}

// fail turns a Z3 error code into an *Error with Z3's message.
func (ctx *Context) fail(op string, code C.int) error {
	return &Error{Op: op, Code: int(code), Msg: C.GoString(C.mz_error_msg(ctx.c, code))}
}

// AST is a Z3 term or formula. Its zero value is "no AST"; it is what an
// arena returns once it has failed.
type AST struct{ p C.Z3_ast }

// IsZero reports whether a is the zero AST.
func (a AST) IsZero() bool { return a.p == nil }

// Sort is a Z3 sort.
type Sort struct{ a AST }

// FuncDecl is a Z3 function declaration.
type FuncDecl struct{ a AST }

// Sorts and declarations are kept as the ASTs Z3_sort_to_ast and
// Z3_func_decl_to_ast return, which are the same objects (those calls are
// casts); these convert back for the calls that take them.
func (s Sort) z3() C.Z3_sort          { return C.Z3_sort(unsafe.Pointer(s.a.p)) }
func (f FuncDecl) z3() C.Z3_func_decl { return C.Z3_func_decl(unsafe.Pointer(f.a.p)) }

// Arena owns the references to the ASTs made through it, and drops them all
// in Release. Its methods never panic on Z3 errors: the first error sticks,
// later calls return the zero AST, and Err reports it.
type Arena struct {
	ctx  *Context
	refs []C.Z3_ast
	err  error
}

// NewArena makes an empty arena on ctx.
func (ctx *Context) NewArena() *Arena { return &Arena{ctx: ctx} }

// Err is the first error any call on the arena met, or nil.
func (a *Arena) Err() error { return a.err }

// Len is the number of references the arena holds.
func (a *Arena) Len() int { return len(a.refs) }

// Release drops every reference the arena holds and clears its error; the
// arena can then be reused. ASTs it made must not be used afterwards.
func (a *Arena) Release() {
	refs := a.refs
	a.err = nil
	if a.ctx.whenIdle(func() { a.releaseRefs(refs) }) {
		a.refs = refs[:0]
	} else {
		a.refs = nil // the deferred release owns the old slice
	}
}

// release is Release for Close, which already waits for idleness.
func (a *Arena) release() { a.releaseRefs(a.refs); a.refs = nil }

func (a *Arena) releaseRefs(refs []C.Z3_ast) {
	if n := len(refs); n > 0 {
		C.mz_dec_refs(a.ctx.c, &refs[0], C.uint(n))
		a.ctx.refs.Add(int64(-n))
		live.refs.Add(int64(-n))
		clear(refs)
	}
}

// ok reports whether the arena may make another AST from args.
func (a *Arena) ok(op string, args ...AST) bool {
	if a.err != nil {
		return false
	}
	if err := a.ctx.usable(); err != nil {
		a.err = err
		return false
	}
	for _, x := range args {
		if x.p == nil {
			a.err = fmt.Errorf("z3: %s: operand is the zero AST", op)
			return false
		}
	}
	return true
}

// keep records the reference the shim took, or the error it met.
func (a *Arena) keep(op string, r C.mz_res) AST {
	if r.err != C.MZ_OK || r.p == nil {
		a.err = a.ctx.fail(op, r.err)
		return AST{}
	}
	p := C.Z3_ast(r.p)
	a.refs = append(a.refs, p)
	a.ctx.refs.Add(1)
	live.refs.Add(1)
	return AST{p}
}

// cstr runs f with name as a C string.
func cstr[T any](name string, f func(*C.char) T) T {
	s := C.CString(name)
	defer C.free(unsafe.Pointer(s))
	return f(s)
}

// asts views a slice of ASTs as the C array Z3 wants. AST is a struct of
// one C pointer, so the layouts agree.
func asts(xs []AST) *C.Z3_ast {
	if len(xs) == 0 {
		return nil
	}
	return (*C.Z3_ast)(unsafe.Pointer(&xs[0]))
}

// UninterpretedSort declares the sort called name.
func (a *Arena) UninterpretedSort(name string) Sort {
	if !a.ok("UninterpretedSort") {
		return Sort{}
	}
	return Sort{a.keep("UninterpretedSort", cstr(name, func(s *C.char) C.mz_res {
		return C.mz_uninterpreted_sort(a.ctx.c, s)
	}))}
}

// IntSort is the sort of mathematical integers.
func (a *Arena) IntSort() Sort {
	if !a.ok("IntSort") {
		return Sort{}
	}
	return Sort{a.keep("IntSort", C.mz_int_sort(a.ctx.c))}
}

// RealSort is the sort of real numbers.
func (a *Arena) RealSort() Sort {
	if !a.ok("RealSort") {
		return Sort{}
	}
	return Sort{a.keep("RealSort", C.mz_real_sort(a.ctx.c))}
}

// BoolSort is the sort of formulas.
func (a *Arena) BoolSort() Sort {
	if !a.ok("BoolSort") {
		return Sort{}
	}
	return Sort{a.keep("BoolSort", C.mz_bool_sort(a.ctx.c))}
}

// FuncDecl declares the function name: domain -> rng.
func (a *Arena) FuncDecl(name string, domain []Sort, rng Sort) FuncDecl {
	args := make([]AST, 0, len(domain)+1)
	for _, s := range domain {
		args = append(args, s.a)
	}
	if !a.ok("FuncDecl", append(args, rng.a)...) {
		return FuncDecl{}
	}
	sorts := make([]C.Z3_sort, len(domain))
	for i, s := range domain {
		sorts[i] = s.z3()
	}
	return FuncDecl{a.keep("FuncDecl", cstr(name, func(s *C.char) C.mz_res {
		var p *C.Z3_sort
		if len(sorts) > 0 {
			p = &sorts[0]
		}
		return C.mz_func_decl(a.ctx.c, s, C.uint(len(sorts)), p, rng.z3())
	}))}
}

// Const is the constant called name, of sort s. Bound variables of
// quantifiers are constants too.
func (a *Arena) Const(name string, s Sort) AST {
	if !a.ok("Const", s.a) {
		return AST{}
	}
	return a.keep("Const", cstr(name, func(n *C.char) C.mz_res {
		return C.mz_const(a.ctx.c, n, s.z3())
	}))
}

// App applies f to args.
func (a *Arena) App(f FuncDecl, args ...AST) AST {
	if !a.ok("App", f.a) || !a.ok("App", args...) {
		return AST{}
	}
	return a.keep("App", C.mz_app(a.ctx.c, f.z3(), C.uint(len(args)), asts(args)))
}

// Numeral is the number written in decimal as s ("42", "-1.5"), of sort s
// (Int or Real).
func (a *Arena) Numeral(text string, s Sort) AST {
	if !a.ok("Numeral", s.a) {
		return AST{}
	}
	return a.keep("Numeral", cstr(text, func(n *C.char) C.mz_res {
		return C.mz_numeral(a.ctx.c, n, s.z3())
	}))
}

// True is the formula true.
func (a *Arena) True() AST {
	if !a.ok("True") {
		return AST{}
	}
	return a.keep("True", C.mz_true(a.ctx.c))
}

// Eq is x = y.
func (a *Arena) Eq(x, y AST) AST {
	if !a.ok("Eq", x, y) {
		return AST{}
	}
	return a.keep("Eq", C.mz_eq(a.ctx.c, x.p, y.p))
}

// Not is ¬x.
func (a *Arena) Not(x AST) AST {
	if !a.ok("Not", x) {
		return AST{}
	}
	return a.keep("Not", C.mz_not(a.ctx.c, x.p))
}

// Implies is x ⇒ y.
func (a *Arena) Implies(x, y AST) AST {
	if !a.ok("Implies", x, y) {
		return AST{}
	}
	return a.keep("Implies", C.mz_implies(a.ctx.c, x.p, y.p))
}

// And is the conjunction of xs (true when xs is empty).
func (a *Arena) And(xs ...AST) AST {
	if len(xs) == 0 {
		return a.True()
	}
	if !a.ok("And", xs...) {
		return AST{}
	}
	return a.keep("And", C.mz_and(a.ctx.c, C.uint(len(xs)), asts(xs)))
}

// Lt is x < y over integers or reals.
func (a *Arena) Lt(x, y AST) AST {
	if !a.ok("Lt", x, y) {
		return AST{}
	}
	return a.keep("Lt", C.mz_lt(a.ctx.c, x.p, y.p))
}

// Le is x ≤ y over integers or reals.
func (a *Arena) Le(x, y AST) AST {
	if !a.ok("Le", x, y) {
		return AST{}
	}
	return a.keep("Le", C.mz_le(a.ctx.c, x.p, y.p))
}

// Mul is the product of xs (at least one).
func (a *Arena) Mul(xs ...AST) AST {
	if len(xs) == 0 {
		a.ok("Mul", AST{})
		return AST{}
	}
	if !a.ok("Mul", xs...) {
		return AST{}
	}
	return a.keep("Mul", C.mz_mul(a.ctx.c, C.uint(len(xs)), asts(xs)))
}

// IntDiv is the integer quotient x div y.
func (a *Arena) IntDiv(x, y AST) AST {
	if !a.ok("IntDiv", x, y) {
		return AST{}
	}
	return a.keep("IntDiv", C.mz_idiv(a.ctx.c, x.p, y.p))
}

// Mod is x mod y over integers.
func (a *Arena) Mod(x, y AST) AST {
	if !a.ok("Mod", x, y) {
		return AST{}
	}
	return a.keep("Mod", C.mz_mod(a.ctx.c, x.p, y.p))
}

// Forall is ∀ bound. body. Each element of patterns is one multi-pattern
// (trigger): the quantifier is instantiated when every term of some
// multi-pattern matches ground terms. weight 0 is Z3's default priority;
// larger weights make instances costlier, so they come later.
func (a *Arena) Forall(bound []AST, patterns [][]AST, body AST, weight uint) AST {
	var terms []AST
	sizes := make([]C.uint, len(patterns))
	for i, p := range patterns {
		sizes[i] = C.uint(len(p))
		terms = append(terms, p...)
	}
	all := append(append(append([]AST{}, bound...), terms...), body)
	if !a.ok("Forall", all...) {
		return AST{}
	}
	var psizes *C.uint
	if len(sizes) > 0 {
		psizes = &sizes[0]
	}
	return a.keep("Forall", C.mz_forall(a.ctx.c, C.uint(weight),
		C.uint(len(bound)), asts(bound),
		C.uint(len(patterns)), psizes, asts(terms), body.p))
}

// String renders x in SMT-LIB syntax; for debugging.
func (a *Arena) String(x AST) string {
	if x.p == nil {
		return "<zero AST>"
	}
	return C.GoString(C.mz_ast_to_string(a.ctx.c, x.p))
}
