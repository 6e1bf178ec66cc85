package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/mitchellh/hashstructure/v2"

	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Calibrate times a fixed CPU-bound loop on one core, the best of five,
// in seconds (about 0.06 on a 2024 x86 server core). A search's seconds
// divided by it compare across machines: the loop does what the search
// spends its time on (64-bit hashing and map updates), so a machine twice
// as slow takes about twice as long at both.
func Calibrate() float64 {
	best := math.Inf(1)
	for range 5 {
		start := time.Now()
		calibrationLoop()
		best = min(best, time.Since(start).Seconds())
	}
	return best
}

// calibrationSink keeps the loop's result alive.
var calibrationSink uint64

func calibrationLoop() {
	m := make(map[uint64]uint32, 1<<12)
	h := uint64(14695981039346656037) // FNV-1a
	for i := range 1 << 22 {
		h ^= uint64(i)
		h *= 1099511628211
		m[h&(1<<16-1)]++
	}
	calibrationSink = h + uint64(len(m))
}

// ProgramHash is a program's key in results: its canonical hash, which
// covers every op, attribute, shape and dtype.
func ProgramHash(g *kernel.Graph) string { return fmt.Sprintf("%016x", kernel.Hash(g)) }

// Configuration is what a workload is searched with, besides its program:
// the preset ("" when derived per part), the program's restrictions, and
// the options that narrow a search.
type Configuration struct {
	Preset    string
	Restrict  search.Restrictions
	MaxStates int64
	NoSeeds   bool // searched without the rules' seeds (search.Options.NoSeeds)
}

// Hash is c's key in results. A configuration with seeds (the default)
// hashes as configurations did before NoSeeds existed, so that recorded
// baselines still compare.
func (c Configuration) Hash() string {
	type Configuration struct { // the fields, and the name, that the recorded hashes cover
		Preset    string
		Restrict  search.Restrictions
		MaxStates int64
	}
	var v any = Configuration{c.Preset, c.Restrict, c.MaxStates}
	if c.NoSeeds {
		v = c
	}
	h, err := hashstructure.Hash(v, hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("bench: Configuration.Hash: %v", err)) // it holds only hashable types
	}
	return fmt.Sprintf("%016x", h)
}
