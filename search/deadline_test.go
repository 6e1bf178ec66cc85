package search

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
)

// lazyDeadline is a context whose deadline is fixed d after the first
// time it is asked for (the verification asks before its first batch of
// checks): the driver's verification deadline (run.verifyEnd) falling a
// little after a search's first batch of checks, its enumeration over.
// Done closes and Err is DeadlineExceeded once it passes, as with
// context.WithDeadline.
type lazyDeadline struct {
	context.Context
	d    time.Duration
	once sync.Once
	at   time.Time
	done chan struct{}
}

func newLazyDeadline(d time.Duration) *lazyDeadline {
	return &lazyDeadline{Context: context.Background(), d: d, done: make(chan struct{})}
}

func (c *lazyDeadline) Deadline() (time.Time, bool) {
	c.once.Do(func() {
		c.at = time.Now().Add(c.d)
		time.AfterFunc(c.d, func() { close(c.done) })
	})
	return c.at, true
}
func (c *lazyDeadline) Done() <-chan struct{} { return c.done }
func (c *lazyDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func hashesOf(cs []*Candidate) []uint64 {
	var h []uint64
	for _, c := range cs {
		h = append(h, c.Hash)
	}
	return h
}

// A search whose verification is cut short because the next batch would
// outlast the context's deadline must say that it stopped (Stats.Stopped,
// found by review):
// the driver caches a result whose Stopped is "" (driver.searchPart), and
// the time limit is not part of the cache key, so a later run with all
// the time in the world would read back the short answer.
func TestVerificationCutByTheDeadlineSaysItStopped(t *testing.T) {
	p := load(t, "gated_mlp.py")
	cfg := writtenConfig(t, p)
	opts := Options{Seed: 1, NoSeeds: true, MaxResults: 2, Workers: 1, Estimate: testEstimate}
	ref, err := Run(t.Context(), p.Graph, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Candidates) != 2 || ref.Stats.Stopped != "" {
		t.Fatalf("reference: %d candidates, stopped %q; want 2, not stopped", len(ref.Candidates), ref.Stats.Stopped)
	}
	// How long one candidate's check takes.
	v, err := ffverify.New(p.Graph, ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var per time.Duration
	for range 3 {
		start := time.Now()
		if _, err := v.Verify(ref.Candidates[0].Graph); err != nil {
			t.Fatal(err)
		}
		per = max(per, time.Since(start))
	}
	t.Logf("one check: %v", per)
	short := 0
	for _, f := range []float64{1.3, 1.6} { // the next batch would outlast the deadline
		ctx := newLazyDeadline(time.Duration(f * float64(per)))
		res, err := Run(ctx, p.Graph, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("deadline %.1f checks after the first batch: %d candidates, stopped %q, verified %d, unchecked %d",
			f, len(res.Candidates), res.Stats.Stopped, res.Stats.Verified, res.Stats.Unchecked)
		if res.Stats.Stopped == "" && !slices.Equal(hashesOf(res.Candidates), hashesOf(ref.Candidates)) {
			short++
			t.Errorf("deadline %.1f checks after the first batch: %d candidates, Stats.Stopped empty; want the complete answer (%d candidates) or a Stopped reason",
				f, len(res.Candidates), len(ref.Candidates))
			// The cache, which stores no result of a search that stopped
			// early, stores this one, and a later search of the same key
			// with all the time it needs reads the short answer back.
			c := Cache{Dir: t.TempDir()}
			key := Key(p.Graph, cfg, opts)
			if err := c.Store(key, "gated_mlp", res); err != nil {
				t.Fatal(err)
			}
			if back, hit, err := c.Load(key, p.Graph, opts); err == nil && hit {
				t.Errorf("  and the cache answers it: %d candidates where the search finds %d", len(back.Candidates), len(ref.Candidates))
			}
		}
	}
}
