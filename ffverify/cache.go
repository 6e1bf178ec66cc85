package ffverify

import (
	"fmt"

	"github.com/mitchellh/hashstructure/v2"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Cache keeps, from one fast-path check to the next, the values of kernel
// tensors computed on the fast path's draw, named by what computes them:
// the op, its attributes (and block graph), and the names of its operands,
// down to the inputs. Candidates of a search share most of their first
// kernels, and each needs the same few elements of them. A Cache is for one
// goroutine and one Verifier.
type Cache struct {
	pages map[uint64]*page
	room  int // elements still allowed before the cache is emptied
	max   int
}

// NewCache returns a cache that holds about elements values (it empties
// itself when full).
func NewCache(elements int) *Cache {
	return &Cache{pages: map[uint64]*page{}, room: elements, max: elements}
}

func (c *Cache) page(sig uint64, size int) *page {
	if pg := c.pages[sig]; pg != nil {
		return pg
	}
	if c.room -= size; c.room < 0 {
		clear(c.pages)
		c.room = c.max - size
	}
	pg := newPage(size)
	c.pages[sig] = pg
	return pg
}

// signatures names each kernel tensor of p by what computes it on the draw
// of the given key (see Cache).
func (p *plan) signatures(key uint64) []uint64 {
	sigs := make([]uint64, len(p.g.Tensors))
	for k, t := range p.g.Inputs() {
		sigs[t] = hash(key, uint64(k)+1)
	}
	for _, op := range p.g.Ops {
		if op.Kind == ugraph.OpInput {
			continue
		}
		h := hash(key, uint64(op.Kind)+1<<32)
		h = hash(h, attrHash(op.Attr))
		if op.Block != nil {
			h = hash(h, block.Hash(op.Block))
		}
		for _, t := range op.In {
			h = hash(h, sigs[t])
		}
		for r, t := range op.Out {
			sigs[t] = hash(h, uint64(r))
		}
	}
	return sigs
}

func attrHash(a ugraph.Attr) uint64 {
	h, err := hashstructure.Hash(a, hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("ffverify: hashing %+v: %v", a, err)) // Attr holds only hashable fields
	}
	return h
}

// Len is the number of tensors c holds values of.
func (c *Cache) Len() int { return len(c.pages) }
