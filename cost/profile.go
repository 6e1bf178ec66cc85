package cost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// ProfileVersion is the version of the profile format this package reads
// and writes.
const ProfileVersion = 1

// Profile is one profile file: median times measured on one GPU.
type Profile struct {
	Version      int           `json:"version"`
	Arch         string        `json:"arch"` // "sm_80": the model's arch it refines
	GPU          string        `json:"gpu"`  // the device name, as CUDA reports it
	Measurements []Measurement `json:"measurements"`
}

// Measurement is the measured time of one candidate μGraph of a program.
type Measurement struct {
	Program      string  `json:"program"`        // the program's name (frontend.Program.Name)
	Hash         string  `json:"hash"`           // GraphHash of the candidate
	MedianMicros float64 `json:"median_us"`      // median over the runs of the whole graph
	Runs         int     `json:"runs,omitempty"` // how many timed runs the median is of
	// P10Micros and P90Micros are the 10th and 90th percentiles of the
	// runs, when the harness recorded them (both or neither).
	P10Micros float64 `json:"p10_us,omitempty"`
	P90Micros float64 `json:"p90_us,omitempty"`
	// EstimatedMicros is the model's estimate when the graph was measured,
	// when the harness recorded it: how far the model is off for this
	// program (Profiles.Scale).
	EstimatedMicros float64 `json:"estimated_us,omitempty"`
}

// Spread is half the distance between the 10th and 90th percentiles of
// m's runs: how far apart two medians of the same graph may fall by
// chance. 0 when the profile does not say.
func (m Measurement) Spread() float64 { return (m.P90Micros - m.P10Micros) / 2 }

// GraphHash is the key of g in profiles: kernel.Hash as 16 lower-case hex
// digits.
func GraphHash(g *kernel.Graph) string { return fmt.Sprintf("%016x", kernel.Hash(g)) }

// ReadProfile decodes and checks one profile. Fields it does not know are
// ignored, so a harness may record more (driver, clocks).
func ReadProfile(r io.Reader) (*Profile, error) {
	// One profile a file (a second after it, cat a.json b.json, would be
	// lost), each member once (encoding/json would keep the last).
	dec := json.NewDecoder(r)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the profile's end")
	}
	if err := uniqueMembers(json.NewDecoder(bytes.NewReader(raw))); err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// uniqueMembers reads one JSON value from dec and fails where an object
// in it names a member twice (encoding/json would keep the last).
func uniqueMembers(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := key.(string)
			if seen[name] {
				return fmt.Errorf("member %q given twice", name)
			}
			seen[name] = true
			if err := uniqueMembers(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := uniqueMembers(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// Write encodes p, indented, after checking it.
func (p *Profile) Write(w io.Writer) error {
	if err := p.check(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

func (p *Profile) check() error {
	if p.Version != ProfileVersion {
		return fmt.Errorf("profile version %d, want %d", p.Version, ProfileVersion)
	}
	if p.Arch == "" {
		return errors.New("profile names no arch")
	}
	for i, m := range p.Measurements {
		if m.Program == "" {
			return fmt.Errorf("measurement %d names no program", i)
		}
		if !validHash(m.Hash) {
			return fmt.Errorf("measurement %d: hash %q, want 16 lower-case hex digits", i, m.Hash)
		}
		if !(m.MedianMicros >= minMicros && m.MedianMicros <= maxMicros) {
			return fmt.Errorf("measurement %d: median_us %v, want a time from %g to %g", i, m.MedianMicros, minMicros, maxMicros)
		}
		if m.EstimatedMicros != 0 && !(m.EstimatedMicros >= minMicros && m.EstimatedMicros <= maxMicros) {
			return fmt.Errorf("measurement %d: estimated_us %v, want a time from %g to %g, or none", i, m.EstimatedMicros, minMicros, maxMicros)
		}
		if (m.P10Micros != 0 || m.P90Micros != 0) && !(0 < m.P10Micros && m.P10Micros <= m.MedianMicros && m.MedianMicros <= m.P90Micros && !math.IsInf(m.P90Micros, 0)) {
			return fmt.Errorf("measurement %d: p10_us %v, median_us %v, p90_us %v: want 0 < p10 <= median <= p90", i, m.P10Micros, m.MedianMicros, m.P90Micros)
		}
	}
	return nil
}

// The times a profile holds, in µs: a nanosecond to a quarter of an hour.
// Bounded so that a measured time over an estimate (Scale) stays finite.
const (
	minMicros = 1e-3
	maxMicros = 1e9
)

func validHash(h string) bool {
	if len(h) != 16 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Profiles are the measurements of one or more profile files, for lookup.
// The zero value and nil hold none.
type Profiles struct {
	micros map[profileKey]measured
}

type profileKey struct{ arch, program, hash string }

type measured struct {
	Measurement
	file string
}

// MaxProfileSize bounds what a profile file may hold.
const MaxProfileSize = 64 << 20

// LoadProfiles reads a profile file, or every profile*.json file of a
// directory (bench/gpu writes profile_ARCH.json beside its other results).
// Two measurements of the same graph for the same arch are an error: which
// one to trust is for the user to decide.
func LoadProfiles(path string) (*Profiles, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if info.IsDir() {
		// Names are matched, not globbed: a directory named pr[1] is a name.
		des, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = nil
		for _, de := range des {
			if n := de.Name(); strings.HasPrefix(n, "profile") && strings.HasSuffix(n, ".json") && !de.IsDir() {
				files = append(files, filepath.Join(path, n))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no profile*.json files", path)
		}
		slices.Sort(files)
	}
	ps := &Profiles{micros: map[profileKey]measured{}}
	for _, f := range files {
		if err := ps.load(f); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

func (ps *Profiles) load(file string) error {
	f, err := boundedread.Open(file, MaxProfileSize)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := ReadProfile(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, m := range p.Measurements {
		k := profileKey{p.Arch, m.Program, m.Hash}
		if prev, ok := ps.micros[k]; ok {
			return fmt.Errorf("%s: %s %s graph %s is also measured in %s", file, p.Arch, m.Program, m.Hash, prev.file)
		}
		ps.micros[k] = measured{m, file}
	}
	return nil
}

// Lookup returns the measured median time of g, a candidate for program,
// on arch, if a profile has it.
func (ps *Profiles) Lookup(arch, program string, g *kernel.Graph) (micros float64, ok bool) {
	m, ok := ps.Measurement(arch, program, g)
	return m.MedianMicros, ok
}

// Measurement returns the measurement of g, a candidate for program, on
// arch, if a profile has it.
func (ps *Profiles) Measurement(arch, program string, g *kernel.Graph) (Measurement, bool) {
	if ps == nil {
		return Measurement{}, false
	}
	m, ok := ps.micros[profileKey{arch, program, GraphHash(g)}]
	return m.Measurement, ok
}

// Scale is how much slower than the model the measured graphs of program
// ran on arch: the geometric mean of measured over estimated time, over
// the measurements that recorded their estimate. Multiplying the model's
// estimate of a graph nobody measured by it puts that graph on the
// measured ones' scale, so that they can be ranked together. ok is false
// when no measurement of program has an estimate.
func (ps *Profiles) Scale(arch, program string) (scale float64, ok bool) {
	if ps == nil {
		return 1, false
	}
	var sum float64
	n := 0
	for k, m := range ps.micros {
		if k.arch == arch && k.program == program && m.EstimatedMicros > 0 {
			sum += math.Log(m.MedianMicros / m.EstimatedMicros)
			n++
		}
	}
	if n == 0 {
		return 1, false
	}
	return math.Exp(sum / float64(n)), true
}

// Holds reports whether a profile measured a graph of program on arch.
func (ps *Profiles) Holds(arch, program string) bool {
	if ps == nil {
		return false
	}
	for k := range ps.micros {
		if k.arch == arch && k.program == program {
			return true
		}
	}
	return false
}

// Len is the number of measurements held.
func (ps *Profiles) Len() int {
	if ps == nil {
		return 0
	}
	return len(ps.micros)
}
