package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
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
	noEmit     bool
	profile    string
	asJSON     bool
}

func newSuperoptCmd() *cobra.Command {
	var f superoptFlags
	cmd := &cobra.Command{
		Use:   "superopt FILE",
		Short: "Search for fused μGraphs equivalent to a program",
		Long: `superopt searches the space of μGraphs (kernel graphs whose ops may be
graph-defined kernels) for ones that compute the same function as the
program FILE (.py), keeps those the finite-field verifier proves equivalent,
ranks them by the analytical cost model for --arch (estimated time on an
A100 for sm_80, an H100 for sm_90) and writes them, best first, to DIR/NAME.ugraph.json, readable by show, eval,
verify and emit.

The configuration is the one the program passes to superoptimize(config=...)
unless --config names another: ` + strings.Join(search.ConfigNames(), ", ") + `. The program's other
superoptimize arguments (griddims, imaps, omaps, fmaps, franges, blockdims)
restrict the candidates.

Results are cached by program and configuration (--cache, --no-cache). With
--time-limit, or on Ctrl-C, the search stops early and still writes what it
found. The best candidate that lowers to CUDA is also emitted into DIR, as
mirage emit would (--no-emit skips it). --json prints {"stats": {...},
"baseline_us": N, "candidates": [...], "output": PATH, "emitted":
{"candidate": N, "files": [...]}}.

Exit status: 0 when at least one candidate was found, 1 when none was, 2
for unusable input.

` + programBounds,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	registerArch(cmd, &f.arch, "shared memory per block and the cost model")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write NAME.ugraph.json into")
	fl.StringVar(&f.config, "config", "", "search configuration (default: the program's, else default)")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "stop the search after this long (e.g. 30s; 0: no limit)")
	fl.IntVar(&f.workers, "workers", 2, "parallel search workers")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the verifier's random draws")
	fl.Int64Var(&f.maxStates, "max-states", 0, "stop after this many search states (0: no limit)")
	fl.IntVar(&f.maxResults, "max-candidates", 16, "verify candidates best first and keep the first N that pass (0: all, about a second each)")
	fl.StringVar(&f.cacheDir, "cache", "", "result cache directory (default: the user cache directory)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the result cache")
	fl.BoolVar(&f.noEmit, "no-emit", false, "do not write CUDA for the best candidate")
	fl.StringVar(&f.profile, "profile", "", "measured times (a profile file from bench/gpu, or a directory of profile*.json) that override the model")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics and candidates as one JSON object")
	return cmd
}

func (f *superoptFlags) run(cmd *cobra.Command, path string) error {
	if err := checkNotNegative(cmd, "time-limit", "max-candidates", "max-states"); err != nil {
		return err
	}
	if !strings.HasSuffix(path, ".py") {
		return fmt.Errorf("%s: superopt takes a program (.py)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	prog := in.Program
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	var profiles *cost.Profiles
	if f.profile != "" {
		if profiles, err = cost.LoadProfiles(f.profile); err != nil {
			return fmt.Errorf("--profile: %v", err)
		}
	}
	pl, err := newPlan(prog, f.config, f.arch.Arch, profiles, search.Options{Workers: f.workers, Seed: f.seed, MaxStates: f.maxStates, MaxResults: f.maxResults})
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	cfg, opts, arch, baseline := pl.cfg, pl.opts, pl.arch, pl.baseline

	cache, key := f.cache(cmd, prog.Graph, cfg, opts)
	var res *search.Result
	if cache != nil {
		if r, hit, err := cache.Load(key, prog.Graph, opts.Seed); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: ignoring the cache: %v\n", err)
		} else if hit {
			res = r
			fmt.Fprintf(cmd.ErrOrStderr(), "using cached result %s\n", key)
		}
	}
	if res == nil {
		if res, err = runSearch(cmd, prog.Graph, cfg, opts, f.timeLimit); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		// A search cut short (time limit, state budget, Ctrl-C) is not the
		// search's result: a later run, with a longer limit, must not get it.
		if cache != nil && res.Stats.Stopped == "" {
			if err := cache.Store(key, in.Name, res); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: cache: %v\n", err)
			}
		}
	}

	out := ""
	if len(res.Candidates) > 0 {
		file, err := res.File(in.Name, struct {
			Config string `json:"config"`
			Arch   string `json:"arch"`
			Seed   uint64 `json:"seed"`
		}{cfg.Name, f.arch.Name, f.seed})
		if err != nil {
			return err
		}
		if err := os.MkdirAll(f.outDir, 0o755); err != nil {
			return err
		}
		out = filepath.Join(f.outDir, in.Name+".ugraph.json")
		if err := kernel.WriteFile(out, file); err != nil {
			return err
		}
	}
	var emitted *emittedJSON
	if !f.noEmit && len(res.Candidates) > 0 {
		emitted = f.emitBest(cmd, in.Name, path, res)
	}
	if f.asJSON {
		err = printSuperoptJSON(cmd.OutOrStdout(), res, baseline.Micros, out, emitted)
	} else {
		printSuperoptTable(cmd.OutOrStdout(), res, arch, baseline.Micros, out)
		if emitted != nil {
			fmt.Fprintf(cmd.OutOrStdout(), "CUDA for candidate %d: %s\n", emitted.Candidate, strings.Join(emitted.Files, ", "))
		}
	}
	if err != nil {
		return err
	}
	if len(res.Candidates) == 0 {
		return &exitError{code: exitDiffer, err: fmt.Errorf("%s: no equivalent μGraph found", path)}
	}
	return nil
}

// emittedJSON says which candidate superopt wrote CUDA for.
type emittedJSON struct {
	Candidate int      `json:"candidate"`
	Files     []string `json:"files"`
}

// emitBest writes CUDA for the best candidate that lowers for the target
// into the output directory; a candidate that does not (a kernel over the
// shared-memory limit of the code generator's plan) is skipped with a
// warning. It returns nil when none lowers.
func (f *superoptFlags) emitBest(cmd *cobra.Command, name, source string, res *search.Result) *emittedJSON {
	for i, c := range res.Candidates {
		r, err := emitFiles(name, c.Graph, cuda.Options{Arch: f.arch.Arch, Source: source}, f.outDir)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: candidate %d: no CUDA: %v\n", i, err)
			continue
		}
		e := &emittedJSON{Candidate: i}
		for _, file := range r.Files {
			e.Files = append(e.Files, filepath.Join(f.outDir, file.Name))
		}
		return e
	}
	return nil
}

// plan is what a search of one program needs: its configuration (named by
// the flag, else by the program's superoptimize call, and restricted by
// that call's arguments), the target, the cost model's estimate of the
// unfused program, and the search options with the model plugged in.
type plan struct {
	cfg      search.Config
	arch     target.Arch
	baseline cost.Estimate
	opts     search.Options
}

// newPlan makes the plan; profiles, when not nil, override the model's
// estimate of every graph they measured on the arch.
func newPlan(prog *frontend.Program, config string, arch target.Arch, profiles *cost.Profiles, opts search.Options) (*plan, error) {
	name := config
	if name == "" && prog.Superopt != nil {
		name = prog.Superopt.Config
	}
	cfg, err := search.NamedConfig(name)
	if err != nil {
		return nil, err
	}
	if prog.Superopt != nil {
		cfg.Restrict(search.Restrictions(prog.Superopt.Lists))
	}
	cfg.Arch = arch
	baseline, err := cost.EstimateGraph(prog.Graph, arch)
	if err != nil {
		return nil, fmt.Errorf("estimating the program: %v", err)
	}
	if us, ok := profiles.Lookup(arch.Name, prog.Name, prog.Graph); ok {
		baseline.Micros = us
	}
	opts.Estimate = func(g *kernel.Graph) (search.Estimate, error) {
		e, err := cost.EstimateGraph(g, arch)
		if us, ok := profiles.Lookup(arch.Name, prog.Name, g); ok && err == nil {
			e.Micros = us // measured
		}
		return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
	}
	return &plan{cfg: cfg, arch: arch, baseline: baseline, opts: opts}, nil
}

// cache returns the result cache to use and the search's key, or nil when
// caching is off.
func (f *superoptFlags) cache(cmd *cobra.Command, program *kernel.Graph, cfg search.Config, opts search.Options) (*search.Cache, string) {
	if f.noCache || f.profile != "" { // measured times change the ranking the cache holds
		return nil, ""
	}
	dir := f.cacheDir
	if dir == "" {
		d, err := search.DefaultCacheDir()
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: no cache directory (%v); caching is off\n", err)
			return nil, ""
		}
		dir = d
	}
	return &search.Cache{Dir: dir}, search.Key(program, cfg, opts)
}

// runSearch runs the generator, stopping on Ctrl-C or after limit (0: no
// limit), with a progress line on stderr when stderr is a terminal.
func runSearch(cmd *cobra.Command, program *kernel.Graph, cfg search.Config, opts search.Options, limit time.Duration) (*search.Result, error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	errw := cmd.ErrOrStderr()
	if isTerminal(errw) {
		opts.Progress = func(s search.Stats) {
			fmt.Fprintf(errw, "\r%.1fs  %d states (%.0f/s)  pruned: %d order, %d absexpr, %d shape  %d candidates, %d verified  ",
				s.Seconds, s.States, float64(s.States)/max(s.Seconds, 1e-3), s.PrunedOrder, s.PrunedAbsexpr, s.PrunedShape, s.Complete, s.Verified)
		}
		defer fmt.Fprint(errw, "\r\033[K")
	}
	return search.Run(ctx, program, cfg, opts)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// candidateJSON is one candidate in superopt --json.
type candidateJSON struct {
	Kernels       int     `json:"kernels"`
	Customized    int     `json:"customized"`
	Grids         [][]int `json:"grids"`
	ForloopRanges []int   `json:"forloop_ranges"`
	DeviceBytes   int64   `json:"device_bytes"`
	Flops         int64   `json:"flops"`
	EstimatedUs   float64 `json:"estimated_us"`
	Speedup       float64 `json:"speedup"`
}

func printSuperoptJSON(w io.Writer, res *search.Result, baselineUs float64, out string, emitted *emittedJSON) error {
	cands := make([]candidateJSON, len(res.Candidates))
	for i, c := range res.Candidates {
		cj := candidateJSON{
			Kernels: c.Kernels, Customized: c.Customized, Grids: [][]int{}, ForloopRanges: []int{},
			DeviceBytes: c.Estimate.Bytes, Flops: c.Estimate.Flops, EstimatedUs: c.Estimate.Micros,
			Speedup: baselineUs / c.Estimate.Micros,
		}
		for _, g := range c.Grids {
			cj.Grids = append(cj.Grids, g[:])
		}
		cj.ForloopRanges = append(cj.ForloopRanges, c.ForloopRanges...)
		cands[i] = cj
	}
	return writeJSON(w, struct {
		Stats      search.Stats    `json:"stats"`
		BaselineUs float64         `json:"baseline_us"`
		Candidates []candidateJSON `json:"candidates"`
		Output     string          `json:"output,omitempty"`
		Emitted    *emittedJSON    `json:"emitted,omitempty"`
	}{res.Stats, baselineUs, cands, out, emitted})
}

func printSuperoptTable(w io.Writer, res *search.Result, arch target.Arch, baselineUs float64, out string) {
	s := res.Stats
	fmt.Fprintf(w, "searched %d states in %.1fs", s.States, s.Seconds)
	if s.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", s.Stopped)
	}
	fmt.Fprintf(w, "; pruned %d by order, %d by expression, %d by shape, %d as dead ends, %d as duplicates; %d candidates: %d verified, %d rejected, %d not verified\n",
		s.PrunedOrder, s.PrunedAbsexpr, s.PrunedShape, s.PrunedDead, s.PrunedHash, s.Complete, s.Verified, s.Rejected, s.Unchecked)
	if len(res.Candidates) == 0 {
		return
	}
	fmt.Fprintf(w, "unfused program: %.1f µs estimated on %v\n", baselineUs, arch)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tkernels\tcustomized\tgrids\tforloop\tdevice MB\tGFLOP\test. µs\tspeedup")
	for i, c := range res.Candidates {
		var grids, ranges []string
		for j, g := range c.Grids {
			grids = append(grids, fmt.Sprintf("%dx%dx%d", g[0], g[1], g[2]))
			ranges = append(ranges, fmt.Sprint(c.ForloopRanges[j]))
		}
		e := c.Estimate
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%.1f\t%.2f\t%.1f\t%.2fx\n", i, c.Kernels, c.Customized,
			orDash(strings.Join(grids, " ")), orDash(strings.Join(ranges, " ")),
			float64(e.Bytes)/1e6, float64(e.Flops)/1e9, e.Micros, baselineUs/e.Micros)
	}
	tw.Flush()
	fmt.Fprintf(w, "wrote %s\n", out)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
