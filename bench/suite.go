package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/target"
)

// Suite is a run of the benchmark suite, as mirage bench's flags give it.
type Suite struct {
	Arch          target.Arch
	TimeLimit     time.Duration // per workload
	Workers       int
	Seed          uint64
	Config        string // a preset for every workload; "": each program's, else one per part
	MaxStates     int64
	NoSeeds       bool
	MaxCandidates int      // verified candidates kept per part; 0: all
	Only          []string // of the built-in workloads; nil: all
	OnlyPaths     bool     // no built-in workloads
	Paths         []string // programs, μGraph files or directories of them, always run
	Profile       string   // measured times that override the model
	Compare       string   // a baseline results.json; "": none
	Tolerances    Tolerances
	ShardBalance  int    // gqa searched as this many shards too; 0: not
	DynamicBatch  string // LO..HI: rmsnorm_matmul with dynamic rows too; "": not
	Out           string // the directory of latest.md, speedup.svg, results.json, history.jsonl
	Version       string // mirage's, recorded in results.json
	Load          frontend.Options
	Log           func(string) // a line as each workload starts
}

// Run is what a suite's run made: its rows, its files' contents and the
// comparison with the baseline, if one was given.
type Run struct {
	Rows       []Row
	Shards     *ShardBalance
	Dynamic    *DynamicCost
	Markdown   []byte // latest.md
	Comparison *Comparison
}

// ErrInterrupted is Run's error when ctx is done before the suite is:
// nothing is written.
var ErrInterrupted = errors.New("bench: interrupted; nothing written")

// RunReport is bench --json's object.
type RunReport struct {
	Arch         string        `json:"arch"`
	Rows         []Row         `json:"rows"`
	ShardBalance *ShardBalance `json:"shard_balance,omitempty"`
	DynamicBatch *DynamicCost  `json:"dynamic_batch,omitempty"`
	Comparison   *Comparison   `json:"comparison,omitempty"`
}

// Report is r's RunReport, estimated on arch.
func (r *Run) Report(arch string) RunReport {
	return RunReport{arch, r.Rows, r.Shards, r.Dynamic, r.Comparison}
}

// Regressions names the workloads that regressed against the baseline
// (with their verdicts), or is empty.
func (r *Run) Regressions() []string {
	var names []string
	if r.Comparison == nil || !r.Comparison.Failed() {
		return nil
	}
	for _, d := range r.Comparison.Deltas {
		if d.Verdict.Failing() {
			names = append(names, d.Workload+" ("+string(d.Verdict)+")")
		}
	}
	return names
}

// files are the files of a run beside results.json and history.jsonl:
// the table and the chart.
var files = []string{"latest.md", "speedup.svg"}

// Check refuses settings no run can use.
func (s *Suite) Check() error {
	switch {
	case s.Workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", s.Workers)
	case !(s.Tolerances.Estimate >= 0) || math.IsInf(s.Tolerances.Estimate, 1):
		// NaN compares false with everything: it would let every
		// regression through.
		return fmt.Errorf("--tolerance %v: want 0 or more", s.Tolerances.Estimate)
	case math.IsNaN(s.Tolerances.SearchTime) || s.Tolerances.SearchTime != 0 && s.Tolerances.SearchTime < 1 || math.IsInf(s.Tolerances.SearchTime, 1):
		return fmt.Errorf("--time-ratio %v: want 1 or more, or 0 to turn the check off", s.Tolerances.SearchTime)
	case s.OnlyPaths && len(s.Paths) == 0:
		return errors.New("--only-paths: no PATH given")
	case s.ShardBalance < 0:
		return fmt.Errorf("--shard-balance %d: want 0 or more", s.ShardBalance)
	}
	if s.DynamicBatch != "" {
		if _, err := s.dynamicFlag(); err != nil {
			return err
		}
	}
	return nil
}

// dynamicFlag is the dynamic-batch line's --dynamic: input 0's dim 0 over
// DynamicBatch.
func (s *Suite) dynamicFlag() (driver.DynamicFlag, error) {
	flag, err := driver.ParseDynamicFlag("0:0=" + s.DynamicBatch)
	if err != nil {
		return flag, fmt.Errorf("--dynamic-batch: %v", err)
	}
	return flag, nil
}

// Run runs the suite and writes its files into s.Out. Everything that can
// make the run unusable (a bad setting, a path that is not a program, a
// missing or foreign baseline, an unwritable directory) is checked before
// any search, so that a bad input writes nothing.
func (s *Suite) Run(ctx context.Context) (*Run, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if err := driver.CheckPreset(s.Config); err != nil {
		return nil, fmt.Errorf("--config: %v", err)
	}
	var baseline *Results
	if s.Compare != "" {
		b, err := ReadResults(s.Compare)
		if err != nil {
			return nil, fmt.Errorf("--compare: %v", err)
		}
		if err := CheckComparable(b, s.Arch.Name); err != nil {
			return nil, fmt.Errorf("--compare %s: %v", s.Compare, err)
		}
		baseline = b
	}
	ws, err := s.workloads()
	if err != nil {
		return nil, err
	}
	inputs := make([]*driver.Input, len(ws))
	for i, w := range ws {
		if inputs[i], err = driver.LoadSource(w.File, w.Source, s.Load); err != nil {
			return nil, err
		}
	}
	var profiles *cost.Profiles
	if s.Profile != "" {
		if profiles, err = cost.LoadProfiles(s.Profile); err != nil {
			return nil, fmt.Errorf("--profile: %v", err)
		}
	}
	if err := driver.CheckOutputDir(s.Out); err != nil {
		return nil, fmt.Errorf("-o %s: %v", s.Out, err)
	}
	if err := CheckOutput(s.Out, files...); err != nil {
		return nil, fmt.Errorf("-o %s: %v", s.Out, err)
	}

	calibration := Calibrate()
	s.log(fmt.Sprintf("bench: %d workload(s), %v each, %d worker(s), %s; calibration loop %.3f s",
		len(ws), s.TimeLimit, s.Workers, s.Arch, calibration))
	run := &Run{}
	for i, w := range ws {
		s.log("bench: " + w.Name)
		settle()
		run.Rows = append(run.Rows, s.runOne(ctx, inputs[i], w, profiles))
		if ctx.Err() != nil {
			// Part of a suite compares with no baseline: nothing is written.
			return nil, ErrInterrupted
		}
	}
	if i := slices.IndexFunc(ws, func(w Workload) bool { return w.Name == "gqa" }); i >= 0 && s.ShardBalance > 0 {
		s.log(fmt.Sprintf("bench: gqa in %d shards", s.ShardBalance))
		if run.Shards, err = s.shardBalance(ctx, inputs[i], ws[i]); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
	}
	if i := slices.IndexFunc(ws, func(w Workload) bool { return w.Name == "rmsnorm_matmul" }); i >= 0 && s.DynamicBatch != "" {
		s.log("bench: rmsnorm_matmul with m in " + s.DynamicBatch)
		if run.Dynamic, err = s.dynamicCost(ctx, inputs[i], ws[i]); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
	}
	results, err := s.save(run, calibration)
	if err != nil {
		return nil, err
	}
	if baseline != nil {
		if run.Comparison, err = Compare(baseline, results, s.Tolerances); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// save writes the run's table, chart, results and history line.
func (s *Suite) save(run *Run, calibration float64) (*Results, error) {
	results := NewResults(s.Version, s.Arch.Name, calibration, Options{
		TimeLimit: s.TimeLimit.String(), Workers: s.Workers, Seed: s.Seed,
		Config: s.Config, MaxStates: s.MaxStates, NoSeeds: s.NoSeeds, MaxCandidates: s.MaxCandidates, Profile: s.Profile,
	}, run.Rows)
	results.Shards, results.Dynamic = run.Shards, run.Dynamic
	title := fmt.Sprintf("mirage bench: estimated on %s, %d workers, time limit %v per workload", s.Arch.Name, s.Workers, s.TimeLimit)
	var md, svg bytes.Buffer
	if err := WriteMarkdown(&md, title, run.Rows); err != nil {
		return nil, err
	}
	if run.Shards != nil {
		if err := WriteShardBalance(&md, run.Shards); err != nil {
			return nil, err
		}
	}
	if run.Dynamic != nil {
		if err := WriteDynamicCost(&md, run.Dynamic); err != nil {
			return nil, err
		}
	}
	if err := WriteSVG(&svg, "Estimated speedup over the unfused program ("+s.Arch.Name+")", run.Rows); err != nil {
		return nil, err
	}
	if err := results.Save(s.Out, atomicfile.File{Name: files[0], Data: md.Bytes()}, atomicfile.File{Name: files[1], Data: svg.Bytes()}); err != nil {
		return nil, fmt.Errorf("-o %s: %v", s.Out, err)
	}
	run.Markdown = md.Bytes()
	return results, nil
}

func (s *Suite) log(line string) {
	if s.Log != nil {
		s.Log(line)
	}
}

// workloads returns the workloads to run: the built-in ones unless
// OnlyPaths (those Only names, when it does), then every program at
// Paths: a path given is always run.
func (s *Suite) workloads() ([]Workload, error) {
	var ws []Workload
	switch {
	case s.OnlyPaths && len(s.Only) > 0:
		return nil, errors.New("--workload picks among the built-in workloads, which --only-paths leaves out; name the programs' files as PATHs instead")
	case !s.OnlyPaths:
		var err error
		if ws, err = Workloads(); err != nil {
			return nil, err
		}
	}
	if len(s.Only) > 0 {
		for _, name := range s.Only {
			if !slices.ContainsFunc(ws, func(w Workload) bool { return w.Name == name }) {
				return nil, fmt.Errorf("--workload %s names no built-in workload", name)
			}
		}
		ws = slices.DeleteFunc(ws, func(w Workload) bool { return !slices.Contains(s.Only, w.Name) })
	}
	return FromPaths(ws, s.Paths)
}

// settings are the driver's settings of every workload: superopt's,
// without the cache.
func (s *Suite) settings() driver.Settings {
	return driver.Settings{Arch: s.Arch, Preset: s.Config, TimeLimit: s.TimeLimit, Workers: s.Workers, Seed: s.Seed,
		MaxStates: s.MaxStates, NoSeeds: s.NoSeeds, MaxCandidates: s.MaxCandidates, NoCache: true}
}

// options are the configuration a workload is searched with (Config,
// else the program's preset and its restrictions) and the driver's
// options for it, as superopt would run it without the cache.
func (s *Suite) options(in *driver.Input) (Configuration, driver.Options, error) {
	opts, err := s.settings().Options(in)
	if err != nil {
		return Configuration{}, driver.Options{}, err
	}
	// The suite reports the best answer alone: verifying more
	// combinations of a whole program's parts would only cost time.
	opts.Answers = 1
	return Configuration{Preset: opts.Preset, Restrict: opts.Restrict, MaxStates: s.MaxStates, NoSeeds: s.NoSeeds}, opts, nil
}

// runOne superoptimizes one workload, as superopt does, without the cache;
// a failure of the search is reported in its row.
func (s *Suite) runOne(ctx context.Context, in *driver.Input, w Workload, profiles *cost.Profiles) Row {
	row := Row{Workload: w.Name, File: w.File, FirstFusedSec: -1}
	g, err := in.Graph(0)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	conf, opts, err := s.options(in)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	opts.Profiles = profiles
	row.ProgramHash, row.ConfigHash = ProgramHash(g), conf.Hash()
	res, err := driver.Run(ctx, g, opts)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	row.UnfusedUs = res.Baseline.Micros
	st := res.Stats
	// When every part had a fused candidate, since the run began.
	row.Seconds, row.States, row.Stopped, row.FirstFusedSec = st.Seconds, st.States, res.Stopped, st.FirstFused
	if st.Seconds > 0 {
		row.StatesPerCore = float64(st.States) / st.Seconds / float64(min(s.Workers, runtime.GOMAXPROCS(0)))
	}
	if judged := st.PrunedAbsexpr + st.PrunedShape + st.PrunedDead + st.States; judged > 0 {
		row.PrunedShare = float64(st.PrunedAbsexpr) / float64(judged)
	}
	row.Complete, row.Verified = st.Complete, int(st.Verified)
	best := res.Candidates[0]
	row.Fused = best.Customized > 0
	row.BestKernels, row.BestUs = best.Kernels, best.Estimate.Micros
	row.Speedup = cost.Speedup(res.Baseline.Micros, best.Estimate.Micros)
	if m, ok := profiles.Measurement(s.Arch.Name, in.Name, best.Graph); ok {
		row.Measured = &Measured{MedianUs: m.MedianMicros, SpreadUs: m.Spread()}
	}
	return row
}

// shardBalance runs the workload as s.ShardBalance shards, one after
// another, each with the workers and time limit of a workload, and times
// them.
func (s *Suite) shardBalance(ctx context.Context, in *driver.Input, w Workload) (*ShardBalance, error) {
	g, err := in.Graph(0)
	if err != nil {
		return nil, err
	}
	_, opts, err := s.options(in)
	if err != nil {
		return nil, err
	}
	var secs []float64
	incomplete := 0
	for i := range s.ShardBalance {
		start := time.Now()
		res, err := driver.RunShard(ctx, g, opts, driver.Shard{Index: i, Count: s.ShardBalance})
		if err != nil {
			return nil, fmt.Errorf("%s, shard %d of %d: %v", w.Name, i, s.ShardBalance, err)
		}
		secs = append(secs, time.Since(start).Seconds())
		if res.Stopped != "" {
			incomplete++
		}
	}
	return NewShardBalance(w.Name, secs, incomplete), nil
}

// dynamicCost searches the workload with input 0's dim 0 dynamic over
// s.DynamicBatch, every default bucket in one run (each with the time
// limit of a workload), then its largest bucket alone, and times both.
func (s *Suite) dynamicCost(ctx context.Context, in *driver.Input, w Workload) (*DynamicCost, error) {
	flag, err := s.dynamicFlag()
	if err != nil {
		return nil, err
	}
	g, err := in.Graph(0)
	if err != nil {
		return nil, err
	}
	program, lo, hi, err := driver.MarkDynamic(g, []driver.DynamicFlag{flag}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: --dynamic-batch: %v", w.Name, err)
	}
	_, opts, err := s.options(in)
	if err != nil {
		return nil, err
	}
	buckets := driver.DefaultBuckets(lo, hi)
	opts.TimeLimit *= time.Duration(len(buckets))
	start := time.Now()
	res, err := driver.RunDynamic(ctx, program, lo, hi, buckets, opts)
	if err != nil {
		return nil, err
	}
	all := time.Since(start).Seconds()
	var per []float64
	for _, b := range res.Buckets {
		per = append(per, b.Stats.Seconds)
	}
	largest, err := program.Bind(buckets[len(buckets)-1])
	if err != nil {
		return nil, err
	}
	if _, opts, err = s.options(in); err != nil {
		return nil, err
	}
	start = time.Now()
	if _, err := driver.Run(ctx, largest, opts); err != nil {
		return nil, err
	}
	return NewDynamicCost(w.Name, 0, lo, hi, buckets, per, all, time.Since(start).Seconds()), nil
}

// DrawHistory writes dir/history.svg from dir/history.jsonl and returns
// its path and the number of runs drawn.
func DrawHistory(dir string) (string, int, error) {
	runs, err := ReadHistory(filepath.Join(dir, HistoryFile))
	if err != nil {
		return "", 0, fmt.Errorf("--history: %v", err)
	}
	var svg bytes.Buffer
	if err := WriteHistorySVG(&svg, runs); err != nil {
		return "", 0, err
	}
	out := filepath.Join(dir, "history.svg")
	if err := atomicfile.WriteFile(out, svg.Bytes(), 0o644); err != nil {
		return "", 0, err
	}
	return out, len(runs), nil
}

// settle collects the heap the workload before left, so that each
// workload starts as it would in a process of its own: an attention
// search leaves millions of interned expressions (absexpr), whose table
// entries go only in the collection after their expressions' (cleanups
// remove them in between), and which a next workload's collections would
// otherwise mark: LLaMA-7B's first fused answer took 6.5 s after
// qknorm_gqa's search, 2.8 s alone.
func settle() {
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanups run meanwhile
	}
	debug.FreeOSMemory()
}
