package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func newShowCmd() *cobra.Command {
	var (
		lf        loadFlags
		asJSON    bool
		asDot     bool
		asAbsexpr bool
		estimate  bool
		arch      archFlag
		candidate int
		dynamic   dynamicFlags
	)
	cmd := &cobra.Command{
		Use:   "show FILE [-- PROGRAM-ARGS]",
		Short: "Print a program or μGraph file: every op with its output shape",
		Long: `show prints every op of a program (.py) or μGraph file (.ugraph.json) with
its output shape and dtype; graph-defined kernels are nested with their grid,
for-loop range, and input, output and for-loop maps.

With --json it prints the graph(s) as a .ugraph.json document; with --dot, as
Graphviz; with --absexpr, the abstract expression of every tensor and tile
(the k-th input is inK), as the search's pruning sees them; with
--estimate, the cost model's estimate for --arch, per kernel (the code
that runs it: graph-defined or the runtime's, its launch as the emitted
code makes it, blocks per SM, waves, bytes requested and from DRAM, flops,
its memory, compute and latency times, the total and what bounds it) and
in total (with --json: {"arch", "estimated_us",
"bytes", "dram_bytes", "kernels": [...]}). For a file holding several
candidates, --candidate picks one (default: all for the text form, 0 for
--dot and --estimate).

With --dynamic, show prints the program with m in its shapes ([m, 4096]),
the range and the buckets, or refuses the op that would mix rows: a check
of a program before superopt --dynamic searches it.

` + dynamicHelp,
		Args: lf.files(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n := countTrue(asJSON && !estimate, asDot, asAbsexpr, estimate); n > 1 {
				return fmt.Errorf("--json, --dot, --absexpr and --estimate exclude each other (--estimate takes --json)")
			}
			in, err := lf.load(cmd, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if dynamic.on() {
				// The program with m: its shapes, or the op that mixes rows.
				if asJSON || asDot || asAbsexpr || estimate {
					return errors.New("--dynamic prints the program's shapes with m; it takes no --json, --dot, --absexpr or --estimate")
				}
				g, lo, hi, buckets, err := dynamic.mark(in)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "# m in %d..%d, buckets %v\n", lo, hi, buckets)
				return kernel.Fprint(out, g)
			}
			picked := cmd.Flags().Changed("candidate")
			switch {
			case estimate:
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				e, err := cost.EstimateGraph(g, arch.Arch)
				if err != nil {
					return fmt.Errorf("%s: %v", in.Path, err)
				}
				if asJSON {
					return writeJSON(out, estimateJSON(e))
				}
				printEstimate(out, e, arch.Arch)
				return nil
			case asJSON:
				f := in.File
				if picked {
					g, err := in.graph(candidate)
					if err != nil {
						return err
					}
					f = kernel.NewFile(in.Name, g)
				}
				return f.Encode(out)
			case asDot:
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				return kernel.WriteDot(out, g)
			}
			print := kernel.Fprint
			if asAbsexpr {
				print = printAbsexpr
			}
			if picked {
				g, err := in.graph(candidate)
				if err != nil {
					return err
				}
				return print(out, g)
			}
			for i, e := range in.File.Graphs {
				if len(in.File.Graphs) > 1 {
					if i > 0 {
						fmt.Fprintln(out)
					}
					fmt.Fprintf(out, "# candidate %d\n", i)
				}
				if err := print(out, e.Graph); err != nil {
					return err
				}
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the graph(s) as a .ugraph.json document")
	cmd.Flags().BoolVar(&asDot, "dot", false, "print the graph as Graphviz DOT")
	cmd.Flags().BoolVar(&asAbsexpr, "absexpr", false, "print each tensor's abstract expression")
	cmd.Flags().BoolVar(&estimate, "estimate", false, "print the cost model's estimate, per kernel and in total")
	registerArch(cmd, &arch, "the cost model of --estimate")
	cmd.Flags().IntVar(&candidate, "candidate", 0, "which graph of a multi-candidate file (numbered from 0)")
	dynamic.register(cmd, true)
	return cmd
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// printAbsexpr prints the abstract expression of every tensor of g, and of
// every tile of its graph-defined kernels, nested under them. Tensors
// without one (computed through concat) show "-".
func printAbsexpr(w io.Writer, g *kernel.Graph) error {
	exprs, err := absexpr.ForKernel(g)
	if err != nil {
		return err
	}
	show := func(e *absexpr.Expr) string {
		if e == nil {
			return "-"
		}
		return e.String()
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := range g.Ops {
		op := &g.Ops[i]
		for _, t := range op.Out {
			fmt.Fprintf(tw, "t%d\t%v\t%s\n", t, op.Kind, show(exprs[t]))
		}
		if op.Kind != ugraph.OpCustomized {
			continue
		}
		args := make([]*absexpr.Expr, len(op.In))
		for j, t := range op.In {
			args[j] = exprs[t]
		}
		tiles, _, err := absexpr.ForBlock(op.Block, args)
		if err != nil {
			return err
		}
		for _, bop := range op.Block.Ops {
			if bop.Out < 0 {
				continue // output ops: their tile is printed
			}
			name := bop.Kind.String()
			if bop.Kind == ugraph.OpForloopAccum {
				name += "(" + bop.Attr.Accum.String() + ")"
			}
			fmt.Fprintf(tw, "    s%d\t%s\t%s\n", bop.Out, name, show(tiles[bop.Out]))
		}
	}
	return tw.Flush()
}

// kernelEstimateJSON is one kernel of show --estimate --json.
type kernelEstimateJSON struct {
	Op          int     `json:"op"`
	Kind        string  `json:"kind"`
	Code        string  `json:"code"` // what runs it: "graph-defined", or the runtime's kernel ("gemm", "rms_norm", ...)
	Grid        []int   `json:"grid"`
	Threads     []int   `json:"threads"`
	BlocksPerSM int     `json:"blocks_per_sm,omitempty"`
	Waves       int     `json:"waves"`
	SmemBytes   int     `json:"smem_bytes,omitempty"`
	Bytes       int64   `json:"bytes"`
	DRAMBytes   int64   `json:"dram_bytes"`
	TensorFlops int64   `json:"tensor_flops"`
	CUDAFlops   int64   `json:"cuda_flops"`
	MemoryUs    float64 `json:"memory_us"`
	ComputeUs   float64 `json:"compute_us"`
	LatencyUs   float64 `json:"latency_us"`
	OverheadUs  float64 `json:"overhead_us"`
	EstimatedUs float64 `json:"estimated_us"`
	Bound       string  `json:"bound"`
}

func estimateJSON(e cost.Estimate) any {
	ks := make([]kernelEstimateJSON, len(e.Kernels))
	for i, k := range e.Kernels {
		ks[i] = kernelEstimateJSON{Op: k.Op, Kind: k.Name, Code: k.Launch.Code.String(), Grid: k.Grid[:], Threads: k.Threads[:],
			BlocksPerSM: k.BlocksPerSM, Waves: k.Waves, SmemBytes: k.SmemBytes,
			Bytes: k.Bytes, DRAMBytes: k.DRAMBytes, TensorFlops: k.TensorFlops, CUDAFlops: k.CUDAFlops,
			MemoryUs: k.MemoryMicros, ComputeUs: k.ComputeMicros, LatencyUs: k.LatencyMicros, OverheadUs: k.OverheadMicros,
			EstimatedUs: k.Micros, Bound: string(k.Bound)}
	}
	return struct {
		Arch        string               `json:"arch"`
		EstimatedUs float64              `json:"estimated_us"`
		Launches    int                  `json:"launches"`
		Bytes       int64                `json:"bytes"`
		DRAMBytes   int64                `json:"dram_bytes"`
		Flops       int64                `json:"flops"`
		Kernels     []kernelEstimateJSON `json:"kernels"`
	}{e.Arch, e.Micros, e.Launches, e.Bytes, e.DRAMBytes, e.Flops, ks}
}

// printEstimate prints e as a table, a kernel per line, and the total.
func printEstimate(w io.Writer, e cost.Estimate, arch target.Arch) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "op	kind	code	grid	threads	blocks/SM	waves	MB requested	MB from DRAM	GFLOP	memory µs	compute µs	latency µs	overhead µs	est. µs	bound")
	for _, k := range e.Kernels {
		grid, threads, perSM := fmt.Sprintf("%dx%dx%d", k.Grid[0], k.Grid[1], k.Grid[2]), fmt.Sprint(k.Threads.Count()), fmt.Sprint(k.BlocksPerSM)
		if k.Launch.Code.Vendor() { // the library's own launches
			grid, threads, perSM = "-", "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", k.Op, k.Name, k.Launch.Code,
			grid, threads, perSM, k.Waves,
			float64(k.Bytes)/1e6, float64(k.DRAMBytes)/1e6, float64(k.TensorFlops+k.CUDAFlops)/1e9,
			k.MemoryMicros, k.ComputeMicros, k.LatencyMicros, k.OverheadMicros, k.Micros, k.Bound)
	}
	tw.Flush()
	fmt.Fprintf(w, "total: %.2f µs estimated on %v, %d launch(es), %.2f MB requested, %.2f MB from DRAM\n",
		e.Micros, arch, e.Launches, float64(e.Bytes)/1e6, float64(e.DRAMBytes)/1e6)
}
