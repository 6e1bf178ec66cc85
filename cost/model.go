package cost

import (
	"cmp"
	"fmt"
	"math"
	"sync"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Achievable fractions and latencies: assumptions of the model, not
// datasheet figures. Measured profiles (see Profiles) are how they get
// checked.
const (
	// Fraction of peak HBM bandwidth that streaming kernels reach: copy
	// and triad benchmarks measure about 85-90% on A100 and H100.
	memEfficiency = 0.85
	// Fraction of dense tensor peak that a well-tiled matmul reaches:
	// cuBLAS-class large GEMMs measure 70-90%.
	tensorEfficiency = 0.75
	// Fraction of fp32 peak that element-wise and reduction code reaches.
	cudaEfficiency = 0.80
	// Fraction of the L2 that tiles read by several blocks may occupy and
	// still be hit when a later wave re-reads them; the rest holds
	// streamed data.
	l2Share = 0.5
	// Fraction of peak HBM bandwidth that cuBLASLt's skinny GEMMs reach,
	// and the time one takes beyond its launch: fitted to eager PyTorch
	// (which runs them) on the H100, bench/results/h100/2026-11-28-fef1746:
	// gated_mlp's two 8x4096x4096 matmuls in 37.1 µs with two element-wise
	// kernels, the LLaMA-7B MLP block's three 8x4096x11008 ones in 127.6 µs
	// with five; Nsight Compute read 67-79% of DRAM bandwidth on them.
	vendorMemEfficiency = 0.77
	vendorLatencyMicros = 1.1
	// Fraction of the SMs whose blocks saturate HBM: with its loads
	// pipelined an SM draws about twice its even share of bandwidth, so a
	// wave that occupies fewer SMs gets a proportional share.
	memSaturation = 0.5
)

// maxEnumBlocks bounds the grids whose waves the model walks block by
// block to find the tiles they share (see dramPerWave).
const maxEnumBlocks = 1 << 22

// ErrDoesNotFit reports a graph-defined kernel that cannot run on the
// arch: its blocks need more shared memory than one block may have.
var ErrDoesNotFit = launch.ErrDoesNotFit

// Bound names what limits a kernel's time.
type Bound string

const (
	BoundMemory  Bound = "memory"  // moving bytes to and from device memory
	BoundCompute Bound = "compute" // tensor-core and CUDA-core work
	BoundLatency Bound = "latency" // the blocks' dependent chains: a warp waiting on what it loaded or computed
	BoundLaunch  Bound = "launch"  // launch overhead
)

// Kernel is the estimate of one kernel launch: one op of the kernel graph.
type Kernel struct {
	Op   int    // index of the op in the kernel graph's Ops
	Name string // the op's kind: "matmul", "customized", ...
	// Launch is the launch the model costs: the plan's, which the code
	// generator emits.
	Launch *launch.Kernel

	// Grid and Threads are the launch shape the plan gives the kernel
	// (Launch). A call into a vendor library (cuBLASLt) launches kernels
	// of the library's choosing, which the model takes to fill the GPU in
	// one wave: zero Grid and Threads, BlocksPerSM 0, Waves 1.
	Grid, Threads block.Dim3

	// Bytes is the global-memory traffic the blocks request: each block
	// reads its tile of an input at every for-loop iteration (once when
	// the input has no for-loop dim), so an input replicated across the
	// grid counts once per block; outputs count once.
	Bytes int64
	// DRAMBytes is the part of Bytes that reaches device memory: a tile
	// that several blocks read comes from DRAM once and from L2 after,
	// as long as it stays in L2 (see the package comment).
	DRAMBytes   int64
	TensorFlops int64 // fp16/bf16 matmul, padded to whole mma instructions
	CUDAFlops   int64 // element-wise, reductions, accumulators, fp32 matmul

	SmemBytes   int // shared memory per block
	BlocksPerSM int // resident blocks per SM, by shared memory, threads, registers (launch.Kernel.BlocksPerSM) and the block limit
	Waves       int // ceil(blocks / (SMs * BlocksPerSM))
	// SMsBusy and ResidentWarps say how the first wave fills the GPU: the
	// SMs it holds blocks on, and the warps resident on the busiest of
	// them (a block's warps times the blocks it holds). Zero for a vendor
	// call, whose launches are the library's.
	SMsBusy, ResidentWarps int

	MemoryMicros   float64 // summed over waves
	ComputeMicros  float64 // summed over waves
	LatencyMicros  float64 // summed over waves: the blocks' own time (blockTime)
	OverheadMicros float64 // the launch (target.Arch.LaunchMicros, less DependentLaunchMicros for a dependent one)
	Micros         float64 // Σ_waves max(memory, compute, latency) + overhead
	Bound          Bound
}

// Estimate is the modeled time of a kernel graph: its kernels run one
// after another in one stream.
type Estimate struct {
	Arch      string // the arch's Name
	Kernels   []Kernel
	Launches  int
	Blocks    int   // Σ blocks of the kernels' grids (none for a vendor call)
	Bytes     int64 // Σ Kernel.Bytes
	DRAMBytes int64 // Σ Kernel.DRAMBytes
	Flops     int64 // Σ Kernel.TensorFlops + CUDAFlops
	Micros    float64
}

// Speedup is how many times faster than baseline a candidate of
// estimated time us runs: 1 when the candidate takes no time (a program
// with no op to run, whose baseline takes none either), where the ratio
// would be 0/0.
func Speedup(baseline, us float64) float64 {
	if us <= 0 {
		return 1
	}
	return baseline / us
}

// Compare orders estimates for ranking: by time, then, between equal
// times (compute- or launch-bound kernels hide their traffic), fewer bytes
// moved, then fewer blocks. 0 means the model cannot tell them apart.
func Compare(a, b Estimate) int {
	if c := cmp.Compare(a.Micros, b.Micros); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Bytes, b.Bytes); c != 0 {
		return c
	}
	return cmp.Compare(a.Blocks, b.Blocks)
}

// Speedup is how many times faster e is than baseline.
func (e Estimate) Speedup(baseline Estimate) float64 { return baseline.Micros / e.Micros }

// EstimateGraph models g on arch: every op but the inputs is one kernel
// launch. The unfused program and a μGraph are costed alike: a pre-defined
// op is a library kernel, a customized op a graph-defined one.
func EstimateGraph(g *kernel.Graph, arch target.Arch) (Estimate, error) {
	return estimateScaled(g, arch, launch.Options{}, nil, nil)
}

// EstimatePlanned is EstimateGraph for the code emitted with opts (the
// code generator's cuda.Options.Launch): a GPU run's graphs as the code
// they measured was planned (gpurun.Doc.Launch).
func EstimatePlanned(g *kernel.Graph, arch target.Arch, opts launch.Options) (Estimate, error) {
	return estimateScaled(g, arch, opts, nil, nil)
}

// An Estimator estimates many graphs for one arch, as EstimateGraph does,
// planning each block graph they share once (launch.Memo): a search's
// candidates. The graphs' block graphs must not change once estimated.
// Safe for concurrent use.
type Estimator struct {
	arch    target.Arch
	memo    launch.Memo
	kernels sync.Map // *thread.Graph (a memo's plan) -> Kernel, as graphKernel costs it
}

// NewEstimator returns an Estimator for arch.
func NewEstimator(arch target.Arch) *Estimator { return &Estimator{arch: arch} }

// Graph is EstimateGraph(g, e's arch).
func (e *Estimator) Graph(g *kernel.Graph) (Estimate, error) {
	return estimateScaled(g, e.arch, launch.Options{}, nil, e)
}

// graphKernel is the package's graphKernel of lk, a plan from e's memo,
// with no tensor scaled: remembered, as the plan is, for the next graph
// that holds the same block graph.
func (e *Estimator) graphKernel(lk *launch.Kernel) (Kernel, error) {
	if k, ok := e.kernels.Load(lk.Thread); ok {
		return k.(Kernel), nil
	}
	k, err := graphKernel(lk, e.arch, nil)
	if err == nil {
		e.kernels.Store(lk.Thread, k)
	}
	return k, err
}

// Rows is a bucket of a dynamic program (DESIGN §9) run for fewer rows
// than it was searched at: Active of its Bucket rows. Dims holds the
// tensors of the graph whose dim is the dynamic m (the entry point's inputs
// and outputs that have it).
type Rows struct {
	Bucket, Active int
	Dims           map[kernel.TensorID]int
	// Copies are the bytes each launch of a copy kernel moves around the
	// bucket's kernels: a padded program's inputs with m, then its
	// outputs (cuda.Rows.Padded), whose Dims are then empty.
	Copies []int64
}

// EstimateRows models g, a bucket's μGraph, run for rows.Active rows: the
// kernels move only the rows below m of the tensors with m (loads past it
// are zero-filled, stores skipped), and a pre-defined op with such a
// tensor works on those rows only. The rest is as EstimateGraph has it, so
// the estimate at m is never above the bucket's static one.
func EstimateRows(g *kernel.Graph, arch target.Arch, rows Rows) (Estimate, error) {
	if rows.Active < 1 || rows.Active > rows.Bucket {
		return Estimate{}, fmt.Errorf("%d rows of a bucket of %d", rows.Active, rows.Bucket)
	}
	scale := map[kernel.TensorID]float64{}
	for t := range rows.Dims {
		scale[t] = float64(rows.Active) / float64(rows.Bucket)
	}
	e, err := estimateScaled(g, arch, launch.Options{}, scale, nil)
	if err != nil {
		return e, err
	}
	for _, b := range rows.Copies {
		k := copyKernel(arch, b)
		e.Kernels = append(e.Kernels, k)
		e.Launches++
		e.Bytes += k.Bytes
		e.DRAMBytes += k.DRAMBytes
		e.Micros += k.Micros
	}
	return e, nil
}

// copyKernel models a launch of the runtime's copy_rows, or a device copy,
// moving n bytes, each read and written once, as a vendor call
// (vendorTimes).
func copyKernel(arch target.Arch, n int64) Kernel {
	k := Kernel{Op: -1, Name: "copy", Bytes: 2 * n, DRAMBytes: 2 * n}
	k.vendorTimes(arch)
	return k
}

// estimateScaled is EstimateGraph of the code planned with opts, with the
// traffic of some tensors scaled (nil: none), its graph-defined kernels
// planned and costed through est's memos (nil: none; est's arch is arch).
func estimateScaled(g *kernel.Graph, arch target.Arch, opts launch.Options, scale map[kernel.TensorID]float64, est *Estimator) (Estimate, error) {
	var memo *launch.Memo
	if est != nil {
		memo = &est.memo
	}
	plan, err := memo.Graph(g, arch, opts)
	if err != nil {
		return Estimate{}, err
	}
	e := Estimate{Arch: arch.Name}
	for li := range plan.Kernels {
		lk := &plan.Kernels[li]
		i := lk.Op
		op := &g.Ops[i]
		var k Kernel
		if lk.Code == launch.GraphDefined {
			if k, err = graphKernelOf(op, lk, arch, scale, est); err != nil {
				return Estimate{}, fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
			}
			if lk.Dependent && plan.FollowsLibrary(li) {
				// Its launch hides behind the library call's last blocks.
				// After a kernel of ours (launch.AllDependent) the runs
				// measured too little to price.
				k.OverheadMicros -= arch.DependentLaunchMicros
				k.Micros -= arch.DependentLaunchMicros
			}
		} else if lk.Code.Vendor() {
			k = vendorKernel(g, op, lk, arch, scale)
		} else if k, err = libraryKernel(g, op, lk, arch, scale); err != nil {
			return Estimate{}, fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
		}
		k.Op, k.Name, k.Launch = i, op.Kind.String(), lk
		if lk.Fold != nil {
			k.Name += "+" + g.Ops[lk.Fold.Op].Kind.String()
		}
		e.Kernels = append(e.Kernels, k)
		e.Launches++
		e.Blocks += k.Grid.Count() // 0 for a vendor call
		e.Bytes += k.Bytes
		e.DRAMBytes += k.DRAMBytes
		e.Flops += k.TensorFlops + k.CUDAFlops
		e.Micros += k.Micros
	}
	// An output that is an input is a copy the entry point makes
	// (cudaMemcpyAsync), timed as copy_rows is.
	for _, t := range g.Outputs {
		if op, _ := g.Producer(t); op >= 0 && g.Ops[op].Kind == ugraph.OpInput {
			k := copyKernel(arch, scaled(int64(g.Tensors[t].Bytes()), scaleOf(scale, t)))
			e.Kernels = append(e.Kernels, k)
			e.Launches++
			e.Bytes += k.Bytes
			e.DRAMBytes += k.DRAMBytes
			e.Micros += k.Micros
		}
	}
	return e, nil
}

// graphKernelOf costs op's graph-defined kernel, planned as lk: through
// est where it has one and no tensor is scaled (the cost is then the
// block graph's alone), else with op's inputs and outputs scaled.
func graphKernelOf(op *kernel.Op, lk *launch.Kernel, arch target.Arch, scale map[kernel.TensorID]float64, est *Estimator) (Kernel, error) {
	if est != nil && scale == nil {
		return est.graphKernel(lk)
	}
	var ioScale []float64
	if scale != nil {
		for _, t := range append(append([]kernel.TensorID(nil), op.In...), op.Out...) {
			ioScale = append(ioScale, scaleOf(scale, t))
		}
	}
	return graphKernel(lk, arch, ioScale)
}

// libraryKernel costs a pre-defined op as the runtime library's kernel
// that the plan launches: it reads each distinct input once and writes
// its output once, on the plan's grid.
//
// With scale, the op works on the rows below m when one of its tensors has
// m: that tensor moves its scaled bytes, and the work scales alike.
func libraryKernel(g *kernel.Graph, op *kernel.Op, lk *launch.Kernel, arch target.Arch, scale map[kernel.TensorID]float64) (Kernel, error) {
	k, shapes, rows := opWork(g, op, arch, scale)
	out := g.Tensors[op.Out[0]]
	blocks, slots, err := k.occupy(arch, lk)
	if err != nil {
		return Kernel{}, err
	}
	n := float64(blocks)
	per := work{traffic: float64(k.Bytes) / n, tensor: float64(k.TensorFlops) / n, cuda: float64(k.CUDAFlops) / n}
	full, tail := blocks/slots, blocks%slots
	perBlock := float64(k.DRAMBytes) / n
	waves := []wave{{count: full, blocks: slots, dram: perBlock * float64(slots)}, {count: 1, blocks: tail, dram: perBlock * float64(tail)}}
	bs := librarySteps(lk, shapes, out.Shape, out.DType, op.Attr, op.Kind)
	bs.scale(rows)
	k.finish(arch, per, waves, bs)
	if m := lk.Memsets(); m > 0 {
		// Each costs the stream what a launch does.
		k.OverheadMicros += float64(m) * arch.LaunchMicros
		k.Micros += float64(m) * arch.LaunchMicros
		k.setBound()
	}
	return k, nil
}

// vendorKernel costs a pre-defined op that a vendor library (cuBLASLt)
// runs with kernels of its own choosing: its distinct bytes at the
// library's measured share of the bandwidth, its flops at the tensor
// cores' achievable rate, or its fixed latency, whichever is longest, plus
// a launch. The library fills the GPU (Waves 1): its heuristic splits K
// when the output has few tiles. An add it performs (launch.Fold) reads
// its addend beside: the add's output is written in the product's place.
func vendorKernel(g *kernel.Graph, op *kernel.Op, lk *launch.Kernel, arch target.Arch, scale map[kernel.TensorID]float64) Kernel {
	k, _, _ := opWork(g, op, arch, scale)
	if f := lk.Fold; f != nil {
		b := scaled(int64(g.Tensors[f.Addend].Bytes()), scaleOf(scale, f.Addend))
		k.Bytes += b
		k.DRAMBytes += b
	}
	k.vendorTimes(arch)
	return k
}

// vendorTimes times k, a call whose launches a library (or the runtime's
// copy_rows) chooses, as filling the GPU in one wave: its DRAM bytes at the
// vendor share of HBM bandwidth, its flops at the achievable rates, or the
// fixed latency of such a call, whichever is longest, plus a launch.
func (k *Kernel) vendorTimes(arch target.Arch) {
	k.Waves = 1
	k.MemoryMicros = float64(k.DRAMBytes) / (arch.MemBandwidth * vendorMemEfficiency) * 1e6
	k.ComputeMicros = (float64(k.TensorFlops)/(arch.TensorFLOPS*tensorEfficiency) + float64(k.CUDAFlops)/(arch.FP32FLOPS*cudaEfficiency)) * 1e6
	k.LatencyMicros = vendorLatencyMicros
	k.OverheadMicros = arch.LaunchMicros
	k.Micros = max(k.MemoryMicros, k.ComputeMicros, k.LatencyMicros) + k.OverheadMicros
	k.setBound()
}

// opWork is what a pre-defined op moves and computes: each distinct input
// read once and the output written once (DRAMBytes = Bytes), and its
// flops; with scale, the rows below m of the tensors that have m (rows,
// the part of the op's work that scales with them). It returns the
// inputs' shapes too.
func opWork(g *kernel.Graph, op *kernel.Op, arch target.Arch, scale map[kernel.TensorID]float64) (k Kernel, shapes []ugraph.Shape, rows float64) {
	rows = 1.0
	for _, id := range append(append([]kernel.TensorID(nil), op.In...), op.Out...) {
		rows = min(rows, scaleOf(scale, id))
	}
	seen := map[kernel.TensorID]bool{}
	shapes = make([]ugraph.Shape, len(op.In))
	for i, id := range op.In {
		shapes[i] = g.Tensors[id].Shape
		if !seen[id] {
			seen[id] = true
			k.Bytes += scaled(int64(g.Tensors[id].Bytes()), scaleOf(scale, id))
		}
	}
	out := g.Tensors[op.Out[0]]
	k.Bytes += scaled(int64(out.Bytes()), rows)
	k.DRAMBytes = k.Bytes
	k.TensorFlops, k.CUDAFlops = opFlops(op.Kind, op.Attr, shapes, out.Shape, out.DType, arch.MMA)
	k.TensorFlops, k.CUDAFlops = scaled(k.TensorFlops, rows), scaled(k.CUDAFlops, rows)
	return k, shapes, rows
}

// scaleOf is the part of tensor t that a kernel moves: 1, or its rows
// below m (Rows).
func scaleOf(scale map[kernel.TensorID]float64, t kernel.TensorID) float64 {
	if f, ok := scale[t]; ok {
		return f
	}
	return 1
}

func scaled(n int64, f float64) int64 {
	if f == 1 {
		return n
	}
	return int64(math.Ceil(float64(n) * f))
}

// graphKernel costs a graph-defined kernel from its launch and thread
// plan. ioScale, when not nil, holds per input op and then per output op
// the part of its device tensor the kernel moves (Rows).
func graphKernel(lk *launch.Kernel, arch target.Arch, ioScale []float64) (Kernel, error) {
	b := lk.Thread.Block
	var k Kernel
	blocks, slots, err := k.occupy(arch, lk)
	if err != nil {
		return Kernel{}, err
	}
	plan := planOf(lk.Thread, arch)

	per := blockWork(b, plan, ioScale)
	k.TensorFlops = int64(per.tensor) * int64(blocks)
	k.CUDAFlops = int64(per.cuda) * int64(blocks)
	k.Bytes = int64(per.traffic) * int64(blocks)
	waves, dram := dramPerWave(b, plan, slots, arch, ioScale)
	k.DRAMBytes = dram
	k.finish(arch, per, waves, graphSteps(lk.Thread))
	return k, nil
}

// work is what one block does: bytes it requests from global memory and
// flops by unit.
type work struct{ traffic, tensor, cuda float64 }

// wave is count identical waves of blocks running together, each moving
// dram bytes to and from device memory.
type wave struct {
	count, blocks int
	dram          float64
}

// finish sets the times of k from the per-block work, the waves and the
// steps of one block.
//
// Per wave of n blocks the busiest SM holds b = ceil(n/SMs) of them. The
// wave takes the largest of three times: its blocks' latency (blockTime),
// its memory time and its compute time. Memory moves the wave's DRAM bytes
// at the HBM bandwidth and the rest of the bytes its blocks request
// (re-reads that hit L2) at the L2 bandwidth, scaled down when the wave
// occupies fewer than memSaturation of the SMs; compute runs the busiest
// SM's blocks at 1/SMs of the peak rates. Every byte is charged: two
// candidates that move different traffic never get the same memory time.
func (k *Kernel) finish(arch target.Arch, per work, waves []wave, bs blockSteps) {
	sms := float64(arch.SMs)
	hbm := arch.MemBandwidth * memEfficiency
	l2 := arch.L2Bandwidth * memEfficiency
	blockCompute := per.tensor/(arch.TensorFLOPS/sms*tensorEfficiency) + per.cuda/(arch.FP32FLOPS/sms*cudaEfficiency)
	var busy float64
	for _, w := range waves {
		if w.blocks == 0 {
			continue
		}
		active := float64(min(w.blocks, arch.SMs))
		share := min(1, active/(sms*memSaturation))
		hits := max(0, float64(w.blocks)*per.traffic-w.dram)
		mem := (w.dram/hbm + hits/l2) / share * 1e6
		comp := float64(ceilDiv(w.blocks, arch.SMs)) * blockCompute * 1e6
		lat := blockTime(arch, &fitted, bs, ceilDiv(w.blocks, arch.SMs), w.blocks) * 1e6
		n := float64(w.count)
		k.MemoryMicros += n * mem
		k.ComputeMicros += n * comp
		k.LatencyMicros += n * lat
		busy += n * max(mem, comp, lat)
	}
	k.OverheadMicros = arch.LaunchMicros
	k.Micros = busy + k.OverheadMicros
	k.setBound()
}

// FillsTheGPU reports whether k's first wave occupies the GPU as a kernel
// must to approach its bandwidth on the H100 runs' evidence (kernels of 4
// warps an SM on part of the SMs ran at a third of it): blocks on 90% of
// the SMs or more, and 8 warps or more resident on each busy SM. The
// model itself may rank a kernel that does not above one that does (it
// takes 86 SMs to draw the whole HBM bandwidth); GPU runs decide between
// them. A vendor call is taken to fill it (its launches are the library's).
func (k Kernel) FillsTheGPU(arch target.Arch) bool {
	if k.Launch != nil && k.Launch.Code.Vendor() {
		return true
	}
	return float64(k.SMsBusy) >= 0.9*float64(arch.SMs) && k.ResidentWarps >= 8
}

// setBound names the largest of k's times.
func (k *Kernel) setBound() {
	switch {
	case k.OverheadMicros >= max(k.MemoryMicros, k.ComputeMicros, k.LatencyMicros):
		k.Bound = BoundLaunch
	case k.LatencyMicros >= max(k.MemoryMicros, k.ComputeMicros):
		k.Bound = BoundLatency
	case k.MemoryMicros >= k.ComputeMicros:
		k.Bound = BoundMemory
	default:
		k.Bound = BoundCompute
	}
}

// blockTime is the time, in seconds, that a block takes when the busiest
// SM holds b blocks of a wave of n: its steps at the
// latency table's cycles (slowed when the SM's warps issue more than its
// schedulers can), each for-loop iteration waiting for its tiles where the
// pipeline does not hide their fetch, and the fetch before the loop.
//
// A fetch takes a round trip (MemLatencyNs) plus its transfer: its bytes at
// the block's share of the SM's bandwidth, or its lines at the SM's memory
// pipeline's rate (shared by the SM's blocks), whichever is slower. The
// wave's blocks share the HBM's bandwidth, each an n-th of it; an SM that
// holds fewer blocks than the busiest finishes first and leaves its share
// to the rest, so the busiest SM's b blocks draw b n-ths of it throughout
// (a wave of 172 blocks on 132 SMs moves its bytes at the HBM's rate, not
// at 40 SMs' share of it in its second half). A
// pipeline of s stages overlaps s-1 fetches with the iterations' work: the
// fetch before the loop brings the first s-1 iterations' tiles, an
// iteration that refills a buffer takes the longest of its work, its
// transfer, and a fetch over s-1, and the last s-1 iterations take their
// work (FR fetches in all, as the code issues them); with one stage, all
// of them in turn, the fetch for the next iteration after the work of
// this one (the code's refill, FR-1 of them).
func blockTime(arch target.Arch, c *latencyTable, bs blockSteps, b, n int) float64 {
	clock := arch.ClockHz
	warpsPerScheduler := float64(b*bs.Warps) / float64(arch.SchedulersPerSM)
	issue := max(1, warpsPerScheduler/c.Saturation)
	// Each SM draws at most SMBandwidth, and the wave's blocks together
	// the HBM bandwidth; an SM's blocks share what it draws.
	perSM := min(arch.SMBandwidth, arch.MemBandwidth*memEfficiency*float64(b)/float64(n))
	perBlock := perSM / float64(b)
	latency := arch.MemLatencyNs * 1e-9
	transfer := func(f fetch) float64 { return max(f.Bytes/perBlock, float64(b)*f.Lines*c.Line/clock) }
	iter := bs.Iter.cycles(c) / clock * issue
	work := iter
	refill := 0.0   // with one stage, the fetch of the next iteration's tiles, in turn
	prefetched := 0 // iterations whose tiles the fetch before the loop brings
	if bs.FetchIter.Bytes > 0 {
		x := transfer(bs.FetchIter)
		if bs.Stages >= 2 {
			iter = max(iter, x, (latency+x)/float64(bs.Stages-1))
			prefetched = min(bs.Iters, bs.Stages-1)
		} else {
			refill = bs.Refill.cycles(c)/clock*issue + latency + x
		}
	}
	once := bs.Once.cycles(c) / clock * issue
	first := bs.FetchOnce
	first.add(bs.FetchIter, float64(max(1, min(bs.Iters, bs.Stages-1))))
	if first.Bytes > 0 {
		once += latency + transfer(first)
	}
	// The first iteration's tiles come with the fetch before the loop;
	// the last iteration refills nothing.
	return once + float64(bs.Iters-prefetched)*iter + float64(prefetched)*work + float64(max(0, bs.Iters-1))*refill
}

// occupy sets k's launch (the plan's, as the code launches it: a graph's
// block_dim flattened and rounded up to whole warps) and the blocks its
// SMs hold, and returns its blocks and the slots a wave fills.
func (k *Kernel) occupy(arch target.Arch, lk *launch.Kernel) (blocks, slots int, err error) {
	k.Grid, k.Threads, k.SmemBytes = block.Dim3(lk.Grid), block.Dim3{lk.Threads, 1, 1}, lk.SmemBytes
	if k.BlocksPerSM, err = lk.BlocksPerSM(arch); err != nil {
		return 0, 0, err
	}
	blocks = lk.Blocks()
	slots = arch.SMs * k.BlocksPerSM
	k.Waves = ceilDiv(blocks, slots)
	k.SMsBusy = min(blocks, arch.SMs)
	k.ResidentWarps = ceilDiv(lk.Threads, target.WarpSize) * min(k.BlocksPerSM, ceilDiv(blocks, arch.SMs))
	return blocks, slots, nil
}

// blockWork is the work of one block of b as planned. An input tile walked
// by the for-loop is loaded at every iteration, one without a for-loop dim
// once; ops before the loop's accumulators run every iteration, the rest
// once.
func blockWork(b *block.Graph, p blockPlan, ioScale []float64) work {
	var w work
	iters := float64(b.ForloopRange)
	io := ioScales(b, ioScale)
	for i := range b.Ops {
		op := &b.Ops[i]
		if p.dead[i] || p.freeAccum[i] {
			continue
		}
		switch op.Kind {
		case ugraph.OpInput:
			reads := float64(loads(op, int64(b.ForloopRange)))
			if p.inPlace[i] > 0 {
				reads = p.inPlace[i]
			}
			w.traffic += io[i] * float64(tileBytes(b.Tensors[op.Out])) * reads
			continue
		case ugraph.OpOutput:
			w.traffic += io[i] * float64(tileBytes(b.Tensors[op.In[0]]))
			continue
		}
		ins := op.Operands()
		shapes := make([]ugraph.Shape, len(ins))
		for j, id := range ins {
			shapes[j] = b.Tensors[id].Shape
		}
		out := b.Tensors[op.Out]
		tf, cf := opFlops(op.Kind, op.Attr, shapes, out.Shape, out.DType, p.instr)
		if op.Kind == ugraph.OpMatmul {
			switch m := p.mma[i]; {
			case m == nil:
				// SIMT: the products themselves on CUDA cores, none
				// padded to an mma's tile (the fp32 count).
				_, cf = opFlops(op.Kind, op.Attr, shapes, out.Shape, ugraph.Float32, p.instr)
				tf = 0
			default:
				tf = m.TensorFlops() // the mma tiles as planned (a folded operand's rows stacked)
			}
		}
		n := 1.0
		if op.Kind == ugraph.OpForloopAccum || !out.PostLoop {
			n = iters
		}
		w.tensor += n * float64(tf)
		w.cuda += n * float64(cf)
	}
	return w
}

// dramPerWave splits the blocks of b into waves of slots blocks and returns
// the waves with the bytes each moves to and from device memory, and their
// sum.
//
// A block reading a tile that no other block reads fetches it from DRAM.
// Blocks that differ only along grid axes an input replicates read the same
// tiles; the first read of a tile goes to DRAM and the rest hit L2. When
// the replicated inputs together fit in l2Share of the L2, every tile comes
// from DRAM once in the whole kernel; otherwise once per wave that reads
// it, since later waves find it evicted. Blocks are taken to run in the
// order of their linear index, x fastest.
func dramPerWave(b *block.Graph, plan blockPlan, slots int, arch target.Arch, ioScale []float64) ([]wave, int64) {
	blocks := b.Grid.Count()
	iters := int64(b.ForloopRange)
	io := ioScales(b, ioScale)
	var own, replicated int64 // per-block bytes of unshared tiles; footprint of replicated inputs
	var shared []*block.Op
	sharedScale := map[*block.Op]float64{}
	for i := range b.Ops {
		op := &b.Ops[i]
		if plan.dead[i] {
			continue
		}
		switch op.Kind {
		case ugraph.OpInput:
			t := b.Tensors[op.Out]
			if replicates(b.Grid, op.Input.IMap) {
				shared = append(shared, op)
				sharedScale[op] = io[i]
				replicated += scaled(int64(op.Input.DShape.NumElements()*t.DType.Size()), io[i])
			} else {
				own += scaled(tileBytes(t)*loads(op, iters), io[i])
			}
		case ugraph.OpOutput:
			own += scaled(tileBytes(b.Tensors[op.In[0]]), io[i])
		}
	}
	total := own * int64(blocks)
	enumerate := len(shared) > 0 && float64(replicated) > l2Share*float64(arch.L2Bytes)
	if !enumerate || blocks > maxEnumBlocks {
		if enumerate { // too many blocks to walk: no reuse across blocks at all
			for _, op := range shared {
				total += scaled(tileBytes(b.Tensors[op.Out])*loads(op, iters)*int64(blocks), sharedScale[op])
			}
		} else {
			total += replicated
		}
		full, tail := blocks/slots, blocks%slots
		perBlock := float64(total) / float64(blocks)
		return []wave{
			{count: full, blocks: slots, dram: perBlock * float64(slots)},
			{count: 1, blocks: tail, dram: perBlock * float64(tail)},
		}, total
	}
	waves := make([]wave, ceilDiv(blocks, slots))
	for i := range waves {
		start := i * slots
		n := min(slots, blocks-start)
		waves[i] = wave{count: 1, blocks: n, dram: float64(own * int64(n))}
	}
	for _, op := range shared {
		perTile := scaled(tileBytes(b.Tensors[op.Out])*loads(op, iters), sharedScale[op])
		for i, d := range distinctTiles(b.Grid, op.Input.IMap, slots) {
			waves[i].dram += float64(int64(d) * perTile)
			total += int64(d) * perTile
		}
	}
	return waves, total
}

// ioScales spreads ioScale (per input op, then per output op) over b's ops:
// 1 for every op when it is nil.
func ioScales(b *block.Graph, ioScale []float64) []float64 {
	io := make([]float64, len(b.Ops))
	ins, outs := 0, len(b.InputOps())
	for i := range b.Ops {
		io[i] = 1
		switch b.Ops[i].Kind {
		case ugraph.OpInput:
			if ioScale != nil {
				io[i] = ioScale[ins]
			}
			ins++
		case ugraph.OpOutput:
			if ioScale != nil {
				io[i] = ioScale[outs]
			}
			outs++
		}
	}
	return io
}

// loads is how many times a block loads the tile of input op.
func loads(op *block.Op, iters int64) int64 {
	if op.Input.FMap >= 0 {
		return iters
	}
	return 1
}

// replicates reports whether some grid axis of more than one block leaves
// the input unpartitioned, so that several blocks read each tile.
func replicates(grid block.Dim3, imap block.Map) bool {
	for a, n := range grid {
		if n > 1 && imap[a] < 0 {
			return true
		}
	}
	return false
}

// distinctTiles returns, for each wave of slots consecutive blocks, how
// many distinct tiles of an input with the given imap its blocks read: a
// tile is named by the block's coordinates along the partitioning axes.
func distinctTiles(grid block.Dim3, imap block.Map, slots int) []int {
	var stride [3]int // of each partitioning axis in the tile index; 0 for the others
	space := 1
	for a, n := range grid {
		if n > 1 && imap[a] >= 0 {
			stride[a] = space
			space *= n
		}
	}
	seen := make([]bool, space)
	var touched []int
	blocks := grid.Count()
	counts := make([]int, 0, ceilDiv(blocks, slots))
	for start := 0; start < blocks; start += slots {
		for id := start; id < min(start+slots, blocks); id++ {
			x, y, z := id%grid[0], id/grid[0]%grid[1], id/(grid[0]*grid[1])
			t := x*stride[0] + y*stride[1] + z*stride[2]
			if !seen[t] {
				seen[t] = true
				touched = append(touched, t)
			}
		}
		counts = append(counts, len(touched))
		for _, t := range touched {
			seen[t] = false
		}
		touched = touched[:0]
	}
	return counts
}

func tileBytes(t block.Tensor) int64 { return int64(t.Shape.NumElements() * t.DType.Size()) }

// opFlops is the work of one execution of a compute op with the given
// operand and result shapes: tensor-core flops for fp16/bf16 matmul, on
// the arch's instruction mma (a tile smaller than its shape still costs
// whole instructions), CUDA-core flops for the rest.
func opFlops(k ugraph.OpKind, a ugraph.Attr, in []ugraph.Shape, out ugraph.Shape, dt ugraph.DType, mma target.MMA) (tensor, cuda int64) {
	elems := int64(out.NumElements())
	switch k.Info().Class {
	case ugraph.ClassMatmul:
		x, y := in[0], in[1]
		r := x.Rank()
		m, kk, n := x.Dim(r-2), x.Last(), y.Last()
		batch := int64(x.NumElements() / (m * kk))
		if dt == ugraph.Float32 {
			return 0, 2 * batch * int64(m) * int64(n) * int64(kk)
		}
		return 2 * batch * roundUp(m, mma.M) * roundUp(n, mma.N) * roundUp(kk, mma.K), 0
	case ugraph.ClassUnary, ugraph.ClassBinary:
		return 0, elems * elementCost(k)
	case ugraph.ClassReduction:
		return 0, int64(in[0].NumElements()) // one add per input element
	case ugraph.ClassNorm:
		return 0, 3 * int64(in[0].NumElements()) // square-accumulate (an FMA), scale
	case ugraph.ClassAccum:
		n := int64(in[0].NumElements())
		if a.Accum == ugraph.AccumRMS {
			return 0, 2 * n // square-accumulate
		}
		return 0, n
	}
	return 0, 0 // concat moves data only
}

// elementCost is the CUDA-core work of one element of an element-wise op,
// in fp32 flops: the op table's (ugraph.Elementwise.Flops).
func elementCost(k ugraph.OpKind) int64 {
	f := k.Info().Elem.Flops
	if f <= 0 {
		panic(fmt.Sprintf("cost: %v has no cost per element", k)) // TestEveryElementwiseOpHasACost
	}
	return int64(f)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(n, m int) int64 { return int64(ceilDiv(n, m) * m) }
