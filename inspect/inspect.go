// Package inspect prints what mirage show shows of a kernel graph: its
// ops with their shapes (the text form), Graphviz DOT, a μGraph document,
// the abstract expression of every tensor and tile (as the search's
// pruning sees them), and the cost model's estimate per kernel.
//
// It only reads graphs: what each form says is decided by the package
// that owns it (ugraph/kernel's text and DOT, absexpr, cost); inspect puts
// them into the words and tables show prints.
package inspect

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Text prints every op of g with its output shape and dtype,
// graph-defined kernels nested with their grid, for-loop range and maps.
func Text(w io.Writer, g *kernel.Graph) error { return kernel.Fprint(w, g) }

// Dot prints g as Graphviz DOT.
func Dot(w io.Writer, g *kernel.Graph) error { return kernel.WriteDot(w, g) }

// Document prints the μGraph document of graph g alone, named name.
func Document(w io.Writer, name string, g *kernel.Graph) error {
	return kernel.NewFile(name, g).Encode(w)
}

// maxExprText bounds the text of one expression that Absexpr prints: a
// key writes every operand wherever it occurs, so it can be exponentially
// longer than the expression is large (a chain of y = y + y).
const maxExprText = 4096

// Absexpr prints the abstract expression of every tensor of g, and of
// every tile of its graph-defined kernels, nested under them. Tensors
// without one (computed through concat) show "-".
func Absexpr(w io.Writer, g *kernel.Graph) error {
	exprs, err := absexpr.ForKernel(g)
	if err != nil {
		return err
	}
	show := func(e *absexpr.Expr) string {
		if e == nil {
			return "-"
		}
		return e.Abbrev(maxExprText)
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

// KernelEstimate is one kernel of show --estimate --json.
type KernelEstimate struct {
	Op          int    `json:"op"`
	Kind        string `json:"kind"`
	Code        string `json:"code"` // what runs it: "graph-defined", or the runtime's kernel ("gemm", "rms_norm", ...)
	Grid        []int  `json:"grid"`
	Threads     []int  `json:"threads"`
	BlocksPerSM int    `json:"blocks_per_sm,omitempty"`
	// Stages is the depth of the kernel's cp.async pipeline (1: none).
	Stages int `json:"stages"`
	Waves  int `json:"waves"`
	// SMsBusy and ResidentWarps: the SMs the first wave holds blocks on,
	// and the warps resident on the busiest (cost.Kernel; 0 for a vendor
	// call); FillsGPU: cost.Kernel.FillsTheGPU.
	SMsBusy       int     `json:"sms_busy,omitempty"`
	ResidentWarps int     `json:"resident_warps,omitempty"`
	FillsGPU      bool    `json:"fills_gpu"`
	SmemBytes     int     `json:"smem_bytes,omitempty"`
	Bytes         int64   `json:"bytes"`
	DRAMBytes     int64   `json:"dram_bytes"`
	TensorFlops   int64   `json:"tensor_flops"`
	CUDAFlops     int64   `json:"cuda_flops"`
	MemoryUs      float64 `json:"memory_us"`
	ComputeUs     float64 `json:"compute_us"`
	LatencyUs     float64 `json:"latency_us"`
	OverheadUs    float64 `json:"overhead_us"`
	EstimatedUs   float64 `json:"estimated_us"`
	Bound         string  `json:"bound"`
}

// GraphEstimate is show --estimate --json.
type GraphEstimate struct {
	Arch        string           `json:"arch"`
	SMs         int              `json:"sms"` // the arch's, which sms_busy counts of
	EstimatedUs float64          `json:"estimated_us"`
	Launches    int              `json:"launches"`
	Bytes       int64            `json:"bytes"`
	DRAMBytes   int64            `json:"dram_bytes"`
	Flops       int64            `json:"flops"`
	Kernels     []KernelEstimate `json:"kernels"`
}

// Estimate is the cost model's estimate of g on arch, as --json prints it.
func Estimate(g *kernel.Graph, arch target.Arch) (*GraphEstimate, error) {
	e, err := cost.EstimateGraph(g, arch)
	if err != nil {
		return nil, err
	}
	ks := make([]KernelEstimate, len(e.Kernels))
	for i, k := range e.Kernels {
		code, stages, _ := launchOf(k)
		ks[i] = KernelEstimate{Op: k.Op, Kind: k.Name, Code: code, Grid: k.Grid[:], Threads: k.Threads[:],
			BlocksPerSM: k.BlocksPerSM, Stages: stages, Waves: k.Waves, SmemBytes: k.SmemBytes,
			SMsBusy: k.SMsBusy, ResidentWarps: k.ResidentWarps, FillsGPU: k.FillsTheGPU(arch),
			Bytes: k.Bytes, DRAMBytes: k.DRAMBytes, TensorFlops: k.TensorFlops, CUDAFlops: k.CUDAFlops,
			MemoryUs: k.MemoryMicros, ComputeUs: k.ComputeMicros, LatencyUs: k.LatencyMicros, OverheadUs: k.OverheadMicros,
			EstimatedUs: k.Micros, Bound: string(k.Bound)}
	}
	return &GraphEstimate{e.Arch, arch.SMs, e.Micros, e.Launches, e.Bytes, e.DRAMBytes, e.Flops, ks}, nil
}

// launchOf is the code that runs k, its pipeline's stages, and whether
// its launches are a library's (or the driver's) choice: a kernel with no
// launch plan is a device copy the entry point makes (an output that is an
// input, a padded bucket's rows).
func launchOf(k cost.Kernel) (code string, stages int, vendor bool) {
	if k.Launch == nil {
		return "copy", 0, true
	}
	return k.Launch.Code.String(), k.Launch.Stages, k.Launch.Code.Vendor()
}

// WriteEstimate prints the cost model's estimate of g on arch as a table,
// a kernel per line, and the total.
func WriteEstimate(w io.Writer, g *kernel.Graph, arch target.Arch) error {
	e, err := cost.EstimateGraph(g, arch)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "op	kind	code	grid	threads	stages	blocks/SM	waves	SMs busy	warps/SM	MB requested	MB from DRAM	GFLOP	memory µs	compute µs	latency µs	overhead µs	est. µs	bound")
	for _, k := range e.Kernels {
		grid, threads, perSM := fmt.Sprintf("%dx%dx%d", k.Grid[0], k.Grid[1], k.Grid[2]), fmt.Sprint(k.Threads.Count()), fmt.Sprint(k.BlocksPerSM)
		code, n, vendor := launchOf(k)
		stages := fmt.Sprint(n)
		busy, warps := fmt.Sprintf("%d/%d", k.SMsBusy, arch.SMs), fmt.Sprint(k.ResidentWarps)
		if vendor { // the library's (or the driver's) own launches
			grid, threads, stages, perSM, busy, warps = "-", "-", "-", "-", "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", k.Op, k.Name, code,
			grid, threads, stages, perSM, k.Waves, busy, warps,
			float64(k.Bytes)/1e6, float64(k.DRAMBytes)/1e6, float64(k.TensorFlops+k.CUDAFlops)/1e9,
			k.MemoryMicros, k.ComputeMicros, k.LatencyMicros, k.OverheadMicros, k.Micros, k.Bound)
	}
	tw.Flush()
	_, err = fmt.Fprintf(w, "total: %.2f µs estimated on %v, %d launch(es), %.2f MB requested, %.2f MB from DRAM\n",
		e.Micros, arch, e.Launches, float64(e.Bytes)/1e6, float64(e.DRAMBytes)/1e6)
	return err
}
