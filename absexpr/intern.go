package absexpr

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unique"
	"weak"
)

// Interning (hash-consing). Every expression is built once: a table maps
// each expression's op, attributes and operands (by id) to the *Expr, so a
// constructor finds an equal expression in time proportional to its own
// operands, never to their sizes, and equality is identity. The table holds
// its expressions weakly: an entry goes when its expression is garbage
// collected, and an equal expression built later is a new one, with a new
// id.

// internKey is what makes an expression the one it is.
type internKey struct {
	op     Op
	name   string
	size   int
	lo, hi uint64 // the bounds' bits: -0 and 0 differ, as in keys
	args   string // the operands' ids, 8 bytes each
}

var (
	interned sync.Map // internKey -> weak.Pointer[Expr]
	lastID   atomic.Uint64
)

// intern returns the expression equal to e: one built before and still
// reachable, or else e itself, which it enters in the table. e's operands
// must be interned.
func intern(e *Expr) *Expr {
	k := internKey{op: e.op, name: e.name, size: e.size, lo: math.Float64bits(e.lo), hi: math.Float64bits(e.hi)}
	if len(e.args) > 0 {
		ids := make([]byte, 0, 8*len(e.args))
		for _, a := range e.args {
			ids = binary.LittleEndian.AppendUint64(ids, a.id)
		}
		k.args = string(ids)
	}
	if old, ok := lookup(k); ok {
		return old
	}
	if e.op != OpVar {
		e.head = headOf(e)
	}
	e.id = lastID.Add(1)
	e.handle = unique.Make(string(binary.LittleEndian.AppendUint64(nil, e.id)))
	w := weak.Make(e)
	for {
		v, loaded := interned.LoadOrStore(k, w)
		if !loaded {
			break
		}
		if old := v.(weak.Pointer[Expr]).Value(); old != nil {
			return old // built meanwhile by another goroutine
		}
		if interned.CompareAndSwap(k, v, w) { // replace a collected one
			break
		}
	}
	runtime.AddCleanup(e, forget, internEntry{k, w})
	return e
}

func lookup(k internKey) (*Expr, bool) {
	v, ok := interned.Load(k)
	if !ok {
		return nil, false
	}
	e := v.(weak.Pointer[Expr]).Value()
	return e, e != nil
}

type internEntry struct {
	k internKey
	w weak.Pointer[Expr]
}

// forget removes a collected expression's entry, unless an equal
// expression has taken its place.
func forget(entry internEntry) { interned.CompareAndDelete(entry.k, entry.w) }
