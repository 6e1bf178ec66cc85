package ffverify

import (
	"errors"
	"sync"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Pool keeps, per key, the first Verifier kept of a row-independent
// program (DESIGN §9), so that the same program written for fewer rows
// gets its verifier cut from it rather than drawn and evaluated again (its
// users keep the program at its largest m first: RunDynamic searches the
// buckets largest first): Prefix (no evaluation: the verdicts rest on
// the rows being independent, as a dynamic search's do) or Rows (evaluated
// on the kept inputs' first rows: mirage verify --dynamic, whose verdicts
// must not rest on it). The key names the program: a search keys a part
// by its ops. A nil *Pool keeps nothing. A Pool is safe for concurrent use.
type Pool struct {
	mu     sync.Mutex
	of     map[string]*Verifier
	reused int
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{of: map[string]*Verifier{}} }

// Keep records v under key, unless a verifier is kept there already.
func (p *Pool) Keep(key string, v *Verifier) {
	if p == nil || v == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.of[key] == nil {
		p.of[key] = v
	}
}

// Len is the number of verifiers kept.
func (p *Pool) Len() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.of)
}

// Kept returns the verifier kept under key, or nil.
func (p *Pool) Kept(key string) *Verifier {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.of[key]
}

// Drop lets go of the verifier kept under key (to free its memory).
func (p *Pool) Drop(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.of, key)
}

// Prefix returns a verifier for program cut from the one kept under key
// (Verifier.Prefix), or nil when none is kept or program is not a prefix
// of its program's rows: the caller then makes its own.
func (p *Pool) Prefix(key string, program *kernel.Graph) *Verifier {
	v := p.Kept(key)
	if v == nil {
		return nil
	}
	nv, err := v.Prefix(program)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	p.reused++
	p.mu.Unlock()
	return nv
}

// Rows returns a verifier for program evaluated on the first rows of the
// inputs of the one kept under key (Verifier.Rows), or nil and no error
// when none is kept or program's rows are not the first of its
// (ErrNotFirstRows): the caller then makes its own.
func (p *Pool) Rows(key string, program *kernel.Graph) (*Verifier, error) {
	v := p.Kept(key)
	if v == nil {
		return nil, nil
	}
	nv, err := v.Rows(program)
	if errors.Is(err, ErrNotFirstRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.reused++
	p.mu.Unlock()
	return nv, nil
}

// Reused counts the verifiers Prefix and Rows have cut.
func (p *Pool) Reused() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}
