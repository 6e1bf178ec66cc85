package driver

import (
	"math"
	"runtime/debug"
	"testing"
	"time"
)

// TestLiveHeapBudget: a search stops enumerating at a quarter of the
// process's memory limit, and has no budget without one.
func TestLiveHeapBudget(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(8 << 30)
	if got := liveHeapBudget(); got != 2<<30 {
		t.Errorf("under an 8 GiB limit: %d, want 2 GiB", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := liveHeapBudget(); got != 0 {
		t.Errorf("without a limit: %d, want 0", got)
	}
	if o := (&run{}).searchOptions(time.Time{}, 1); o.MaxLiveHeap != 0 {
		t.Errorf("searchOptions without a limit: MaxLiveHeap %d", o.MaxLiveHeap)
	}
	debug.SetMemoryLimit(8 << 30)
	if o := (&run{}).searchOptions(time.Time{}, 1); o.MaxLiveHeap != 2<<30 {
		t.Errorf("searchOptions under an 8 GiB limit: MaxLiveHeap %d", o.MaxLiveHeap)
	}
}
