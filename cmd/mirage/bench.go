package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/bench"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
)

func newBenchCmd() *cobra.Command {
	var (
		outDir    string
		arch      archFlag
		timeLimit time.Duration
		workers   int
		only      []string
		profile   string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the search on the paper's workloads and report speed and estimated speedups",
		Long: `bench runs superopt on each workload of the Mirage paper (GQA decode,
QKNorm+GQA, RMSNorm+MatMul, LoRA, gated MLP, nTrans; the programs are built
in) and prints one table: search seconds, states, the share of candidate ops
pruned by abstract expressions, verified candidates, the best candidate's
kernels and estimated time, the unfused program's estimate and the
speedup. It writes the table to DIR/latest.md and a bar chart of the
speedups to DIR/speedup.svg. The cache is not used.

--json prints {"arch": ..., "rows": [...]} instead of the table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkNotNegative(cmd, "time-limit"); err != nil {
				return err
			}
			ws, err := bench.Workloads()
			if err != nil {
				return err
			}
			if len(only) > 0 {
				ws = slices.DeleteFunc(ws, func(w bench.Workload) bool { return !slices.Contains(only, w.Name) })
				if len(ws) == 0 {
					return fmt.Errorf("--workload %v names no workload", only)
				}
			}
			if workers < 1 {
				return fmt.Errorf("--workers %d: want at least 1", workers)
			}
			var profiles *cost.Profiles
			if profile != "" {
				if profiles, err = cost.LoadProfiles(profile); err != nil {
					return fmt.Errorf("--profile: %v", err)
				}
			}
			var rows []bench.Row
			for _, w := range ws {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s\n", w.Name)
				rows = append(rows, benchOne(cmd, w, arch.Arch, workers, timeLimit, profiles))
			}
			title := fmt.Sprintf("mirage bench: estimated on %s, %d workers, time limit %v per workload", arch.Name, workers, timeLimit)
			var md, svg bytes.Buffer
			if err := bench.WriteMarkdown(&md, title, rows); err != nil {
				return err
			}
			if err := bench.WriteSVG(&svg, "Estimated speedup over the unfused program ("+arch.Name+")", rows); err != nil {
				return err
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			if err := atomicfile.WriteFile(filepath.Join(outDir, "latest.md"), md.Bytes(), 0o644); err != nil {
				return err
			}
			if err := atomicfile.WriteFile(filepath.Join(outDir, "speedup.svg"), svg.Bytes(), 0o644); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Arch string      `json:"arch"`
					Rows []bench.Row `json:"rows"`
				}{arch.Name, rows})
			}
			_, err = out.Write(md.Bytes())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&outDir, "out", "o", filepath.Join("bench", "results"), "directory for latest.md and speedup.svg")
	registerArch(cmd, &arch, "the cost model")
	fl.DurationVar(&timeLimit, "time-limit", 4*time.Minute+30*time.Second, "time limit per workload, superopt's --time-limit (gqa's whole space takes about 20 s on 2 cores, qknorm_gqa's more than 4 minutes)")
	fl.IntVar(&workers, "workers", 2, "parallel search workers")
	fl.StringSliceVar(&only, "workload", nil, "run only these workloads (comma-separated names)")
	fl.StringVar(&profile, "profile", "", "measured times (a profile file from bench/gpu, or a directory of profile*.json) that override the model")
	fl.BoolVar(&asJSON, "json", false, "print the rows as JSON")
	return cmd
}

// benchOne superoptimizes one workload, as superopt does with the
// workload's own superoptimize call, without the cache; a failure is
// reported in its row.
func benchOne(cmd *cobra.Command, w bench.Workload, arch target.Arch, workers int, limit time.Duration, profiles *cost.Profiles) bench.Row {
	row := bench.Row{Workload: w.Name, FirstFusedSec: -1}
	prog, err := frontend.Load(w.File, w.Source, frontend.Options{Stdout: cmd.ErrOrStderr()})
	if err != nil {
		row.Err = err.Error()
		return row
	}
	opts := driver.Options{Name: strings.TrimSuffix(filepath.Base(w.File), ".py"), Arch: arch, TimeLimit: limit, Workers: workers, Seed: 1, Profiles: profiles}
	if prog.Superopt != nil {
		opts.Preset, opts.Restrict = prog.Superopt.Config, search.Restrictions(prog.Superopt.Lists)
	}
	res, err := driver.Run(cmd.Context(), prog.Graph, opts)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	row.UnfusedUs = res.Baseline.Micros
	s := res.Stats
	row.Seconds, row.States, row.Stopped = s.Seconds, s.States, res.Stopped
	for _, p := range res.Parts {
		if f := p.Stats.FirstFused; f >= 0 && p.SameAs < 0 && (row.FirstFusedSec < 0 || f < row.FirstFusedSec) {
			row.FirstFusedSec = f
		}
	}
	if s.Seconds > 0 {
		row.StatesPerCore = float64(s.States) / s.Seconds / float64(min(workers, runtime.GOMAXPROCS(0)))
	}
	if judged := s.PrunedAbsexpr + s.PrunedShape + s.PrunedDead + s.States; judged > 0 {
		row.PrunedShare = float64(s.PrunedAbsexpr) / float64(judged)
	}
	row.Verified = int(s.Verified)
	best := res.Candidates[0]
	row.BestKernels, row.BestUs = best.Kernels, best.Estimate.Micros
	row.Speedup = res.Baseline.Micros / best.Estimate.Micros
	return row
}
