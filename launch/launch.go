// Package launch decides how every kernel of a kernel graph launches on a
// GPU: which code runs it, its grid, threads per block, dynamic shared
// memory, cp.async pipeline depth, vector width and reduction split. The
// search (does a block graph fit?), the cost model (what does it cost?)
// and the code generator (what does it emit?) all read the same Plan, so
// the kernel that is ranked is the kernel that is emitted; none of them
// decides a launch of its own.
//
// A graph-defined kernel (a customized op) runs its threadblock graph as
// ugraph/thread plans it: the grid is the block graph's, the threads,
// pipeline depth (at most the block graph's, where it sets one) and
// shared memory the thread plan's. A pre-defined op runs one of the
// runtime library's kernels (templates/mirage_runtime.cuh), whose launch
// shapes are this package's rules; they must agree with the templates'
// __launch_bounds__ and shared-memory needs, which the code generator's
// tests check by compiling and running the emitted code.
package launch

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/layout"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// Options tune a plan. The zero value asks for the defaults; the search,
// the cost model and the code generator must be given the same Options for
// their plans to agree.
type Options struct {
	// Stages bounds the cp.async buffers an input tile that a
	// graph-defined kernel's for-loop walks gets (0: no bound but the
	// block graph's own depth, block.Graph.Stages, or
	// thread.DefaultStages where it sets none); the plan lowers it where
	// shared memory runs out.
	Stages int
	// OwnGEMM runs pre-defined matmuls on the runtime's own GEMM kernels
	// (gemm_kernel) instead of cuBLASLt, for code that must link with
	// nothing but the CUDA runtime.
	OwnGEMM bool
	// Dependent chooses the graph-defined kernels that launch as
	// programmatic dependent launches (Kernel.Dependent).
	Dependent Dependence
}

// Dependence chooses which graph-defined kernels launch as programmatic
// dependent launches, on an arch that has them (sm_90 and newer; on
// others none does).
type Dependence uint8

const (
	// AfterLibrary, the default: a kernel whose launch follows a vendor
	// library's call in the stream. The library's kernels never let a
	// dependent start early, so the saving is the launch's own latency,
	// hidden behind the call's last blocks: 1.7 µs measured twice on the
	// H200 (target.Arch.DependentLaunchMicros). After a kernel of ours
	// the two runs measured 0.5 µs in the median, which the model does
	// not price: such launches stay plain.
	AfterLibrary Dependence = iota
	// NoDependent launches every kernel plainly.
	NoDependent
	// AllDependent launches every graph-defined kernel dependent, for
	// measuring (emit --dependent-launch).
	AllDependent
)

var dependenceNames = [...]string{AfterLibrary: "after_library", NoDependent: "none", AllDependent: "all"}

func (d Dependence) String() string {
	if int(d) < len(dependenceNames) {
		return dependenceNames[d]
	}
	return fmt.Sprintf("Dependence(%d)", d)
}

// MarshalText writes d's name: "after_library", "none" or "all".
func (d Dependence) MarshalText() ([]byte, error) {
	if int(d) >= len(dependenceNames) {
		return nil, fmt.Errorf("no dependence %d", d)
	}
	return []byte(dependenceNames[d]), nil
}

// UnmarshalText reads a name MarshalText writes.
func (d *Dependence) UnmarshalText(text []byte) error {
	i := slices.Index(dependenceNames[:], string(text))
	if i < 0 {
		return fmt.Errorf("dependent launches %q: want one of %s", text, strings.Join(dependenceNames[:], ", "))
	}
	*d = Dependence(i)
	return nil
}

// LibraryWorkspace is the scratch memory, in bytes, that a cuBLASLt
// matmul is given: templates/mirage_runtime.cuh's LtWorkspaceBytes, what
// PyTorch gives cuBLAS on Hopper (so that the library's heuristic may pick
// the split-K kernels eager PyTorch runs).
const LibraryWorkspace = 32 << 20

// Code names the code that runs a kernel.
type Code uint8

const (
	GraphDefined    Code = iota // the customized op's own __global__, from its block graph
	Unary                       // mirage::unary_kernel: grid-stride, an element per thread per step
	Binary                      // mirage::binary_kernel: the same, with broadcasting
	ReduceRows                  // mirage::reduce_rows_kernel: a warp per row
	ReduceMid                   // mirage::reduce_mid_kernel: a thread per output
	RMSNorm                     // mirage::rms_norm_kernel: a block per row
	RMSNormWarp                 // mirage::rms_norm_warp_kernel: a warp per row of at most WarpRowVectors vectors
	GEMM                        // mirage::gemm_kernel: tensor cores, block tiles, a cp.async pipeline
	GEMMSIMT                    // mirage::gemm_simt_kernel: 16x16 tiles on CUDA cores
	CuBLASLt                    // mirage::lt_matmul: cuBLASLt's choice of kernels, on the workspace's LibraryWorkspace bytes
	ReduceRowsBlock             // mirage::reduce_rows_block_kernel: a block per row, for rows too few to give SMs 8 warps a warp each
	ReduceMidSplit              // mirage::reduce_mid_split_kernel: a block per 32 outputs, the summed dim split among its warps
	ReduceRowsSplit             // mirage::reduce_rows_split_kernel: Split blocks a row, for a few rows each so long a block would loop long
)

var codeNames = [...]string{"graph-defined", "unary", "binary", "reduce_rows", "reduce_mid", "rms_norm", "rms_norm_warp", "gemm", "gemm_simt", "cublaslt", "reduce_rows_block", "reduce_mid_split", "reduce_rows_split"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Library reports whether the code is a kernel of the runtime library (or
// a call into a CUDA library through it).
func (c Code) Library() bool { return c != GraphDefined }

// Vendor reports whether the code calls a library of the CUDA toolkit
// whose kernels, grids and shared memory are the library's choice: the
// plan knows the call, not its launches (Grid is zero).
func (c Code) Vendor() bool { return c == CuBLASLt }

// Links is the library that code needing c links with ("" for none).
func (c Code) Links() string {
	if c == CuBLASLt {
		return "cublasLt"
	}
	return ""
}

// Kernel is the launch of one op of a kernel graph.
type Kernel struct {
	Op      int // the op's index in the kernel graph
	Code    Code
	Grid    [3]int
	Threads int // per block, a whole number of warps
	// SmemBytes is the dynamic shared memory per block (the library's
	// static __shared__ arrays, a few hundred bytes, are not counted).
	SmemBytes int
	// Stages is the depth of the kernel's cp.async pipeline; 1 when it
	// has none.
	Stages int
	// Vector is the bytes one thread moves per global-memory access of a
	// library kernel. A graph-defined kernel copies each input tile with
	// its own width: thread.Tile.Vector.
	Vector int
	// Split is how many blocks share one output's reduction (split-K);
	// 1: each output is reduced by one block.
	Split int
	// Thread is the thread-level plan of a graph-defined kernel.
	Thread *thread.Graph
	// Tile is a GEMM's block tile (BM x BN, WM x WN warps); for GEMMSIMT
	// 16x16 with no warp grid.
	Tile GEMMTile
	// RowTile is the rows of M that one block of grid.y covers, for a
	// matmul: a grid that scales with a dynamic m is ceil(m / RowTile).
	RowTile int
	// Chunk is the accesses (16-byte vectors, or elements) of a row that
	// one block of a split row sum (ReduceRowsSplit) adds up.
	Chunk int
	// Workspace is the scratch memory, in bytes, that the call of a
	// vendor library, or a split row sum, needs beside the program's
	// tensors.
	Workspace int
	// Fold, for a cuBLASLt matmul, is the add that the same call performs
	// (nil: none).
	Fold *Fold
	// Dependent makes a graph-defined kernel a programmatic dependent
	// launch (sm_90 and newer, Options.Dependent): its blocks may start
	// while the launch before it in the stream finishes, and wait for that
	// launch's results before they touch memory.
	Dependent bool
}

// Fold is an add that a cuBLASLt matmul performs in its epilogue: D =
// A·B + C with beta 1, C the add's other operand (the residual of a
// transformer layer) and D the add's output. The add has no launch of its
// own and the product is never stored: one kernel and one round trip of
// the product through memory fewer, as cuBLAS's addmm does it.
type Fold struct {
	Op     int             // the add op
	Addend kernel.TensorID // its other operand, read as C
}

// SplitCounts is where a split row sum's counts (a 4-byte word a row,
// Grid[1] rows) start in its scratch, in 4-byte words: after the blocks'
// fp32 partials, Split a row.
func (k *Kernel) SplitCounts() int { return k.Grid[1] * k.Split }

// Memsets is the operations the entry point puts on the stream before the
// launch: a split row sum's counts are zeroed (cudaMemsetAsync).
func (k *Kernel) Memsets() int {
	if k.Code == ReduceRowsSplit {
		return 1
	}
	return 0
}

// Blocks is the number of blocks in the grid.
func (k *Kernel) Blocks() int { return k.Grid[0] * k.Grid[1] * k.Grid[2] }

// BlocksPerSM is how many blocks of k an SM of arch holds at once, by
// their shared memory (with the arch's reserve per block), their threads
// (allocated by whole warps), the arch's block limit and, for a
// graph-defined kernel, the registers the plan leaves its threads
// (Registers), which MinBlocksPerSM makes the compiler keep to. It is a
// *FitError when one block needs more shared memory than arch gives one.
func (k *Kernel) BlocksPerSM(arch target.Arch) (int, error) {
	if k.SmemBytes > arch.MaxSmemPerBlock {
		return 0, &FitError{Bytes: k.SmemBytes, Limit: arch.MaxSmemPerBlock, Arch: arch.Name}
	}
	bySmem := arch.SmemPerSM / (k.SmemBytes + arch.SmemReserved)
	threads := ceilDiv(k.Threads, target.WarpSize) * target.WarpSize
	byThreads := arch.MaxThreadsPerSM / threads
	blocks := min(arch.MaxBlocksPerSM, bySmem, byThreads)
	if k.Code == GraphDefined {
		blocks = min(blocks, max(1, target.RegsPerSM/(threads*k.Registers())))
	}
	return blocks, nil
}

// MinRegisters is the fewest registers a thread of a graph-defined kernel
// is held to: MinBlocksPerSM asks for no more blocks than leave each
// thread this many. The emitted kernels use 32 to 115 (ptxas 11.8, the
// LLaMA-7B layer's five); an mma kernel held to fewer spills.
const MinRegisters = 64

// Registers is how many registers the plan leaves each thread of
// graph-defined kernel k: MinRegisters, or twice the fp32 accumulators its
// thread plan keeps in registers where that is more (thread.Derive budgets
// them at half a thread's registers). A 128x256 mma tile on 512 threads
// keeps 64 a thread; held to 64 registers in all, ptxas spilled 640 bytes
// a thread (11.8, sm_90).
func (k *Kernel) Registers() int {
	r := MinRegisters
	if k.Thread != nil {
		r = max(r, 2*k.Thread.RegFloats)
	}
	return r
}

// MinBlocksPerSM is how many blocks of graph-defined kernel k the busiest
// SM of its first wave holds, as the cost model counts them: BlocksPerSM
// (registers counted), or fewer where the grid spreads thinner over the
// SMs (at least 1). The code generator writes it as __launch_bounds__'s
// second argument where a block has more than 128 threads: the blocks per
// SM that ptxas must keep room in the registers for. Given the threads
// alone, ptxas chooses: it held a 512-thread kernel of which an SM holds
// one block to 64 registers, and spilled (11.8, sm_80 and sm_90).
func (k *Kernel) MinBlocksPerSM(arch target.Arch) int {
	resident, err := k.BlocksPerSM(arch)
	if err != nil {
		return 1
	}
	return max(1, min(resident, ceilDiv(k.Blocks(), arch.SMs)))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Plan is the launch of every kernel a kernel graph runs.
type Plan struct {
	Arch target.Arch
	// Live, per op, says whether an output depends on it: dead ops are
	// not launched and have no Kernel.
	Live []bool
	// Kernels are the launches, in the order of their ops.
	Kernels []Kernel
	// foldedInto maps each op a launch performs (Kernel.Fold) to that
	// launch's op; nil when none does.
	foldedInto map[int]int
}

// Kernel returns the launch of op i, or nil when op i launches nothing
// (an input, a dead op, or an add folded into a matmul: FoldedInto).
// Codegen asks it of every op: it is a binary search, not a scan.
func (p *Plan) Kernel(i int) *Kernel {
	if k, ok := slices.BinarySearchFunc(p.Kernels, i, func(k Kernel, op int) int { return k.Op - op }); ok {
		return &p.Kernels[k]
	}
	return nil
}

// FoldedInto returns the op whose launch performs op i (Kernel.Fold), or
// -1 when op i has a launch of its own or none.
func (p *Plan) FoldedInto(i int) int {
	if op, ok := p.foldedInto[i]; ok {
		return op
	}
	return -1
}

// ErrDoesNotFit reports a graph-defined kernel that cannot run on the
// arch: its blocks need more shared memory than one block may have, even
// with no pipelining.
var ErrDoesNotFit = errors.New("does not fit")

// FitError is ErrDoesNotFit with the figures.
type FitError struct {
	Bytes, Limit int    // shared memory per block: needed, allowed
	Arch         string // the arch's name
}

func (e *FitError) Error() string {
	return fmt.Sprintf("the graph-defined kernel needs %d bytes of shared memory per block; %s allows %d", e.Bytes, e.Arch, e.Limit)
}

// Is makes errors.Is(err, ErrDoesNotFit) hold.
func (e *FitError) Is(target error) bool { return target == ErrDoesNotFit }

// OpError is an op that cannot be planned.
type OpError struct {
	Op   int
	Kind ugraph.OpKind
	Err  error
}

func (e *OpError) Error() string { return fmt.Sprintf("op %d (%v): %v", e.Op, e.Kind, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// Graph plans every live op of g but its inputs, in order. An error names
// the op (an *OpError): "op 3 (customized): ...".
func Graph(g *kernel.Graph, arch target.Arch, opts Options) (*Plan, error) {
	return (*Memo)(nil).Graph(g, arch, opts)
}

// Graph is the package's Graph, with the plans of g's graph-defined
// kernels taken from m where it holds them (a nil m holds none).
func (m *Memo) Graph(g *kernel.Graph, arch target.Arch, opts Options) (*Plan, error) {
	p := &Plan{Arch: arch, Live: Live(g)}
	for i := range g.Ops {
		if g.Ops[i].Kind == ugraph.OpInput || !p.Live[i] {
			continue
		}
		k, err := m.op(g, i, arch, opts)
		if err != nil {
			return nil, &OpError{Op: i, Kind: g.Ops[i].Kind, Err: err}
		}
		p.Kernels = append(p.Kernels, k)
	}
	p.fold(g)
	p.depend(opts.Dependent)
	return p, nil
}

// depend marks the graph-defined kernels that launch dependent, as d
// chooses, on an arch that has dependent launches. The launches run in
// the order of p.Kernels, one stream: the kernel before is the one a
// dependent launch follows.
func (p *Plan) depend(d Dependence) {
	if cc, ok := p.Arch.ComputeCapability(); !ok || cc < 90 || d == NoDependent {
		return
	}
	for i := range p.Kernels {
		k := &p.Kernels[i]
		if k.Code != GraphDefined {
			continue
		}
		k.Dependent = d == AllDependent || p.FollowsLibrary(i)
	}
}

// FollowsLibrary reports whether launch i of p (an index of p.Kernels)
// comes right after a vendor library's call in the stream: where a
// dependent launch hides its latency behind the call's last blocks, the
// edge the cost model prices (target.Arch.DependentLaunchMicros).
func (p *Plan) FollowsLibrary(i int) bool { return i > 0 && p.Kernels[i-1].Code.Vendor() }

// fold gives each cuBLASLt matmul whose product only an add of a tensor of
// the product's shape and dtype reads (and the program does not output)
// that add to perform (Kernel.Fold), and drops the add's launch.
func (p *Plan) fold(g *kernel.Graph) {
	for k := range p.Kernels {
		lk := &p.Kernels[k]
		if lk.Code != CuBLASLt {
			continue
		}
		if add, addend, ok := g.ProductAdd(p.Live, lk.Op); ok {
			lk.Fold = &Fold{Op: add, Addend: addend}
			if p.foldedInto == nil {
				p.foldedInto = map[int]int{}
			}
			p.foldedInto[add] = lk.Op
		}
	}
	if len(p.foldedInto) > 0 {
		p.Kernels = slices.DeleteFunc(p.Kernels, func(k Kernel) bool { return p.FoldedInto(k.Op) >= 0 })
	}
}

// Live returns, per op of g, whether one of g's outputs depends on it.
func Live(g *kernel.Graph) []bool {
	live := make([]bool, len(g.Ops))
	need := make([]bool, len(g.Tensors))
	for _, t := range g.Outputs {
		need[t] = true
	}
	for i := len(g.Ops) - 1; i >= 0; i-- {
		op := &g.Ops[i]
		for _, t := range op.Out {
			if need[t] {
				live[i] = true
			}
		}
		if live[i] {
			for _, t := range op.In {
				need[t] = true
			}
		}
	}
	return live
}

// Op plans op i of g, which must not be an input.
func Op(g *kernel.Graph, i int, arch target.Arch, opts Options) (Kernel, error) {
	return (*Memo)(nil).op(g, i, arch, opts)
}

func (m *Memo) op(g *kernel.Graph, i int, arch target.Arch, opts Options) (Kernel, error) {
	op := &g.Ops[i]
	if op.Kind == ugraph.OpCustomized {
		if op.Block == nil {
			return Kernel{}, errors.New("customized op without a threadblock graph")
		}
		k, err := m.block(op.Block, arch, opts)
		k.Op = i
		return k, err
	}
	k, err := library(g, op, arch, opts)
	k.Op = i
	return k, err
}

// Block plans a graph-defined kernel from its block graph alone, as Op
// does for the customized op that holds it: the search's check that a
// candidate block graph fits the arch.
func Block(b *block.Graph, arch target.Arch, opts Options) (Kernel, error) {
	tg, err := thread.Derive(b, arch, thread.Options{Stages: opts.Stages})
	if se := (*thread.SmemError)(nil); errors.As(err, &se) {
		return Kernel{}, &FitError{Bytes: se.Bytes, Limit: se.Limit, Arch: arch.Name}
	}
	if err != nil {
		return Kernel{}, err
	}
	return graphDefined(-1, tg), nil
}

// A Memo remembers the plans of graph-defined kernels by their block
// graph's identity, for graphs that share block graphs: a search attaches
// each complete block graph to many candidates (a decode-attention
// search estimated 1.3 M kernels of 42 k block graphs in 30 s), and
// deriving the thread plan was most of each estimate. A block graph must
// not change once planned through a Memo, which keeps it alive. Safe for
// concurrent use; the zero Memo is empty.
type Memo struct{ plans sync.Map } // memoKey -> memoPlan

type memoKey struct {
	b      *block.Graph
	arch   string
	stages int
}

type memoPlan struct {
	k   Kernel
	err error
}

// block is Block, remembered in m (none when m is nil).
func (m *Memo) block(b *block.Graph, arch target.Arch, opts Options) (Kernel, error) {
	if m == nil {
		return Block(b, arch, opts)
	}
	key := memoKey{b, arch.Name, opts.Stages}
	if p, ok := m.plans.Load(key); ok {
		return p.(memoPlan).k, p.(memoPlan).err
	}
	k, err := Block(b, arch, opts)
	m.plans.Store(key, memoPlan{k, err})
	return k, err
}

func graphDefined(op int, tg *thread.Graph) Kernel {
	return Kernel{Op: op, Code: GraphDefined, Grid: [3]int(tg.Block.Grid), Threads: tg.Threads, SmemBytes: tg.SmemBytes,
		Stages: tg.Stages, Split: 1, Thread: tg}
}

// The runtime library's launch rules. The element-wise, reduction and norm
// kernels are written for 256 threads (their __launch_bounds__).
const (
	libraryThreads = 256
	// maxStrideBlocks bounds the grid of the grid-stride kernels: more
	// blocks than this loop instead (CUDA allows far more along x; this
	// many fill any GPU in the table many times over).
	maxStrideBlocks = target.MaxGridYZ
	// gemmStages is the pipeline depth of the runtime GEMM.
	gemmStages = 3
	// gemmBK is the runtime GEMM's step along K; its A tile rows are
	// padded by 8 elements, as are its B tile rows (LDA, LDB).
	gemmBK, gemmPad = 32, 8
	simtTile        = 16
)

// GEMMTile is the runtime GEMM's block tile: BM x BN outputs per block,
// computed by WM x WN warps.
type GEMMTile struct{ BM, BN, WM, WN int }

// VectorBytes is the width of the library kernels' vector accesses
// (mirage::Vec16): 8 fp16/bf16 or 4 fp32 elements.
const VectorBytes = 16

// blockRowAccesses is the shortest row, in accesses (16-byte vectors, or
// elements where rows are not whole vectors), that a sum over too few rows
// gives a block of its own (reduce_rows_block_kernel): an access for each
// of the block's threads.
const blockRowAccesses = libraryThreads

// residentWarps is the warps per SM that a library kernel's rows should
// give the target at least (a warp a row below it leaves the SMs' memory
// pipes waiting on a few warps' loads).
const residentWarps = 8

// splitRowAccesses is the shortest row, in accesses, that a sum over
// fewer rows than SMs splits among blocks (reduce_rows_split_kernel): a
// block a row would loop 16 accesses a thread. minSplitChunk is the
// fewest a split block sums: 4 a thread, so that its barrier, its partial
// and the last block's adding are a small part of its time.
const (
	splitRowAccesses = 16 * libraryThreads
	minSplitChunk    = 4 * libraryThreads
)

// rowSplits says how many blocks share each row of a sum of rows of the
// given accesses, and the accesses each sums (chunk, a whole number of the
// block's strides): enough blocks for two on every SM, each at least
// minSplitChunk, for fewer rows than SMs of splitRowAccesses or more; 1
// (no split) otherwise.
func rowSplits(rows, accesses int, arch target.Arch) (splits, chunk int) {
	if rows >= arch.SMs || accesses < splitRowAccesses {
		return 1, accesses
	}
	splits = ceilDiv(2*arch.SMs, rows)
	chunk = max(minSplitChunk, ceilDiv(ceilDiv(accesses, splits), libraryThreads)*libraryThreads)
	return ceilDiv(accesses, chunk), chunk
}

// blockRows says whether a sum of rows of the given accesses each runs a
// block per row (reduce_rows_block_kernel) rather than a warp: when a warp
// a row would leave each SM under residentWarps warps and each of the
// block's threads gets an access or more. Between half of residentWarps
// and residentWarps a row must give each thread two: with one, the
// block's two barriers cost more than the warps' short loop saves (the
// cost model: 1000 rows of 2048 fp16, 4.10 µs a block a row, 3.56 a warp).
func blockRows(rows, accesses int, arch target.Arch) bool {
	switch {
	case accesses < blockRowAccesses || rows >= residentWarps*arch.SMs:
		return false
	case rows < residentWarps/2*arch.SMs:
		return true
	}
	return accesses >= 2*blockRowAccesses
}

// splitMidSteps is the fewest steps a warp of reduce_mid_split_kernel
// takes (every eighth element of the summed dim): shorter sums stay a
// thread per output.
const splitMidSteps = 8

// WarpRowVectors is the most 16-byte vectors of a row that
// rms_norm_warp_kernel's lane holds (its PER) times the warp's lanes.
const WarpRowVectors = 4 * target.WarpSize

// library plans pre-defined op as a kernel of the runtime library.
func library(g *kernel.Graph, op *kernel.Op, arch target.Arch, opts Options) (Kernel, error) {
	out := g.Tensors[op.Out[0]]
	x := g.Tensors[op.In[0]]
	es := out.DType.Size()
	perVec := VectorBytes / es // elements a vector holds
	k := Kernel{Threads: libraryThreads, Stages: 1, Split: 1, Vector: es}
	// rowWarps plans a kernel that runs a warp per row: 8 a block, or 2
	// when 8 would leave SMs without a block.
	rowWarps := func(rows int) {
		warps := libraryThreads / target.WarpSize
		if (rows+warps-1)/warps < arch.SMs {
			warps = 2
		}
		k.Threads = warps * target.WarpSize
		k.Grid = [3]int{max(1, min((rows+warps-1)/warps, maxStrideBlocks)), 1, 1}
	}
	switch op.Kind.Info().Class {
	case ugraph.ClassUnary:
		// The bulk in vectors, the tail (under a vector) by the same threads.
		k.Code, k.Vector = Unary, VectorBytes
		k.Grid = [3]int{strideBlocks((out.Shape.NumElements() + perVec - 1) / perVec), 1, 1}
	case ugraph.ClassBinary:
		k.Code = Binary
		n := out.Shape.NumElements()
		if out.Shape.Last()%perVec == 0 { // rows of whole vectors
			k.Vector, n = VectorBytes, n/perVec
		}
		k.Grid = [3]int{strideBlocks(n), 1, 1}
	case ugraph.ClassReduction:
		outer, n, inner := layout.Split(x.Shape, op.Attr.Dim)
		if inner == 1 {
			k.Code = ReduceRows
			access := 1 // elements a thread's access reads
			if n%perVec == 0 {
				k.Vector, access = VectorBytes, perVec
			}
			if splits, chunk := rowSplits(outer, n/access, arch); splits > 1 {
				k.Code, k.Split = ReduceRowsSplit, splits
				k.Grid = [3]int{splits, outer, 1}
				k.Workspace = 4 * (k.SplitCounts() + outer)
				k.Chunk = chunk
				break
			}
			if blockRows(outer, n/access, arch) {
				k.Code = ReduceRowsBlock
				k.Grid = [3]int{min(outer, maxStrideBlocks), 1, 1}
				break
			}
			rowWarps(outer)
		} else {
			k.Code = ReduceMid
			k.Grid = [3]int{strideBlocks(outer * inner), 1, 1}
			if k.Grid[0] < arch.SMs && n >= splitMidSteps*libraryThreads/target.WarpSize {
				// Too few outputs to fill the SMs a thread each, and a
				// long sum each: a warp per 32 outputs loops over an
				// eighth of it.
				k.Code = ReduceMidSplit
				k.Grid = [3]int{max(1, min((outer*inner+target.WarpSize-1)/target.WarpSize, maxStrideBlocks)), 1, 1}
			}
		}
	case ugraph.ClassNorm:
		rows, n, inner := layout.Split(x.Shape, op.Attr.Dim)
		n *= inner
		// The dims after Attr.Dim, each at most 2^30, can pass an int
		// together; rms_norm's index steps 256 past the row's last
		// element, and must not wrap either (found by review).
		if limit := math.MaxInt32 - (libraryThreads - 1); n > limit {
			return Kernel{}, fmt.Errorf("rows of %d elements: the runtime's rms_norm counts a row in an int (at most %d)", n, limit)
		}
		if n%perVec == 0 && n/perVec <= WarpRowVectors {
			// A short row: a warp's registers hold it, no barrier.
			k.Code, k.Vector = RMSNormWarp, VectorBytes
			rowWarps(rows)
			break
		}
		k.Code = RMSNorm
		k.Grid = [3]int{max(1, min(rows, maxStrideBlocks)), 1, 1}
	case ugraph.ClassMatmul:
		r := x.Shape.Rank()
		m, kd, n := x.Shape.Dim(r-2), x.Shape.Dim(r-1), out.Shape.Last()
		batch := x.Shape.NumElements() / (m * kd)
		tile, ok := gemmConfig(out.DType, m, n, kd)
		if opts.OwnGEMM && batch > target.MaxGridYZ { // the batch is the grid's z axis
			return Kernel{}, fmt.Errorf("%d batched matrices; at most %d", batch, target.MaxGridYZ)
		}
		switch {
		case !opts.OwnGEMM:
			// cuBLASLt moves skinny matmuls' weights at eager PyTorch's
			// speed (it is what eager runs); the runtime's own GEMM
			// reached a quarter of that on an H100 (bench/results/h100).
			// It takes any shape (rows not a multiple of 16 bytes get its
			// slower, less aligned kernels), as eager's cuBLAS calls do;
			// the runtime's fallback for those is SIMT. fp32 runs in fp32
			// (CUBLAS_COMPUTE_32F, no TF32), as eager's default does;
			// the runtime has only a SIMT GEMM for it.
			// No grid: the batch is cuBLASLt's count, an int too (found
			// by review: 2,048 sequences × 32 heads of decode attention
			// were refused for the grid's 65,535).
			if max(m, n, kd, batch) > math.MaxInt32 {
				return Kernel{}, fmt.Errorf("%d× %dx%dx%d matmul: cuBLASLt takes counts of at most %d (lt_matmul's int)", batch, m, kd, n, math.MaxInt32)
			}
			k = Kernel{Code: CuBLASLt, Stages: 1, Split: 1, Vector: 16, Workspace: LibraryWorkspace}
		case ok:
			k.Code, k.Tile, k.RowTile = GEMM, tile, tile.BM
			k.Grid = [3]int{(n + tile.BN - 1) / tile.BN, (m + tile.BM - 1) / tile.BM, batch}
			k.Threads = tile.WM * tile.WN * target.WarpSize
			k.Stages = gemmStages
			k.SmemBytes = gemmStages * (tile.BM*(gemmBK+gemmPad) + gemmBK*(tile.BN+gemmPad)) * out.DType.Size()
			k.Vector = 16 // cp.async of 16-byte chunks
		default:
			k.Code, k.Tile, k.RowTile = GEMMSIMT, GEMMTile{BM: simtTile, BN: simtTile}, simtTile
			k.Grid = [3]int{(n + simtTile - 1) / simtTile, (m + simtTile - 1) / simtTile, batch}
		}
	default:
		return Kernel{}, fmt.Errorf("no runtime kernel for %v", op.Kind)
	}
	if k.Grid[1] > target.MaxGridYZ || k.Grid[2] > target.MaxGridYZ {
		return Kernel{}, fmt.Errorf("grid %v is too large", k.Grid)
	}
	return k, nil
}

// strideBlocks is the grid of a grid-stride kernel over n elements, one
// per thread per step.
func strideBlocks(n int) int {
	return max(1, min((n+libraryThreads-1)/libraryThreads, maxStrideBlocks))
}

// gemmConfig picks the runtime GEMM's block tile from M (decode-sized M
// gets 16-row tiles), and says whether tensor cores apply: fp16/bf16 with K
// and N multiples of 8 (16-byte rows for cp.async).
func gemmConfig(dt ugraph.DType, m, n, k int) (GEMMTile, bool) {
	if dt == ugraph.Float32 || k%8 != 0 || n%8 != 0 {
		return GEMMTile{}, false
	}
	switch {
	case m <= 16:
		return GEMMTile{16, 64, 1, 4}, true
	case m <= 32:
		return GEMMTile{32, 64, 2, 2}, true
	case m <= 64:
		return GEMMTile{64, 64, 2, 2}, true
	}
	return GEMMTile{128, 128, 2, 2}, true
}
