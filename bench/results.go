package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/boundedread"
)

// Format names the results file format this package writes. A file of any
// other format is refused, never guessed at.
const Format = "mirage-bench-results/1"

// The most mirage reads of a results file (a baseline) and of a history:
// a run's line takes a few KiB, so the history holds tens of thousands.
const (
	MaxResultsSize = 64 << 20
	MaxHistorySize = 256 << 20
)

// Results is one run of the suite: what results.json holds, and one line
// of history.jsonl.
type Results struct {
	Format   string    `json:"format"`
	Version  string    `json:"version"`            // the tool's version
	Commit   string    `json:"commit,omitempty"`   // the checkout it was built from, when known
	Modified bool      `json:"modified,omitempty"` // the checkout had uncommitted changes
	Time     time.Time `json:"time"`
	Machine  Machine   `json:"machine"`
	Options  Options   `json:"options"`
	Rows     []Row     `json:"workloads"`
	// Shards is the shard-balance check's, when the run made one.
	Shards *ShardBalance `json:"shard_balance,omitempty"`
	// Dynamic, when measured, is the dynamic-batch line (DynamicCost).
	Dynamic *DynamicCost `json:"dynamic_batch,omitempty"`
}

// Machine is where a run ran, and how fast its CPU is.
type Machine struct {
	Cores  int    `json:"cores"`
	OS     string `json:"os"`
	CPU    string `json:"cpu"`  // GOARCH
	Target string `json:"arch"` // the arch the cost model estimated for
	// CalibrationSeconds is the time of a fixed CPU-bound loop in the same
	// process (Calibrate): search seconds divided by it compare across
	// machines.
	CalibrationSeconds float64 `json:"calibration_seconds"`
}

// Options are the run's options, as given.
type Options struct {
	TimeLimit string `json:"time_limit"` // per workload
	Workers   int    `json:"workers"`
	Seed      uint64 `json:"seed"`
	Config    string `json:"config,omitempty"` // a preset for every workload
	MaxStates int64  `json:"max_states,omitempty"`
	NoSeeds   bool   `json:"no_seeds,omitempty"`
	// MaxCandidates is superopt's --max-candidates: the candidates each
	// part's search verifies, best first (0: all, the complete set).
	MaxCandidates int    `json:"max_candidates"`
	Profile       string `json:"profile,omitempty"`
}

// NewResults returns the results of a run on this machine for target,
// stamped with the tool's version and, when the binary was built from a
// checkout, its commit.
func NewResults(version, target string, calibration float64, opts Options, rows []Row) *Results {
	r := &Results{
		Format: Format, Version: version, Time: time.Now().UTC().Truncate(time.Second),
		Machine: Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS, CPU: runtime.GOARCH, Target: target, CalibrationSeconds: calibration},
		Options: opts, Rows: rows,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				r.Commit = s.Value
			case "vcs.modified":
				r.Modified = s.Value == "true"
			}
		}
	}
	if r.Commit == "" {
		r.Commit, r.Modified = checkoutCommit()
	}
	return r
}

// modulePath is this project's module: a checkout of it holds go.mod
// declaring it at its top.
const modulePath = "github.com/mirage-go/mirage"

// checkoutCommit returns the commit of the project's checkout that holds
// the working directory, and whether it has uncommitted changes: the
// commit of a binary built without VCS stamping (-buildvcs=false, go run)
// and run from its checkout. It is "" elsewhere, or without git.
func checkoutCommit() (string, bool) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", false
	}
	mod, err := boundedread.ReadFile(filepath.Join(top, "go.mod"), 1<<20)
	if err != nil || !strings.HasPrefix(string(mod), "module "+modulePath+"\n") {
		return "", false
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return "", false
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	return commit, err == nil && status != ""
}

// ReadResults reads and checks a results file: a missing, truncated or
// foreign file is an error that says which.
func ReadResults(path string) (*Results, error) {
	data, err := boundedread.ReadFile(path, MaxResultsSize)
	if err != nil {
		return nil, err
	}
	r, err := decodeResults(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return r, nil
}

func decodeResults(data []byte) (*Results, error) {
	// The format is read first, alone, so that a file of another kind is
	// named as such rather than reported by its first odd field.
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("not valid JSON (truncated or corrupted?): %v", err)
		}
		return nil, fmt.Errorf("not a mirage bench results file: %v", err)
	}
	switch {
	case head.Format == nil:
		return nil, errors.New("not a mirage bench results file (no \"format\"; write one with mirage bench -o DIR)")
	case *head.Format != Format:
		return nil, fmt.Errorf("results format %q, want %q", *head.Format, Format)
	}
	var r Results
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("corrupted results: %v", err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("corrupted results: %v", err)
	}
	return &r, nil
}

// check rejects results no run writes: what a comparison would misread.
func (r *Results) check() error {
	if r.Machine.Target == "" {
		return errors.New("no arch")
	}
	if c := r.Machine.CalibrationSeconds; !(c > 0) || math.IsInf(c, 0) {
		return fmt.Errorf("calibration_seconds %v, want a positive time", c)
	}
	seen := map[string]bool{}
	for i, row := range r.Rows {
		switch {
		case row.Workload == "":
			return fmt.Errorf("workload %d has no name", i)
		case seen[row.Workload]:
			return fmt.Errorf("workload %q appears twice", row.Workload)
		case row.Err == "" && (row.ProgramHash == "" || row.ConfigHash == ""):
			return fmt.Errorf("workload %q has no program or configuration hash", row.Workload)
		case row.Err == "" && !(row.UnfusedUs > 0 && row.BestUs > 0):
			return fmt.Errorf("workload %q: estimates %v and %v µs, want positive times", row.Workload, row.BestUs, row.UnfusedUs)
		case row.Seconds < 0 || row.Verified < 0:
			return fmt.Errorf("workload %q: negative figures", row.Workload)
		}
		seen[row.Workload] = true
	}
	return nil
}

// Row returns the row of the named workload, or nil.
func (r *Results) Row(name string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Workload == name {
			return &r.Rows[i]
		}
	}
	return nil
}

// File names in a results directory.
const (
	ResultsFile = "results.json"
	HistoryFile = "history.jsonl"
)

// Save writes r to dir/results.json and appends it, as one line, to
// dir/history.jsonl, with the run's other files (the table, the chart) as
// one set (atomicfile.Set): an error leaves every file as it was, and a
// killed run leaves each as it was or as it should be.
func (r *Results) Save(dir string, others ...atomicfile.File) error {
	pretty, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	history := filepath.Join(dir, HistoryFile)
	old, err := boundedread.ReadFile(history, MaxHistorySize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	files := append(others, atomicfile.File{Name: ResultsFile, Data: append(pretty, '\n')},
		atomicfile.File{Name: HistoryFile, Data: append(append(old, line...), '\n')})
	return atomicfile.Set{Dir: dir, Files: files}.Write()
}

// CheckOutput checks, before a run, that its files can be written into
// dir (made if need be): that none of them is there as something other
// than a file, and that the history to append to reads.
func CheckOutput(dir string, others ...string) error {
	for _, name := range append(others, ResultsFile, HistoryFile) {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory", filepath.Join(dir, name))
		}
	}
	r, err := boundedread.Open(filepath.Join(dir, HistoryFile), MaxHistorySize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if r != nil {
		r.Close()
	}
	return nil
}

// ReadHistory reads the runs of a history file, oldest first. A line that
// is not a run of this format is an error naming the line.
func ReadHistory(path string) ([]*Results, error) {
	data, err := boundedread.ReadFile(path, MaxHistorySize)
	if err != nil {
		return nil, err
	}
	var runs []*Results
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		r, err := decodeResults([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs recorded", path)
	}
	return runs, nil
}
