package absexpr

import (
	"encoding/binary"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"
)

// Interning (hash-consing). Every expression is built once: a table maps
// each expression's op, attributes and operands (by id) to the *Expr, so a
// constructor finds an equal expression in time proportional to its own
// operands, never to their sizes, and equality is identity. The table holds
// its expressions weakly: an entry goes when its expression is garbage
// collected, and an equal expression built later is a new one, with a new
// id.
//
// A constructor looks its key up before it allocates anything: the search
// builds millions of expressions, most of them built before.

// internKey is what makes an expression the one it is. Its fields besides
// the strings are plain memory, which maps hash fast.
type internKey struct {
	op     Op
	size   int
	lo, hi uint64 // the bounds' bits: -0 and 0 differ, as in keys
	a0, a1 uint64 // the first two operands' ids; 0 for none (ids start at 1)
	name   string
	more   string // the other operands' ids, 8 bytes each
}

// internShards splits the table so that goroutines building expressions
// seldom wait for each other.
const internShards = 64

type internShard struct {
	sync.RWMutex
	m    map[internKey]weak.Pointer[Expr]
	peak int      // the most entries m held since it was made
	_    [64]byte // a cache line between shards' locks
}

var (
	// interned is made by a function, not init: package variables are
	// built from expressions before init runs.
	interned = func() *[internShards]internShard {
		t := new([internShards]internShard)
		for i := range t {
			t[i].m = map[internKey]weak.Pointer[Expr]{}
		}
		return t
	}()
	lastID atomic.Uint64
)

func (k *internKey) shard() *internShard {
	h := (k.a0*0x9e3779b97f4a7c15 ^ k.a1*0xc2b2ae3d27d4eb4f ^ uint64(k.size) ^ uint64(k.op)<<32 ^ uint64(len(k.name)))
	if k.name != "" {
		h ^= uint64(k.name[0]) << 8
	}
	return &interned[(h*0x9e3779b97f4a7c15)>>58%internShards]
}

// keyOf returns the intern key of op with the given attributes on args.
func keyOf(op Op, name string, size int, lo, hi float64, args []*Expr) internKey {
	k := internKey{op: op, name: name, size: size, lo: math.Float64bits(lo), hi: math.Float64bits(hi)}
	if len(args) > 0 {
		k.a0 = args[0].id
	}
	if len(args) > 1 {
		k.a1 = args[1].id
	}
	if len(args) > 2 {
		ids := make([]byte, 0, 8*(len(args)-2))
		for _, a := range args[2:] {
			ids = binary.LittleEndian.AppendUint64(ids, a.id)
		}
		k.more = string(ids)
	}
	return k
}

// intern returns the expression of op with the given attributes on args:
// one built before and still reachable, or else a new one, which it enters
// in the table. args must be interned; intern keeps a copy of them.
func intern(op Op, name string, size int, lo, hi float64, args []*Expr) *Expr {
	k := keyOf(op, name, size, lo, hi, args)
	sh := k.shard()
	sh.RLock()
	w, ok := sh.m[k]
	sh.RUnlock()
	if ok {
		if old := w.Value(); old != nil {
			return old
		}
	}
	e := &Expr{op: op, name: name, size: size, lo: lo, hi: hi, args: slices.Clone(args)}
	if op != OpVar {
		e.head = headOf(e)
	}
	e.id = lastID.Add(1) // before another goroutine can find e
	w = weak.Make(e)
	sh.Lock()
	if old, ok := sh.m[k]; ok {
		if o := old.Value(); o != nil {
			sh.Unlock()
			return o // built meanwhile by another goroutine
		}
	}
	sh.m[k] = w // new, or in place of a collected one
	sh.peak = max(sh.peak, len(sh.m))
	sh.Unlock()
	runtime.AddCleanup(e, forget, internEntry{k, w})
	return e
}

type internEntry struct {
	k internKey
	w weak.Pointer[Expr]
}

// forget removes a collected expression's entry, unless an equal
// expression has taken its place. A map keeps the room of its most
// entries: once a search's expressions are collected, a shard that
// holds a small part of its peak is copied into a map of its size.
func forget(entry internEntry) {
	sh := entry.k.shard()
	sh.Lock()
	if sh.m[entry.k] == entry.w {
		delete(sh.m, entry.k)
	}
	if sh.peak >= minShrink && len(sh.m) < sh.peak/8 {
		m := make(map[internKey]weak.Pointer[Expr], len(sh.m))
		maps.Copy(m, sh.m)
		sh.m, sh.peak = m, len(m)
	}
	sh.Unlock()
}

// minShrink is the peak below which a shard's map is never copied.
const minShrink = 1 << 12
