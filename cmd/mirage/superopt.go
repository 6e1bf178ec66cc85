package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/block"
)

// superoptFlags are the flags of mirage superopt.
type superoptFlags struct {
	load       loadFlags
	outDir     string
	config     string
	arch       archFlag
	timeLimit  time.Duration
	workers    int
	seed       uint64
	maxStates  int64
	maxResults int
	cacheDir   string
	noCache    bool
	noSeeds    bool
	noEmit     bool
	profile    string
	asJSON     bool
	shard      string // I/N or auto: search one slice (DESIGN §8)
	shardDir   string
	shards     int // N, for --shard auto in a Kubernetes Indexed Job
	dynamic    dynamicFlags
}

func newSuperoptCmd() *cobra.Command {
	var f superoptFlags
	cmd := &cobra.Command{
		Use:   "superopt FILE [-- PROGRAM-ARGS]",
		Short: "Search for fused μGraphs equivalent to a program",
		Long: `superopt finds faster μGraphs (kernel graphs whose ops may be graph-defined
kernels) that compute the same function as the program FILE (.py), and
writes them, best first, to DIR/NAME.ugraph.json, readable by show, eval,
verify and emit, with the best one's CUDA beside it (NAME.cu, NAME.h,
mirage_runtime.cuh; --no-emit skips it) and NAME.manifest.json, written
last, with the files' SHA-256 sums.

A program of any size is cut into parts that one search can take (cut
points are tensors kept in device memory); each part is searched with a
configuration derived from its ops and shapes (--config, or the program's
superoptimize(config=...), names a preset for every part instead; the
presets are ` + strings.Join(search.ConfigNames(), ", ") + `), and parts with the
same canonical hash (shapes included) are searched once. The best μGraph of
each part is stitched into one kernel graph, verified against the whole
program by the finite-field verifier, and ranked by the analytical cost
model for --arch (an A100 for sm_80, an H100 for sm_90). A part that does
not fuse keeps its own ops, and the unfused program is always an answer.
The program's other superoptimize arguments (griddims, imaps, omaps, fmaps,
franges, blockdims) restrict every part's search.

Each part's search starts from seeds: fused μGraphs built by rule, as a
rule-based fuser would write them (rows: element-wise ops, row sums and
norms with whole rows per block; matmul: matmuls sharing their left operand
with element-wise or rms_norm prologues and element-wise epilogues;
attention: softmax(f(Q·K))·V split over the keys as flash-decoding does,
with a kernel that combines the splits). They keep to the grids, maps and
ranges the program's superoptimize(...) fixes. The
best seed of each rule passes the verifier's fast path before the
enumeration begins and its full check beside it, so a part has a fused
answer within seconds; the enumeration looks for better ones, and seeds
are ranked with what it finds (--no-seeds leaves them out).

The whole run has a time budget (--time-limit, default ` + driver.DefaultTimeLimit.String() + `, printed at the
start); when it runs out, or on Ctrl-C or SIGTERM, the parts searched so far
make the answer (a second Ctrl-C exits at once, writing nothing). Search
results are cached per part (--cache, --no-cache).

--json prints {"stats": {...}, "baseline_us": N, "candidates": [...],
"parts": [...], "output": PATH, "emitted": {"candidate": N, "files":
[...]}}: candidates are whole-program answers, best first (each with the
seed rules that built its parts, "seed"); parts says per part which ops it
holds, whether it was fused and if not why, the seed rule of its answer
("seed") and what became of each rule's seeds ("seeds"), when since the
run began it had its first fused candidate, faster than its ops or not
("first_fused_at_seconds", -1: none), and its search's statistics.
stats.first_fused_seconds is when every part had one (-1: a part had none).

Past one machine: --shard I/N --shard-dir DIR searches slice I (from 0)
of N and writes only DIR/NAME.shard-I-of-N.json (atomically; -o and the
CUDA are mirage merge's). Every process computes the same slicing from the
program, the flags and N alone, so the N processes need nothing but a
shared directory; mirage merge DIR then ranks, verifies, stitches and
writes what one process would have. --shard auto takes I and N from a Slurm
job array (SLURM_ARRAY_TASK_ID, _MIN, _MAX) or a Kubernetes Indexed Job
(JOB_COMPLETION_INDEX, with N from --shards). A shard interrupted (SIGTERM,
Ctrl-C) writes nothing and exits 130, so that its task is run again; one
stopped by --time-limit writes what it searched, and the merge says so.
See deploy/ and the README.

` + dynamicHelp + `
The range is covered by buckets (--buckets, default powers of two up to
HI); each is searched as the static program at m = its size and gets its
own verified μGraph (a bucket runs a larger bucket's instead when the cost
model has it faster on its rows: rows past m move nothing). The CUDA has
one entry point, mirage_NAME(outputs, inputs, m, workspace, stream), that
runs the smallest bucket at or above m on tensors of exactly m rows;
NAME.ugraph.json holds each bucket's candidates, and --json adds "buckets"
(size, range, estimated_us, estimated_us_at_lo, the chosen μGraph, parts).
examples/engine runs such a layer in a decode loop.

Memory grows with the weights, which the verifier evaluates as
finite-field values: a LLaMA-7B MLP block peaks at about 3.5 GB; a 70B
one keeps about 7 GB live and, left alone, lets the heap grow to 15 GB.
mirage caps the Go heap softly at 3/4 of the machine's memory (or of its
memory cgroup's limit); GOMEMLIMIT overrides that (GOMEMLIMIT=6GiB: the
70B block peaks at 7.6 GB, no slower).

Exit status: 0 with an answer (every program that loads has one), 2 for
unusable input.

` + programBounds,
		Args: f.load.files(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	registerArch(cmd, &f.arch, "shared memory per block and the cost model")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write the files into")
	fl.StringVar(&f.config, "config", "", "a preset configuration for every part (default: the program's, else one chosen per part)")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "budget of the whole run (e.g. 150s; 0: "+driver.DefaultTimeLimit.String()+")")
	fl.IntVar(&f.workers, "workers", 2, "parallel search workers")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the verifier's random draws")
	fl.Int64Var(&f.maxStates, "max-states", 0, "stop each part's search after this many states (0: no limit)")
	fl.IntVar(&f.maxResults, "max-candidates", 2, "verify each part's candidates best first and keep the first N that pass, and write the N best whole-program answers (0: all of them)")
	fl.StringVar(&f.cacheDir, "cache", "", "result cache directory (default: the user cache directory)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the result cache")
	fl.BoolVar(&f.noSeeds, "no-seeds", false, "search without the rules' seeds: the enumeration's candidates only")
	fl.BoolVar(&f.noEmit, "no-emit", false, "do not write CUDA for the best candidate")
	fl.StringVar(&f.profile, "profile", "", "measured times (a profile file from bench/gpu, or a directory of profile*.json) that override the model")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics, candidates and parts as one JSON object")
	fl.StringVar(&f.shard, "shard", "", "search only slice `I/N` (I from 0) of the run, or auto: from the Slurm array or Kubernetes Indexed Job; needs --shard-dir")
	fl.StringVar(&f.shardDir, "shard-dir", "", "with --shard: the (shared) directory the slice's file goes to, for mirage merge")
	fl.IntVar(&f.shards, "shards", 0, "with --shard auto in a Kubernetes Indexed Job: N, the Job's completions")
	f.dynamic.register(cmd, true)
	pathFlags(cmd, "out", "cache", "profile", "shard-dir")
	return cmd
}

func (f *superoptFlags) run(cmd *cobra.Command, path string) error {
	if err := checkNotNegative(cmd, "time-limit", "max-candidates", "max-states"); err != nil {
		return err
	}
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	if !strings.HasSuffix(path, ".py") {
		return fmt.Errorf("%s: superopt takes a program (.py)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	shard, sharded, err := f.shardFlags(cmd)
	if err != nil {
		return err
	}
	var profiles *cost.Profiles
	if f.profile != "" {
		if profiles, err = cost.LoadProfiles(f.profile); err != nil {
			return fmt.Errorf("--profile: %v", err)
		}
	}
	opts, err := f.driverOptions(cmd, in, profiles)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if sharded && (f.dynamic.on() || f.dynamic.buckets != "") {
		return errors.New("--dynamic with --shard: shard a dynamic program's buckets by hand (--buckets), one static run each")
	}
	if sharded {
		return f.runShard(cmd, in, path, opts, shard)
	}
	if f.dynamic.on() || f.dynamic.buckets != "" {
		return f.runDynamic(cmd, in, path, opts)
	}
	// The output directory is checked before the search, not after it.
	if err := answerOutput(cmd, f.outDir, in.Name, path, f.answerMeta(), f.arch.Arch, !f.noEmit).Check(); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "superopt %s: time budget %v (--time-limit), %d worker(s), %s\n", in.Name, opts.TimeLimit, opts.Workers, opts.Arch)

	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	res, err := driver.Run(ctx, in.Program.Graph, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	out, emitted, err := f.writeResult(cmd, in.Name, path, res)
	if err != nil {
		return err
	}
	if f.asJSON {
		return printSuperoptJSON(cmd.OutOrStdout(), res, out, emitted)
	}
	printSuperoptTable(cmd.OutOrStdout(), res, opts, out, emitted)
	return nil
}

// driverOptions turns the flags and the program's superoptimize call into
// the driver's options.
func (f *superoptFlags) driverOptions(cmd *cobra.Command, in *input, profiles *cost.Profiles) (driver.Options, error) {
	prog := in.Program
	preset := f.config
	var r search.Restrictions
	if prog.Superopt != nil {
		if preset == "" {
			preset = prog.Superopt.Config
		}
		r = search.Restrictions(prog.Superopt.Lists)
	}
	if preset != "" {
		if _, err := search.NamedConfig(preset); err != nil {
			return driver.Options{}, err
		}
	}
	opts := driver.Options{
		Name: in.Name, Arch: f.arch.Arch, Preset: preset, Restrict: r,
		TimeLimit: f.timeLimit, Workers: f.workers, Seed: f.seed, MaxStates: f.maxStates, NoSeeds: f.noSeeds,
		PartResults: partResults(f.maxResults), Profiles: profiles,
		Log: func(line string) { fmt.Fprintln(cmd.ErrOrStderr(), line) },
	}
	if opts.TimeLimit == 0 {
		opts.TimeLimit = driver.DefaultTimeLimit
	}
	// Measured times change the ranking a cache holds.
	if !f.noCache && f.profile == "" {
		dir := f.cacheDir
		if dir == "" {
			d, err := search.DefaultCacheDir()
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: no cache directory (%v); caching is off\n", err)
				return opts, nil
			}
			dir = d
		}
		opts.Cache = &search.Cache{Dir: dir}
	}
	return opts, nil
}

// emittedJSON says which candidate superopt wrote CUDA for.
type emittedJSON struct {
	Candidate int      `json:"candidate"`
	Files     []string `json:"files"`
}

// answerMeta is the μGraph document's meta: the flags that shaped the
// answer and the program's arguments.
type answerMeta struct {
	Config string   `json:"config,omitempty"`
	Arch   string   `json:"arch"`
	Seed   uint64   `json:"seed"`
	Args   []string `json:"args,omitempty"` // the program's, after --
}

// writeResult writes res as the driver's output set, with the flags that
// shaped it (and the program's arguments) in the μGraph document's meta and,
// unless --no-emit, the CUDA.
func (f *superoptFlags) writeResult(cmd *cobra.Command, name, source string, res *driver.Result) (string, *emittedJSON, error) {
	return writeAnswer(cmd, res, f.outDir, name, source, f.answerMeta(), f.arch.Arch, !f.noEmit)
}

// answerMeta is the meta of the answers this command writes (or its
// shards' merge does).
func (f *superoptFlags) answerMeta() answerMeta {
	return answerMeta{f.config, f.arch.Name, f.seed, f.load.args}
}

// writeAnswer writes res into dir as the output set NAME.* (superopt's and
// merge's), the CUDA unless !emit.
func writeAnswer(cmd *cobra.Command, res *driver.Result, dir, name, source string, meta answerMeta, arch target.Arch, emit bool) (string, *emittedJSON, error) {
	w, err := res.Write(answerOutput(cmd, dir, name, source, meta, arch, emit))
	if err != nil {
		return "", nil, err
	}
	var emitted *emittedJSON
	if w.Candidate >= 0 {
		emitted = &emittedJSON{Candidate: w.Candidate, Files: w.CUDA}
	}
	return w.Graph, emitted, nil
}

// answerOutput is the output set superopt and merge write.
func answerOutput(cmd *cobra.Command, dir, name, source string, meta answerMeta, arch target.Arch, emit bool) driver.Output {
	out := driver.Output{Dir: dir, Name: name, Meta: meta,
		Warn: func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+msg) }}
	if emit {
		out.CUDA = &cuda.Options{Arch: arch, Source: source}
	}
	return out
}

// candidateJSON is one whole-program candidate in superopt --json.
type candidateJSON struct {
	Kernels       int     `json:"kernels"`
	Customized    int     `json:"customized"`
	Grids         [][]int `json:"grids"`
	ForloopRanges []int   `json:"forloop_ranges"`
	DeviceBytes   int64   `json:"device_bytes"`
	Flops         int64   `json:"flops"`
	EstimatedUs   float64 `json:"estimated_us"`
	Speedup       float64 `json:"speedup"`
	Unfused       bool    `json:"unfused"`
	Hash          string  `json:"hash"`               // cost.GraphHash: what profiles key it by
	Measured      bool    `json:"measured,omitempty"` // estimated_us is a profile's measured time
	Seed          string  `json:"seed,omitempty"`     // the seed rules that built its parts
	// ByParts: its own check did not finish in the budget; its parts are
	// verified and it is wired as they were.
	ByParts bool `json:"verified_by_parts,omitempty"`
}

// partJSON is one part in superopt --json.
type partJSON struct {
	Ops         []string     `json:"ops"`
	OpIndices   []int        `json:"op_indices"`
	Inputs      int          `json:"inputs"`
	Outputs     int          `json:"outputs"`
	Config      string       `json:"config"`
	Fused       bool         `json:"fused"`
	WhyNot      string       `json:"why_not,omitempty"`
	EstimatedUs float64      `json:"estimated_us"`
	UnfusedUs   float64      `json:"unfused_us"`
	Cached      bool         `json:"cached"`
	SameAs      *int         `json:"same_as,omitempty"`
	Stats       search.Stats `json:"stats"`
	// Seed is the rule that built the part's answer; Seeds what became of
	// each rule's seeds; FirstFusedAt when, since the run began, the part
	// had its first fused answer (-1: none).
	Seed         string             `json:"seed,omitempty"`
	Seeds        []search.SeedTrial `json:"seeds"`
	FirstFusedAt float64            `json:"first_fused_at_seconds"`
}

func printSuperoptJSON(w io.Writer, res *driver.Result, out string, emitted *emittedJSON) error {
	return printAnswerJSON(w, res, out, emitted, nil)
}

// mergeJSON is what merge --json adds to superopt's object.
type mergeJSON struct {
	Shards     int   `json:"shards"`
	Incomplete []int `json:"incomplete"` // shards stopped early, by index
}

func printAnswerJSON(w io.Writer, res *driver.Result, out string, emitted *emittedJSON, merged *mergeJSON) error {
	cands := make([]candidateJSON, len(res.Candidates))
	for i, c := range res.Candidates {
		cands[i] = candidateSummary(c, res.Baseline)
	}
	return writeJSON(w, struct {
		Stats      search.Stats    `json:"stats"`
		BaselineUs float64         `json:"baseline_us"`
		Candidates []candidateJSON `json:"candidates"`
		Parts      []partJSON      `json:"parts"`
		Stopped    string          `json:"stopped,omitempty"`
		Output     string          `json:"output"`
		Emitted    *emittedJSON    `json:"emitted,omitempty"`
		*mergeJSON
	}{res.Stats, res.Baseline.Micros, cands, partsJSON(res), res.Stopped, out, emitted, merged})
}

// candidateSummary is a whole-program candidate as --json prints it.
func candidateSummary(c *driver.Candidate, baseline cost.Estimate) candidateJSON {
	cj := candidateJSON{
		Kernels: c.Kernels, Customized: c.Customized, Grids: [][]int{}, ForloopRanges: []int{},
		DeviceBytes: c.Estimate.Bytes, Flops: c.Estimate.Flops, EstimatedUs: c.Estimate.Micros,
		Speedup: baseline.Micros / c.Estimate.Micros, Unfused: c.Unfused,
		Hash: cost.GraphHash(c.Graph), Measured: c.Measured, Seed: c.Seed, ByParts: c.ByParts,
	}
	for _, g := range c.Grids {
		cj.Grids = append(cj.Grids, g[:])
	}
	cj.ForloopRanges = append(cj.ForloopRanges, c.ForloopRanges...)
	return cj
}

// partsJSON are a result's parts as --json prints them.
func partsJSON(res *driver.Result) []partJSON {
	parts := make([]partJSON, len(res.Parts))
	for i, p := range res.Parts {
		parts[i] = partJSON{Ops: p.Kinds, OpIndices: p.Ops, Inputs: p.Inputs, Outputs: p.Outputs, Config: p.Config,
			Fused: p.Fused, WhyNot: p.WhyNot, EstimatedUs: p.EstimatedUs, UnfusedUs: p.UnfusedUs, Cached: p.Cached, Stats: p.Stats,
			Seed: p.Seed, Seeds: p.Seeds, FirstFusedAt: p.FirstFusedAt}
		if parts[i].Seeds == nil {
			parts[i].Seeds = []search.SeedTrial{}
		}
		if p.SameAs >= 0 {
			parts[i].SameAs = &p.SameAs
		}
	}
	return parts
}

func printSuperoptTable(w io.Writer, res *driver.Result, opts driver.Options, out string, emitted *emittedJSON) {
	s := res.Stats
	fused := 0
	for _, p := range res.Parts {
		if p.Fused {
			fused++
		}
	}
	fmt.Fprintf(w, "%d part(s), %d fused; searched %d states in %.1fs", len(res.Parts), fused, s.States, s.Seconds)
	if res.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", res.Stopped)
	}
	if s.FirstFused >= 0 {
		fmt.Fprintf(w, "; every part had a fused candidate at %.1fs", s.FirstFused)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tops\tconfig\tfused\test. µs\tunfused µs\tfirst fused\tsearch")
	for i, p := range res.Parts {
		search := fmt.Sprintf("%d states, %.1fs", p.Stats.States, p.Stats.Seconds)
		switch {
		case p.SameAs >= 0:
			search = fmt.Sprintf("as part %d", p.SameAs)
		case p.Cached:
			search = "cached"
		}
		status := "yes"
		switch {
		case !p.Fused:
			status = "no: " + p.WhyNot
		case p.Seed != "":
			status = "yes (seed: " + p.Seed + ")"
		}
		first := "-"
		if p.FirstFusedAt >= 0 {
			first = fmt.Sprintf("%.1fs", p.FirstFusedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\n", i, strings.Join(p.Kinds, ", "), orDash(p.Config), status, p.EstimatedUs, p.UnfusedUs, first, search)
	}
	tw.Flush()
	fmt.Fprintf(w, "unfused program: %.1f µs estimated on %v\n", res.Baseline.Micros, opts.Arch)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tkernels\tcustomized\tgrids\tforloop\tdevice MB\tGFLOP\test. µs\tspeedup")
	for i, c := range res.Candidates {
		var ranges []string
		for _, r := range c.ForloopRanges {
			ranges = append(ranges, fmt.Sprint(r))
		}
		e := c.Estimate
		note := ""
		switch {
		case c.Unfused:
			note = "  (the program as written)"
		case c.ByParts:
			note = "  (verified part by part: the whole program's check did not fit the time limit)"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%.1f\t%.2f\t%.1f\t%.2fx%s\n", i, c.Kernels, c.Customized,
			gridsText(c.Grids), orDash(strings.Join(ranges, " ")),
			float64(e.Bytes)/1e6, float64(e.Flops)/1e9, e.Micros, res.Baseline.Micros/e.Micros, note)
	}
	tw.Flush()
	fmt.Fprintf(w, "wrote %s\n", out)
	if emitted != nil {
		fmt.Fprintf(w, "CUDA for candidate %d: %s\n", emitted.Candidate, strings.Join(emitted.Files, ", "))
	}
}

// gridsText prints the grids of a candidate's graph-defined kernels as
// "96x1x1 8x8x1", or "-" when it has none.
func gridsText(grids []block.Dim3) string {
	var gs []string
	for _, g := range grids {
		gs = append(gs, fmt.Sprintf("%dx%dx%d", g[0], g[1], g[2]))
	}
	return orDash(strings.Join(gs, " "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// partResults is driver.Options.PartResults for --max-candidates n: the
// driver's 0 is its default, and all of them is -1.
func partResults(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
