package bench

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/examples"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

var (
	countersTable     = flag.String("counters-table", "", "write the memory-traffic table of every workload's best candidate to this file (results/counters.md); TestCountersTable is skipped without it")
	countersTimeLimit = flag.Duration("counters-time-limit", 2*time.Minute, "superopt's time limit per workload for -counters-table")
)

// TestCountersTable writes bench/results/counters.md: every workload's
// best candidate, as superopt finds it at the workload's real shapes, and
// the hand-written μGraphs, emitted for the default arch and run once in
// the CPU emulator, with each kernel's memory traffic (cuda.Counters)
// beside the cost model's bytes. Run it with
//
//	go test ./bench -run TestCountersTable -counters-table results/counters.md -timeout 60m
//
// It takes about 10 minutes on 2 cores: superopt's searches (at most
// -counters-time-limit each) and a few seconds of emulation per workload.
func TestCountersTable(t *testing.T) {
	if *countersTable == "" {
		t.Skip("set -counters-table FILE to write the table")
	}
	ws, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	arch := target.MustLookup(target.Default)
	var rows []countersRow
	for _, w := range ws {
		prog, err := frontend.Load(w.File, w.Source, frontend.Options{Stdout: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		opts := driver.Options{Name: w.Name, Arch: arch, TimeLimit: *countersTimeLimit, Workers: runtime.GOMAXPROCS(0), Seed: 1}
		if prog.Superopt != nil {
			opts.Preset, opts.Restrict = prog.Superopt.Config, search.Restrictions(prog.Superopt.Lists)
		}
		res, err := driver.Run(context.Background(), prog.Graph, opts)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		how := "superopt's best"
		if res.Stopped != "" {
			how += " (search stopped: " + res.Stopped + ")"
		}
		rows = append(rows, countersRows(t, w.Name, how, res.Candidates[0].Graph, arch)...)
	}
	for _, m := range []struct {
		fsys fs.FS
		file string
	}{
		{examples.FS, "rmsnorm_matmul_mugraph.py"},
		{examples.FS, "gated_mlp_mugraph.py"},
		{examples.FS, "gqa_mugraph.py"},
		{workloadFS, "workloads/qknorm_gqa_mugraph.py"},
	} {
		src, err := fs.ReadFile(m.fsys, m.file)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := frontend.Load(path.Base(m.file), src, frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, countersRows(t, strings.TrimSuffix(path.Base(m.file), ".py"), "hand-written", prog.Graph, arch)...)
	}
	var b strings.Builder
	writeCountersMarkdown(&b, arch, *countersTimeLimit, rows)
	if err := os.WriteFile(*countersTable, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.fused && r.verdict != "ok" {
			t.Logf("%s kernel %d: %s", r.program, r.kernel, r.verdict)
		}
	}
}

// countersRow is one kernel of one program in the table.
type countersRow struct {
	program, how        string
	kernel              int
	what                string
	fused               bool
	uncounted           bool   // a library call whose work the emulator does outside the counted code (cuBLASLt)
	weights             string // the largest input: "t1 48.00 MiB"
	weightReq, weightCo float64
	weightDistinct      float64 // the weights' distinct bytes over their size
	others              string  // the other tensors requested above their size
	movedOverIdeal      float64
	moved               int64
	distinct            int64 // the sectors touched, each once (cuda.Counters.DistinctBytes)
	coalescing          float64
	conflicts           float64 // bank conflicts per shared request
	cpAsync             int64
	modelBytes          int64
	modelDRAM           int64   // the model's DRAMBytes: each tile's first read
	programMicros       float64 // the model's estimate of the whole candidate
	programMicrosNoL2   float64 // the same with every re-read served at DRAM bandwidth
	verdict             string
}

func countersRows(t *testing.T, name, how string, g *kernel.Graph, arch target.Arch) []countersRow {
	t.Helper()
	res, err := cuda.Emit(name, g, cuda.Options{Arch: arch})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	start := time.Now()
	cs, err := cuda.Measure(context.Background(), g, res, 1)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s: %d kernels measured in %v", name, len(cs), time.Since(start).Round(time.Second))
	est, err := cost.EstimateGraph(g, arch)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// The model with no L2 benefit: re-reads cost what DRAM reads do.
	noL2 := arch
	noL2.L2Bandwidth = arch.MemBandwidth
	estNoL2, err := cost.EstimateGraph(g, noL2)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var rows []countersRow
	for i, c := range cs {
		k := res.Kernels[i]
		r := countersRow{program: name, how: how, kernel: i, what: k.What, fused: k.What == "graph-defined",
			movedOverIdeal: float64(c.MovedBytes()) / float64(c.IdealBytes), moved: c.MovedBytes(), coalescing: c.Coalescing(),
			conflicts: c.BankConflictsPerAccess(), cpAsync: c.CpAsyncBytes, modelBytes: est.Kernels[i].Bytes, verdict: "ok",
			distinct: c.DistinctBytes(), modelDRAM: est.Kernels[i].DRAMBytes, programMicros: est.Micros, programMicrosNoL2: estNoL2.Micros}
		if !r.fused && c.MovedBytes() == 0 {
			r.uncounted = true
			rows = append(rows, r)
			continue
		}
		w, _ := c.Weights()
		r.weights = fmt.Sprintf("%s %s", w.Tensor, mb(w.Bytes))
		r.weightReq = float64(w.Requested()) / float64(w.Bytes)
		r.weightCo = w.LoadCoalescing()
		r.weightDistinct = float64(w.DistinctBytes()) / float64(w.Bytes)
		var others []string
		for _, x := range c.Tensors {
			if x.Tensor != w.Tensor && x.Bytes > 0 && float64(x.Requested()) > 1.05*float64(x.Bytes) {
				others = append(others, fmt.Sprintf("%s %.2fx", x.Tensor, float64(x.Requested())/float64(x.Bytes)))
			}
		}
		sort.Strings(others)
		r.others = strings.Join(others, ", ")
		if p := c.WeightProblems(); len(p) > 0 {
			r.verdict = strings.Join(p, "; ")
		}
		if !r.fused {
			r.verdict = "(library kernel: " + r.verdict + ")"
		}
		rows = append(rows, r)
	}
	return rows
}

func mb(b int64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
}

func writeCountersMarkdown(b *strings.Builder, arch target.Arch, limit time.Duration, rows []countersRow) {
	fmt.Fprintf(b, "# Memory traffic of each workload's best candidate, counted in the CPU emulator\n\n")
	fmt.Fprintf(b, "Written by `go test ./bench -run TestCountersTable -counters-table results/counters.md -timeout 60m`\n")
	fmt.Fprintf(b, "(bench/counters_test.go): every workload of `mirage bench` at its real shapes, searched by superopt\n")
	fmt.Fprintf(b, "for %s (time limit %v per workload, %d workers, seed 1), and the hand-written μGraphs; each emitted\n", arch.Name, limit, runtime.GOMAXPROCS(0))
	b.WriteString(`and run once in the CPU emulator on random inputs, as ` + "`mirage emit --counters`" + ` does. No shape is reduced.

Bytes are counted as the kernel's warps request them, with no cache: each warp-level request (one
access site, the 32 lanes of a warp) moves the distinct 32-byte sectors its lanes touch.

- **est. µs**: the cost model's estimate of the whole candidate (all its kernels), for comparing a
  workload's search result with its hand-written μGraph.
- **weights**: the kernel's largest input; **req/size**: the bytes of sectors requested from it over its
  size, and its distinct bytes (each sector it touched counted once) over its size; **load coal.**: bytes its lanes used over bytes of sectors moved. A fused kernel should request
  its weights at most 1.05x their size at 90% coalescing or more (` + "`cuda.WeightProblems`" + `).
- **other re-reads**: the smaller tensors requested more than 1.05x their size (L2 serves these re-reads
  on a GPU; the counters do not model it).
- **moved/ideal**: all bytes moved over the ideal (each input read once, each output written once);
  **distinct**: the sectors the kernel touched, each once (its DRAM traffic were L2 to serve every re-read);
  **coal.**: bytes used over bytes moved, loads and stores; **conflicts/req**: shared-memory bank
  conflicts (extra wavefronts) per warp-level shared request; **cp.async**: bytes copied global to shared.
- **model**: the cost model's ` + "`Kernel.Bytes`" + ` (requested traffic, before its L2 model);
  **moved/model**: the counters over it (library kernels: see costModelGaps in codegen/cuda/costcheck_test.go);
  **distinct/DRAM**: the distinct bytes over the model's ` + "`Kernel.DRAMBytes`" + ` (each tile's first read from DRAM).

`)
	var fused, poor []string
	for _, r := range rows {
		if !r.fused {
			continue
		}
		fused = append(fused, r.program)
		if r.verdict != "ok" {
			poor = append(poor, fmt.Sprintf("%s kernel %d (%s)", r.program, r.kernel, r.verdict))
		}
	}
	fmt.Fprintf(b, "Of %d fused (graph-defined) kernels, %d meet the weights criterion.", len(fused), len(fused)-len(poor))
	if len(poor) > 0 {
		b.WriteString(" The others:\n\n")
		for _, p := range poor {
			fmt.Fprintf(b, "- %s\n", p)
		}
	}
	b.WriteString("\n")
	writeTradeOffs(b, rows)
	b.WriteString("| program | candidate | est. µs | kernel | what | weights | req/size | load coal. | other re-reads | moved | moved/ideal | distinct | coal. | conflicts/req | cp.async | model | moved/model | distinct/DRAM | weights verdict |\n")
	b.WriteString("|---|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		if r.uncounted {
			fmt.Fprintf(b, "| %s | %s | %.2f | %d | %s | – | – | – | – | – | – | – | – | – | – | %s | – | – | (a cuBLASLt call: the emulator does not count its traffic) |\n",
				r.program, r.how, r.programMicros, r.kernel, r.what, mb(r.modelBytes))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %.2f | %d | %s | %s | %.3fx (%.2fx distinct) | %.1f%% | %s | %s | %.3fx | %s | %.1f%% | %.3f | %s | %s | %.3fx | %.3fx | %s |\n",
			r.program, r.how, r.programMicros, r.kernel, r.what, r.weights, r.weightReq, r.weightDistinct, 100*r.weightCo, r.others,
			mb(r.moved), r.movedOverIdeal, mb(r.distinct), 100*r.coalescing, r.conflicts, mb(r.cpAsync), mb(r.modelBytes),
			float64(r.moved)/float64(r.modelBytes), float64(r.distinct)/float64(r.modelDRAM), r.verdict)
	}
}

// writeTradeOffs says, for each workload whose best candidate has a fused
// kernel short of the weights criterion while its hand-written μGraph
// (NAME_mugraph) meets it in every kernel and is slower by the cost
// model, what the model estimates for each: the price the ranking puts on
// reading the largest inputs once.
func writeTradeOffs(b *strings.Builder, rows []countersRow) {
	type summary struct {
		micros, noL2 float64
		poor         []string
	}
	by := map[string]*summary{}
	var order []string
	for _, r := range rows {
		s := by[r.program]
		if s == nil {
			s = &summary{micros: r.programMicros, noL2: r.programMicrosNoL2}
			by[r.program] = s
			order = append(order, r.program)
		}
		if r.fused && r.verdict != "ok" {
			s.poor = append(s.poor, fmt.Sprintf("kernel %d requests %s %.2fx its size (%.2fx distinct)", r.kernel, r.weights, r.weightReq, r.weightDistinct))
		}
	}
	var lines []string
	for _, name := range order {
		best, hand := by[name], by[name+"_mugraph"]
		if len(best.poor) == 0 || hand == nil || len(hand.poor) > 0 || hand.micros <= best.micros {
			continue
		}
		lines = append(lines, fmt.Sprintf("- %s: superopt's best, %.2f µs by the model (%.2f µs were every re-read to cost a DRAM read): %s; the hand-written %s_mugraph meets the weights criterion in every kernel at %.2f µs (%.2f µs without L2), %.2fx the best's.",
			name, best.micros, best.noL2, strings.Join(best.poor, ", "), name, hand.micros, hand.noL2, hand.micros/best.micros))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Where the best candidate re-reads its largest input, a hand-written μGraph does not, and the cost model\n")
	b.WriteString("ranks the re-reading one faster (it serves re-reads of the same sectors from L2):\n\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
}
