package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// defaultArch is the target when --arch is not given.
const defaultArch = "sm_90"

// superoptFlags are the flags of mirage superopt.
type superoptFlags struct {
	load       loadFlags
	outDir     string
	config     string
	arch       string
	timeLimit  time.Duration
	workers    int
	seed       uint64
	maxStates  int64
	maxResults int
	cacheDir   string
	noCache    bool
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
found. --json prints {"stats": {...}, "candidates": [...], "output": PATH}.

Exit status: 0 when at least one candidate was found, 1 when none was, 2
for unusable input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write NAME.ugraph.json into")
	fl.StringVar(&f.config, "config", "", "search configuration (default: the program's, else default)")
	fl.StringVar(&f.arch, "arch", defaultArch, "target architecture: sm_80 (A100) or sm_90 (H100): shared-memory limit and cost model")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "stop the search after this long (e.g. 30s; 0: no limit)")
	fl.IntVar(&f.workers, "workers", 2, "parallel search workers")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the verifier's random draws")
	fl.Int64Var(&f.maxStates, "max-states", 0, "stop after this many search states (0: no limit)")
	fl.IntVar(&f.maxResults, "max-candidates", 16, "verify in full and keep the best N candidates (0: all)")
	fl.StringVar(&f.cacheDir, "cache", "", "result cache directory (default: the user cache directory)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the result cache")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics and candidates as one JSON object")
	return cmd
}

func (f *superoptFlags) run(cmd *cobra.Command, path string) error {
	if !strings.HasSuffix(path, ".py") {
		return fmt.Errorf("%s: superopt takes a program (.py)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	prog := in.Program
	name := f.config
	if name == "" && prog.Superopt != nil {
		name = prog.Superopt.Config
	}
	cfg, err := search.NamedConfig(name)
	if err != nil {
		return err
	}
	cfg.Override(prog.Superopt)
	arch, err := cost.LookupArch(f.arch)
	if err != nil {
		return fmt.Errorf("--arch: %v", err)
	}
	cfg.MaxSmemBytes = arch.MaxSmemPerBlock
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	baseline, err := cost.EstimateGraph(prog.Graph, arch)
	if err != nil {
		return fmt.Errorf("%s: estimating the program: %v", path, err)
	}
	opts := search.Options{
		Workers: f.workers, Seed: f.seed, MaxStates: f.maxStates, MaxResults: f.maxResults,
		Estimate: func(g *kernel.Graph) (search.Estimate, error) {
			e, err := cost.EstimateGraph(g, arch)
			return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
		},
	}

	cache, key := f.cache(cmd, prog.Graph, cfg, opts)
	var res *search.Result
	if cache != nil {
		if r, hit, err := cache.Load(key); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
		} else if hit {
			res = r
			fmt.Fprintf(cmd.ErrOrStderr(), "using cached result %s\n", key)
		}
	}
	if res == nil {
		if res, err = f.search(cmd, prog.Graph, cfg, opts); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if cache != nil {
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
		}{cfg.Name, f.arch, f.seed})
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
	if f.asJSON {
		err = printSuperoptJSON(cmd.OutOrStdout(), res, baseline.Micros, out)
	} else {
		printSuperoptTable(cmd.OutOrStdout(), res, arch, baseline.Micros, out)
	}
	if err != nil {
		return err
	}
	if len(res.Candidates) == 0 {
		return &exitError{code: exitDiffer, err: fmt.Errorf("%s: no equivalent μGraph found", path)}
	}
	return nil
}

// cache returns the result cache to use and the search's key, or nil when
// caching is off.
func (f *superoptFlags) cache(cmd *cobra.Command, program *kernel.Graph, cfg search.Config, opts search.Options) (*search.Cache, string) {
	if f.noCache {
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

// search runs the generator, stopping on Ctrl-C or at the time limit, with
// a progress line on stderr when stderr is a terminal.
func (f *superoptFlags) search(cmd *cobra.Command, program *kernel.Graph, cfg search.Config, opts search.Options) (*search.Result, error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	if f.timeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeLimit)
		defer cancel()
	}
	errw := cmd.ErrOrStderr()
	if isTerminal(errw) {
		opts.Progress = func(s search.Stats) {
			fmt.Fprintf(errw, "\r%.1fs  %d states (%.0f/s)  pruned: %d order, %d absexpr, %d shape  verified %d  ",
				s.Seconds, s.States, float64(s.States)/max(s.Seconds, 1e-3), s.PrunedOrder, s.PrunedAbsexpr, s.PrunedShape, s.Verified)
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

func printSuperoptJSON(w io.Writer, res *search.Result, baselineUs float64, out string) error {
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Stats      search.Stats    `json:"stats"`
		BaselineUs float64         `json:"baseline_us"`
		Candidates []candidateJSON `json:"candidates"`
		Output     string          `json:"output,omitempty"`
	}{res.Stats, baselineUs, cands, out})
}

func printSuperoptTable(w io.Writer, res *search.Result, arch cost.Arch, baselineUs float64, out string) {
	s := res.Stats
	fmt.Fprintf(w, "searched %d states in %.1fs", s.States, s.Seconds)
	if s.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", s.Stopped)
	}
	fmt.Fprintf(w, "; pruned %d by order, %d by expression, %d by shape, %d as dead ends, %d as duplicates; %d verified, %d rejected\n",
		s.PrunedOrder, s.PrunedAbsexpr, s.PrunedShape, s.PrunedDead, s.PrunedHash, s.Verified, s.Rejected)
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
