package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mitchellh/hashstructure/v2"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// candidateMeta is what a candidate's "meta" object in a .ugraph.json
// document holds: the figures it was ranked by.
type candidateMeta struct {
	Rank          int          `json:"rank"`
	Kernels       int          `json:"kernels"`
	Customized    int          `json:"customized"`
	Grids         []block.Dim3 `json:"grids"`
	ForloopRanges []int        `json:"forloop_ranges"`
	EstimatedUs   float64      `json:"estimated_us"`
	DeviceBytes   int64        `json:"device_bytes"`
	Flops         int64        `json:"flops"`
	Seed          string       `json:"seed,omitempty"` // the rule that built it (package seed)
}

// File returns the candidates as a μGraph document named name, best first,
// each with its figures in its "meta" object, and meta (if not nil) as the
// document's "meta".
func (r *Result) File(name string, meta any) (*kernel.File, error) {
	f := &kernel.File{Name: name}
	for i, c := range r.Candidates {
		m, err := json.Marshal(candidateMeta{
			Rank: i, Kernels: c.Kernels, Customized: c.Customized,
			Grids: nonNil(c.Grids), ForloopRanges: nonNil(c.ForloopRanges),
			EstimatedUs: c.Estimate.Micros, DeviceBytes: c.Estimate.Bytes, Flops: c.Estimate.Flops,
			Seed: c.Seed,
		})
		if err != nil {
			return nil, err
		}
		f.Graphs = append(f.Graphs, kernel.Entry{Graph: c.Graph, Meta: m})
	}
	if meta != nil {
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		f.Meta = m
	}
	return f, nil
}

// ResultFromFile reads back the candidates that Result.File wrote, with
// the figures they were ranked by (the statistics are not in the file).
func ResultFromFile(f *kernel.File) (*Result, error) {
	r := &Result{}
	for i, e := range f.Graphs {
		var cm candidateMeta
		if err := json.Unmarshal(e.Meta, &cm); err != nil {
			return nil, fmt.Errorf("candidate %d: bad meta", i)
		}
		r.Candidates = append(r.Candidates, &Candidate{Graph: e.Graph, Hash: kernel.Hash(e.Graph),
			Kernels: cm.Kernels, Customized: cm.Customized, Grids: cm.Grids, ForloopRanges: cm.ForloopRanges,
			Estimate: Estimate{Micros: cm.EstimatedUs, Bytes: cm.DeviceBytes, Flops: cm.Flops}, Seed: cm.Seed})
	}
	return r, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Key identifies a search by what decides its result: the program (its
// canonical hash covers every op, attribute, shape and dtype), the
// configuration (completed as Run completes it; its Arch is also the one
// whose cost model ranks the candidates) and the options that change what
// is found (the subtrees explored among them). Two searches with the same
// key find the same candidates in the same order.
func Key(program *kernel.Graph, cfg Config, opts Options) string {
	cfg.Complete(program)
	h, err := hashstructure.Hash(struct {
		Version    int
		Program    uint64
		Config     Config
		Seed       uint64
		MaxStates  int64
		MaxResults int
		Subtrees   []int
		Unverified bool
		NoSeeds    bool
	}{cacheVersion, kernel.Hash(program), cfg, opts.Seed, opts.MaxStates, opts.MaxResults, opts.Subtrees, opts.Unverified, opts.NoSeeds}, hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("search.Key: %v", err)) // Config holds only hashable types
	}
	var b [8]byte
	for i := range b {
		b[i] = byte(h >> (56 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

// cacheVersion changes whenever the generator changes what it finds for a
// given key, so stale entries are never used: any change to a pruning
// rule, the enumeration order or the ranking. TestCacheVersionFollowsTheGenerator
// fails when one forgets (it records what two searches find, per version).
// Version 5: keys before it ignored shapes (kernel.Hash skipped
// ugraph.Shape's fields). Version 6: grids per row of short output dims,
// for-loop ranges for real models' K (Complete). Version 7: walked tiles
// of at least minWalkedTile. Version 8: the cost model charges L2 hits on
// top of DRAM traffic, and equal times rank by bytes, then blocks.
// Version 9: Mirage's tiled grids for one graph-defined kernel; outputs
// that no one map fits take a map each; default and mlp allow two outputs.
// Version 10: one-iteration input tiles read more than once are copied
// into shared memory (package thread), which changes the shared memory
// per block, so the occupancy and the estimates, of some candidates.
// Version 11: the cost model counts each block's latency (its code's
// steps, fitted to the first H100 measurements), which reorders the
// candidates of most searches. Version 12: pre-defined matmuls run
// through cuBLASLt, costed at its measured bandwidth, which changes every
// baseline with a matmul and the rank of candidates that keep one.
// Version 13: the library's element-wise, row-sum and short-norm kernels
// move 16-byte vectors, which changes the estimates of every program that
// keeps one. Version 14: the rules' seeds (package seed) join the
// candidates, ahead of the enumeration's. Version 15: split attention
// seeds combine a few rows per block. Version 16: seeds keep to the
// program's restrictions; rules decline inputs used in two roles.
// Version 17: the attention seed's late-sum and norms-apart forms.
// Version 18: kernels sized by the cost model among 128, 256 and 512
// threads (blockSizes); accumulators within half a thread's registers.
// Version 19: row-summing accumulators fed by several iterations keep
// lane partials in registers (package thread), which lowers the estimate
// of every candidate with one. Version 20: the split_k seeds. Version 21:
// only the best-ranked rule's seed is checked before the ranking (the
// others are "outranked" until it reaches them). Version 22: a one-
// iteration input tile read in an mma's epilogue is copied into shared
// memory (package thread), which changes the estimates of such graphs.
// Version 23: rows fewer than a block's warps are shared by several warps
// (package thread); pre-defined fp16 and bf16 matmuls of any shape run
// through cuBLASLt. Version 24: the rows rule's seeds for rank-3 sums
// over dim 1 (blocks owning whole columns). Version 25: the latency table
// and sm_90's memory latency, SM bandwidth and launch gap refitted with
// the second H100 run (cost/testdata/h100-2026-11-28-4406c39). Version 26:
// a one-iteration input tile read once is copied in beside the tiles the
// kernel copies anyway (package thread), which lowers some estimates.
// Version 27: sm_80's memory figures follow the refit; when a plan's copies
// overflow, once-read tiles go back to device memory first. Version 28:
// twins, one graph in two orders of its ops (kernel.CanonicalHash), keep
// one place in the ranking (distinct). Version 29: abstract expressions
// write every scalar as one variable (absexpr.Scalar), so the pruning sees
// where a factor is applied, and a root mean square written out.
// Version 30: pre-defined fp32 matmuls run through cuBLASLt too.
// Version 31: the attention rule's seeds for one head (rank 2); sub's
// expression keeps its scalar; twins compared with their launches.
// Version 32: the head_sum rule's seeds (a batched matmul summed over its
// batch dims); the matmul rule's for matmuls batched over heads;
// Stats.RankedFused. Version 33: the attention rule's seeds for rank 4
// and for Q, K and V scaled or repeated per head; the matmul rule's for
// rank 4; split_k's for batched matmuls. Version 34: split_k's combining
// kernel may sum a tile of splits an iteration (reduction_to_dimx).
// Version 35: the library rule's seeds (the matmuls left to the library,
// the norm and the epilogues in one kernel after them). Version 36: only
// where its kernel replaces two launches or more. Version 37: an add that
// cuBLASLt performs in a product's call is no launch it replaces; column
// tiles of a divisor where no power of two divides the columns.
// Version 38: accumulators of a tile the for-loop does not walk sum equal
// terms (absexpr.Loop.Invariant), and x·x is square(x), so the pruning
// keeps forms it took for wrong; exp's Q-residue is a random function of
// its argument (ffverify), which rejects wrong candidates of programs with
// an exp of an exp that the verifier passed. Version 39: a scalar that is
// not a small rational (nor ±1/n, n up to 2^20) is a variable of the
// verifier's model, which rejects candidates that swapped scalars the
// fields confused. Version 40: every constant is a product of random
// images of its primes (ffverify's constants), which rejects candidates
// whose chosen products of small scalars the fields confused, and
// accepts products that are one rational (1e-6·1e6, 1/n for any n).
// Version 41: twins that differ only in a grid axis of one block, or a
// one-iteration loop, mapped to a dim or not keep one place (distinct),
// and seeds write such axes unmapped; the model copies a one-iteration
// loop's tiles once, as the code does (thread.CopiedEachIteration).
// Version 42: the model counts the code's ldmatrix, epilogue rows,
// zeroing, barriers, fetches, SIMT products and in-place reads (package
// thread's rules), and of twins the seed's graph is kept (preferTwin).
// Version 43: the matmul and library rules take low-rank products of a
// narrow matmul's result (LoRA's (X·A)·B); the model counts a tile of an
// input's whole rows as one contiguous run of lines (cost.inputFetch);
// the attention rule's multi-query heads of rank 3 in one block.
// Version 44: the matmul rules take matmuls of different widths (a
// grouped-query layer's q, k and v); a matmul whose tiles leave warps
// idle begins on others than the one before it (thread.MMA.Base), and
// the model counts the busiest warp of the parts between two barriers.
// Version 45: row loops read 16-byte vectors (thread.Group.RowVector),
// and the model counts a vector's load once.
// Version 46: a loop of one iteration passes an accumulator of kind none
// through (thread.Group.Through): no tile, stores from the loop.
// Version 47: an rms_norm storing from its row loop stores 16-byte vectors
// (thread.Group.StoreVector), and the model counts a store a vector.
// Version 48: the model refitted with the first H200 run (2026-12-04).
// Version 49: and with the second, which measured the refit's picks.
// Version 50: a graph-defined kernel after a cuBLASLt call launches dependent
// on sm_90, 1.7 µs less in the model (launch.AfterLibrary).
const cacheVersion = 50

// Cache stores search results by key in a directory, one .ugraph.json
// document per key with the statistics in its "meta".
type Cache struct {
	Dir      string
	maxBytes int // what an entry may hold; 0: kernel.MaxFileSize (tests set less)
}

func (c Cache) limit() int { return cmp.Or(c.maxBytes, kernel.MaxFileSize) }

// DefaultCacheDir is mirage's directory in the user's cache directory.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "mirage-go", "search"), nil
}

type cacheMeta struct {
	Key        string      `json:"key"`
	Stats      Stats       `json:"stats"`
	Unverified bool        `json:"unverified,omitempty"` // Result.Unverified
	Seeds      []SeedTrial `json:"seeds,omitempty"`      // Result.Seeds
}

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key+".ugraph.json") }

// Load returns the cached result for key, if there is a readable one whose
// every candidate the verifier proves equivalent to program, as the search
// does (with the draws and memory bound of opts, as the search's:
// Options.Seed and MaxMemory; Options.Verifier when set), its outputs then
// in the program's order; of an unverified result's (a shard's), those the
// fast path rejects are dropped. An entry edited by hand,
// or written for another program, is an error, never an answer. An
// unreadable or refused entry is reported as an error (and can be
// overwritten).
func (c Cache) Load(key string, program *kernel.Graph, opts Options) (*Result, bool, error) {
	data, err := boundedread.ReadFile(c.path(key), int64(c.limit()))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	f, err := kernel.DecodeBytes(data)
	if err != nil {
		return nil, false, fmt.Errorf("cache entry %s: %v", c.path(key), err)
	}
	var m cacheMeta
	if err := json.Unmarshal(f.Meta, &m); err != nil || m.Key != key {
		return nil, false, fmt.Errorf("cache entry %s: bad meta", c.path(key))
	}
	r, err := ResultFromFile(f)
	if err != nil {
		return nil, false, fmt.Errorf("cache entry %s: %v", c.path(key), err)
	}
	r.Stats, r.Unverified, r.Seeds = m.Stats, m.Unverified, m.Seeds
	if len(r.Candidates) == 0 {
		return nil, false, fmt.Errorf("cache entry %s: no candidates", c.path(key))
	}
	v, err := opts.verifier(program)
	if err != nil {
		return nil, false, err
	}
	var kept []*Candidate
	if r.Unverified {
		// A shard's share: the merge verifies what it keeps. Candidates
		// the fast path rejects (its no is a proof) are dropped, as
		// verifying them would.
		for i, cand := range r.Candidates {
			rejected, err := v.Reject(cand.Graph)
			if err != nil {
				return nil, false, fmt.Errorf("cache entry %s: candidate %d: %v", c.path(key), i, err)
			}
			if !rejected {
				kept = append(kept, cand)
			}
		}
	} else {
		// A verified result's candidates are verified again, as the
		// search verified them (outputs put in the program's order): the
		// driver takes them as checked (a one-part program's answer, or a
		// part's when the whole program's check is abandoned), so an
		// entry edited by hand, or written by another version's rules,
		// must pass the same check.
		vf := verification{ctx: context.Background(), verifier: v, workers: max(opts.Workers, 1)}
		if kept, err = vf.run(r.Candidates, len(r.Candidates)); err != nil {
			return nil, false, fmt.Errorf("cache entry %s: %v", c.path(key), err)
		}
		switch {
		case vf.rejected > 0:
			return nil, false, fmt.Errorf("cache entry %s: a candidate does not compute the program (%d of %d)", c.path(key), vf.rejected, len(r.Candidates))
		case len(kept) < len(r.Candidates):
			return nil, false, fmt.Errorf("cache entry %s: %w", c.path(key), ffverify.ErrStopped)
		}
	}
	// None passing is an entry for another program.
	if len(kept) == 0 {
		return nil, false, fmt.Errorf("cache entry %s: no candidate computes the program", c.path(key))
	}
	r.Stats.Rejected += int64(len(r.Candidates) - len(kept))
	r.Candidates = kept
	return r, true, nil
}

// Store writes r under key, atomically. Results of searches that stopped
// early are incomplete and not stored.
func (c Cache) Store(key, name string, r *Result) error {
	if r.Stats.Stopped != "" || len(r.Candidates) == 0 {
		return nil
	}
	f, err := r.File(name, cacheMeta{Key: key, Stats: r.Stats, Unverified: r.Unverified, Seeds: r.Seeds})
	if err != nil {
		return err
	}
	var data bytes.Buffer
	if err := f.Encode(&data); err != nil {
		return err
	}
	// An entry Load cannot read would be a warning on every run after;
	// one there already (written before this bound) goes.
	if data.Len() > c.limit() {
		if err := os.Remove(c.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("not cached: the %d candidates come to %.1f MiB, past the %.1f MiB an entry holds", len(r.Candidates), float64(data.Len())/(1<<20), float64(c.limit())/(1<<20))
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.path(key), data.Bytes(), 0o644)
}
