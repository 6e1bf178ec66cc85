package thread

import (
	"errors"
	"fmt"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Options tune a plan. The zero value asks for the defaults.
type Options struct {
	// Stages bounds the buffers an input tile the for-loop walks gets (the
	// depth of the cp.async pipeline); 0 means no bound but the graph's.
	// A graph gets at most its own depth (block.Graph.Stages), or
	// DefaultStages where it sets none, and one with F iterations at
	// most F.
	Stages int
	// RegFloats bounds the fp32 registers per thread that accumulators
	// held across the for-loop may take (mma tiles, then lane partials),
	// all groups together; 0 means DefaultRegFloats. Accumulators past the
	// budget live in shared memory.
	// Either way the budget is at most half the registers a thread of the
	// block can have (target.RegsPerBlock over its threads), so that a
	// large block's accumulators leave room for the rest and never spill.
	RegFloats int
}

// Defaults of Options.
const (
	DefaultStages    = 4
	DefaultRegFloats = 128
	// MaxLanePartials bounds the lane partials (Group.LaneRows) of all a
	// block's groups together: more crowd a thread's registers (ptxas
	// spilled 18 under __launch_bounds__), and a warp with many rows to
	// sum spends its iteration reading them, not waiting on their sums.
	MaxLanePartials = 8
)

// SmemAlign is the alignment, in bytes, of every shared tile (and every
// stage of one).
const SmemAlign = 128

// Role says how an op of the block graph runs.
type Role uint8

const (
	RoleDead  Role = iota // no output depends on it; not run
	RoleLoad              // input op: its tile is copied in from device memory, or read in place
	RoleHead              // produces values into registers and starts a group
	RoleFused             // runs in registers in its group's epilogue
	RoleStore             // output op: stores its group's result from registers to device memory
)

var roleNames = [...]string{"dead", "load", "head", "fused", "store"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Op is the thread-level view of the block op with the same index.
type Op struct {
	Role  Role
	Group int  // the group of a head, fused or store op; -1 for the others
	MMA   *MMA // set for a matmul that runs on tensor cores
}

// MMA says how a matmul runs on tensor cores with the arch's warp-level
// instruction Instr (mma.sync m16n8k16 on sm_80 and sm_90).
//
// The output [Batch][M][N] is cut into MTiles Instr.M-row tiles (each
// batch's rows rounded up to a multiple of Instr.M; rows past M are
// computed from padding and discarded) and NTiles Instr.N-column tiles.
// Warp w of the block, of rank r = (w − Base) mod warps in the plan,
// owns the m-tiles [rm·MPer, (rm+1)·MPer) ∩ [0, MTiles) and the n-tiles
// [rn·NPer, (rn+1)·NPer), where rm = r / WarpsN and rn = r % WarpsN; warps
// past WarpsM·WarpsN, and m-tiles past MTiles, do nothing. A warp computes
// its tiles ChunkM × ChunkN at a time, unless Persistent.
type MMA struct {
	Instr          target.MMA
	Batch, M, N, K int
	MTiles, NTiles int
	WarpsM, WarpsN int
	MPer, NPer     int
	ChunkM, ChunkN int
	// Base is the warp of rank 0: where a matmul's tiles leave warps idle
	// (a few rows, fewer n-tiles than warps), the next matmul of the part
	// begins on the idle ones (the balance pass).
	Base int
	// WarpsK, when above 1, is the slices of each iteration's K that the
	// warps of ranks [s·G, (s+1)·G) take (G = WarpsM·WarpsN, s < WarpsK,
	// each KSteps()/WarpsK steps of Instr.K): warps a matmul of a few
	// rows would leave idle sum its products over their slice in their
	// own registers (the slices pass). After the loop, slices 1 and on
	// put their sums in shared memory at Scratch, WarpsK−1 regions of G
	// warps' Floats() floats a lane, and after the barrier that ends the
	// loop the warps of slice 0 add them to theirs and run the epilogue.
	WarpsK  int
	Scratch int
	// Persistent: the warp's whole MPer × NPer tile stays in registers
	// across the for-loop, as the None accumulator fused into the group.
	Persistent bool
	// Scaled, when set, is the product that makes the matmul's B operand,
	// folded into the matmul (see Scaled).
	Scaled *Scaled
}

// Scaled is a matmul's B operand X ⊙ By, with X the same for every batch
// (its batch dims 1) and By one value per batch (its last two dims 1),
// folded into the matmul: By is a scalar of each batch, so A·(X ⊙ By) =
// (A·X) ⊙ By. The product is never made (op Mul is dead): the mma
// multiplies A, its batches stacked as one matrix (MMA.Batch 1, MMA.M
// their rows together), by X, and the epilogue multiplies each row's
// results by By at the row's batch (row / Rows) before the group's chain.
// A grouped-query attention written without a reshape repeats K and V
// over a group's heads this way, a product with a tensor of ones: the
// block then keeps one copy of a K or V tile, not one per head, and its
// mma tiles hold the heads' rows together rather than each head's
// padded to 16.
type Scaled struct {
	Mul   int            // the block op X ⊙ By (or By ⊙ X)
	X, By block.TensorID // input tiles
	Rows  int            // the rows of one batch: the matmul's M as written
}

// TensorFlops is the work of the mma instructions the plan issues: its
// m-tiles and n-tiles, rows past M included, over K.
func (m *MMA) TensorFlops() int64 {
	return 2 * int64(m.MTiles*m.Instr.M) * int64(m.NTiles*m.Instr.N) * int64(ceilDiv(m.K, m.Instr.K)*m.Instr.K)
}

// LdMatrix is the ldmatrix instructions the busiest warp issues per
// k-step (Instr.K deep) of the matmul as the code runs it: mma_tiles
// (templates/mirage_runtime.cuh) called once for the warp's whole tile
// (whole: Graph.SummedInRegisters) or once per
// ChunkM × ChunkN chunk; each call loads its m-tiles of A (those below
// MTiles), and ⌈CN/2⌉ of B for the first m-tile and again for each m-tile
// that begins another batch. The code generator's calls and the cost
// model's steps both follow it.
func (m *MMA) LdMatrix(whole bool) int {
	cm, cn := m.ChunkM, m.ChunkN
	if whole {
		cm, cn = m.MPer, m.NPer
	}
	per := m.MTilesPerBatch()
	most := 0
	for wm := range m.WarpsM {
		n := 0
		for c := 0; c < m.MPer; c += cm {
			for i := range cm {
				mt := wm*m.MPer + c + i
				if mt >= m.MTiles {
					break
				}
				n++ // A's tile
				if i == 0 || m.MTiles != per && mt/per != (mt-1)/per {
					n += (cn + 1) / 2 // B's tiles, for this batch
				}
			}
		}
		most = max(most, n*(m.NPer/cn))
	}
	return most
}

// EpilogueValues is the fragment values a lane of the busiest warp hands
// to the epilogue over the warp's whole tile: Instr.M·Instr.N/32 (4) for
// each of its m-tiles below MTiles and each n-tile, but half that for an
// m-tile whose second 8 rows all lie past M (a batch's last, M mod 16 at
// most 8): the code's row guard skips that half for every lane of the
// warp alike. The code generator's fragment loops and the cost model's
// steps both follow it.
func (m *MMA) EpilogueValues() int {
	per := m.MTilesPerBatch()
	half := m.Instr.M / 2
	lastRows := m.M - (per-1)*m.Instr.M // the rows of a batch's last m-tile
	most := 0
	for wm := range m.WarpsM {
		n := 0
		for i := range m.MPer {
			mt := wm*m.MPer + i
			if mt >= m.MTiles {
				break
			}
			v := m.Instr.M * m.Instr.N / target.WarpSize
			if mt%per == per-1 && lastRows <= half {
				v /= 2
			}
			n += v * m.NPer
		}
		most = max(most, n)
	}
	return most
}

// BusyWarps is how many warps, from Base on, own a tile in the loop: the
// rest of the block's do nothing.
func (m *MMA) BusyWarps() int {
	return min(m.WarpsM, ceilDiv(m.MTiles, m.MPer)) * m.WarpsN * m.Slices()
}

// Slices is the slices of K the warps take: WarpsK, or 1.
func (m *MMA) Slices() int { return max(1, m.WarpsK) }

// KSteps is the steps of Instr.K that one warp takes each iteration.
func (m *MMA) KSteps() int { return ceilDiv(m.K, m.Instr.K) / m.Slices() }

// ScratchBytes is the shared memory the slices past the first put their
// sums in (none without slices).
func (m *MMA) ScratchBytes() int {
	return (m.Slices() - 1) * m.WarpsM * m.WarpsN * m.Floats() * target.WarpSize * 4
}

// Rank is warp w's rank in the plan, in a block of warps.
func (m *MMA) Rank(w, warps int) int { return ((w-m.Base)%warps + warps) % warps }

// Busy reports whether warp w of a block of warps owns a tile in the loop.
func (m *MMA) Busy(w, warps int) bool { return m.Rank(w, warps) < m.BusyWarps() }

// MTilesPerBatch is the number of 16-row tiles over one batch's M rows.
func (m *MMA) MTilesPerBatch() int { return ceilDiv(m.M, m.Instr.M) }

// Floats is the fp32 registers per thread that the warp's whole tile takes.
func (m *MMA) Floats() int { return m.MPer * m.NPer * m.Instr.M * m.Instr.N / target.WarpSize }

// Group is a head op and the ops fused into its epilogue.
type Group struct {
	Head   int            // the producing op
	Chain  []int          // ops fused into the head's epilogue, in order
	Stores []int          // output ops that store Result from registers
	Accum  int            // the forloop_accum op (Head or in Chain), or -1
	Result block.TensorID // the tile of the group's last op
	Loop   int            // index in Graph.Loop of the for-loop part, or -1
	Post   int            // index in Graph.Post of the post-loop part, or -1
	InLoop int            // how many Chain ops run in the for-loop
	// LaneRows is set for a group headed by a sum, mean or rms accumulator
	// that a for-loop of several iterations feeds: the rows of its operand
	// each warp owns (rows w, w + warps, ...). Every lane keeps a partial
	// sum per row in registers across the loop, and the warp reduces them
	// once after it, instead of at every iteration. 0: the warp reduces
	// each iteration's rows and adds them into the shared accumulator.
	LaneRows int
	// RowWarps is set for a group whose head works a row at a time (an
	// rms_norm or a last-dim reduction, or a sum, mean or rms accumulator
	// without lane partials) when its tile has fewer rows than the block
	// has warps: the warps that share each row, each summing every
	// RowWarps-th stride of it (32 lanes' reads: 32·RowVector elements).
	// 1: a warp per row.
	RowWarps int
	// RowVector is the elements a lane reads at once in the head's row
	// loops (a head that works a row at a time, or lane partials): a
	// 16-byte vector's worth where the operand's rows are whole vectors
	// at 16-byte aligned addresses and give every lane of the warps that
	// share a row one vector or more, else 1.
	RowVector int
	// StoreVector is the elements a lane stores at once where the head
	// is an rms_norm whose scaling pass stores its results from the row
	// loop: RowVector where every output takes them as whole aligned
	// 16-byte vectors of the elements read (storesRowVectors), else 1.
	StoreVector int
	// Scratch is where in shared memory the warps that share a row meet
	// when the head is not an accumulator (RowWarps > 1): a float per
	// warp, its partial sum, which each warp of the row adds up in order
	// after a barrier. -1: none. (An accumulator's warps add their sums
	// into it with atomicAdd, in an order that may vary from run to run.)
	Scratch int
	// Through is set where the for-loop runs once and the group's
	// accumulator (a forloop_accum of kind none in its chain, after a head
	// that is not an mma) only passes that iteration's values on: the
	// whole chain and the stores run in the for-loop part, the accumulator
	// keeps no tile, and the group has no post-loop part. (A loop of one
	// iteration otherwise adds each value into a zeroed fp32 tile in
	// shared memory, and a pass after it reads the tile back and stores
	// it: a row-wise rms_norm's block would keep its rows twice.)
	Through bool
}

// Ops returns the head and the chain, in order.
func (gr *Group) Ops() []int { return append([]int{gr.Head}, gr.Chain...) }

// Storage says where a tile lives.
type Storage uint8

const (
	StorageNone Storage = iota // a dead tile, or the (absent) result of an output op
	Registers                  // only in the registers of its group
	Shared                     // in shared memory at Tile.Offset
	Device                     // an input tile read in place from device memory
)

var storageNames = [...]string{"none", "registers", "shared", "device"}

func (s Storage) String() string {
	if int(s) < len(storageNames) {
		return storageNames[s]
	}
	return fmt.Sprintf("Storage(%d)", uint8(s))
}

// Tile is where one tile of the block graph lives. Rows, Pitch, Stages,
// Offset, Bytes and Live are set for Shared tiles only.
type Tile struct {
	Storage Storage
	// DType is the element type as stored: the tile's, except float32 for
	// accumulators.
	DType ugraph.DType
	// Rows is the number of rows held: the product of all dims but the
	// last, plus padding rows when the tile is the A operand of an mma
	// matmul whose M is not a multiple of 16.
	Rows int
	// Pitch is the distance, in elements, between consecutive rows.
	Pitch int
	// Stages is the number of buffers: more than 1 for an input tile that
	// the for-loop walks with a cp.async pipeline.
	Stages int
	// Offset is the byte offset of the first buffer in shared memory.
	Offset int
	// StageBytes is the size of one buffer (a multiple of SmemAlign);
	// buffer s starts at Offset + s·StageBytes.
	StageBytes int
	// Bytes is StageBytes · Stages.
	Bytes int
	// Live is the interval of schedule steps during which the bytes are
	// reserved.
	Live Interval
	// Accum marks an accumulator in shared memory: zeroed in the prologue,
	// added into by its group during the for-loop.
	Accum bool
	// Vector is the bytes of one cp.async that copies an input tile from
	// device memory (16, 8 or 4); 0 when its rows are not 4-byte aligned
	// and it is copied element by element.
	Vector int
}

// Interval is a closed interval of schedule steps.
type Interval struct{ First, Last int }

// Overlaps reports whether the intervals share a step.
func (a Interval) Overlaps(b Interval) bool { return a.First <= b.Last && b.First <= a.Last }

// Graph is the thread-level plan of a block graph.
type Graph struct {
	Block   *block.Graph
	Threads int // threads per block: Block.Threads.Count() rounded up to a whole warp
	Ops     []Op
	Tiles   []Tile
	Groups  []Group
	// Loop and Post list the groups whose for-loop and post-loop parts run,
	// in order. Step 0 is the prologue, Loop[i] runs at step 1+i, step
	// len(Loop)+1 ends the loop, and Post[j] runs at step len(Loop)+2+j.
	Loop, Post []int
	// Stages is the pipeline depth of the input tiles the for-loop walks.
	Stages int
	// SmemBytes is the peak of shared memory: the end of the last tile.
	SmemBytes int
	// RegFloats is the fp32 registers per thread that accumulators held
	// across the for-loop take: persistent mma tiles and lane partials
	// (Group.LaneRows).
	RegFloats int
}

// Warps is the number of warps per block.
func (g *Graph) Warps() int { return g.Threads / target.WarpSize }

// Reads is the tiles op i reads as planned: its operands, but for a
// matmul whose B operand is folded into it (MMA.Scaled), A, X and By.
func (g *Graph) Reads(i int) []block.TensorID {
	op := &g.Block.Ops[i]
	if p := g.Ops[i].MMA; p != nil && p.Scaled != nil {
		return []block.TensorID{op.In[0], p.Scaled.X, p.Scaled.By}
	}
	return op.Operands()
}

// LoopStep and PostStep are the schedule steps of a group's parts.
func (g *Graph) LoopStep(i int) int { return 1 + i }
func (g *Graph) PostStep(j int) int { return len(g.Loop) + 2 + j }

// LoopEnd is the step that ends the for-loop.
func (g *Graph) LoopEnd() int { return len(g.Loop) + 1 }

// LoopWritesShared reports whether op i of group gr writes its tile to
// shared memory in the group's for-loop part. An mma's persistent
// accumulator is summed in registers there, and so are a group's lane
// partials (its head): their shared tiles are written only after the loop.
// The code generator's barriers and the cost model's both follow it.
func (g *Graph) LoopWritesShared(gr *Group, i int) bool {
	op := &g.Block.Ops[i]
	switch {
	case g.Tiles[op.Out].Storage != Shared:
		return false
	case op.Kind == ugraph.OpForloopAccum && g.Ops[gr.Head].MMA != nil && g.Ops[gr.Head].MMA.Persistent:
		return false
	}
	return gr.LaneRows == 0 || i != gr.Head
}

// CopiedEachIteration reports whether input op i's shared tile is copied
// at every iteration of the for-loop (the pipelined tiles), not once before
// it: a tile the loop walks over more than one iteration. A loop of one
// iteration copies every tile once, whatever dim it names. The code
// generator's copies and the cost model's steps both follow it.
func (g *Graph) CopiedEachIteration(i int) bool {
	op := &g.Block.Ops[i]
	return g.Tiles[op.Out].Stages > 1 || op.Input.FMap >= 0 && g.Block.ForloopRange > 1
}

// SummedInRegisters reports whether the for-loop part of group gr is a
// tensor-core matmul summed straight into its register accumulator, with
// nothing after it there: the warp's whole tile in one mma_tiles call and
// no epilogue in the loop. The code generator's mma parts and the cost
// model's steps both follow it.
func (g *Graph) SummedInRegisters(gr *Group) bool {
	p := g.Ops[gr.Head].MMA
	return p != nil && p.Persistent && gr.Accum >= 0 && gr.InLoop == 1 && gr.Chain[0] == gr.Accum
}

// Zeroed lists the tiles the kernel zeroes before its loop, element by
// element over the block's threads: the live accumulators kept in shared
// memory. The code generator's prologue and the cost model's steps both
// follow it.
func (g *Graph) Zeroed() []block.TensorID {
	var ts []block.TensorID
	for i := range g.Block.Ops {
		op := &g.Block.Ops[i]
		if op.Out < 0 || g.Ops[i].Role == RoleDead {
			continue
		}
		if t := &g.Tiles[op.Out]; t.Storage == Shared && t.Accum {
			ts = append(ts, op.Out)
		}
	}
	return ts
}

// InLoop reports whether op i runs inside the for-loop (an accumulator
// runs in both parts and counts as in the loop).
func (g *Graph) InLoop(i int) bool {
	op := &g.Block.Ops[i]
	switch op.Kind {
	case ugraph.OpOutput:
		return false
	case ugraph.OpForloopAccum, ugraph.OpInput:
		return true
	}
	return !g.Block.Tensors[op.Out].PostLoop
}

// RunsInLoop reports whether op i runs in its group's for-loop part (an
// accumulator reads its operand there), not in its post-loop part: an op
// inside the loop, or any op, stores included, of a group that passes its
// accumulator through (Group.Through).
func (g *Graph) RunsInLoop(i int) bool {
	if gi := g.Ops[i].Group; gi >= 0 && g.Groups[gi].Through {
		return true
	}
	return g.Block.Ops[i].Kind != ugraph.OpOutput && g.InLoop(i)
}

// SmemError reports a plan over the shared-memory limit.
type SmemError struct {
	Bytes, Limit int
}

func (e *SmemError) Error() string {
	return fmt.Sprintf("the block needs %d bytes of shared memory even with no pipelining; the limit is %d", e.Bytes, e.Limit)
}

// ErrNoOutput is returned for a block graph with no output op.
var ErrNoOutput = errors.New("thread: the block graph has no output op")

// Depth is the pipeline depth Derive starts from for g: the graph's own
// (block.Graph.Stages), or DefaultStages where it sets none, bounded by
// opts.Stages and by the for-loop's iterations; Derive lowers it further
// only where shared memory runs out. Two graphs that differ only in their
// depth and have the same Depth are planned alike.
func Depth(g *block.Graph, opts Options) int {
	stages := DefaultStages
	if g.Stages > 0 {
		stages = g.Stages
	}
	if opts.Stages > 0 {
		stages = min(stages, opts.Stages)
	}
	return max(1, min(stages, g.ForloopRange))
}

// Derive plans how g runs on a block's threads on arch: matmuls use the
// arch's MMA instruction where their operands allow, and the plan fits the
// shared memory one block may use (arch.MaxSmemPerBlock; 0: no limit):
// Derive lowers the pipeline depth, down to one buffer, until it fits, and
// returns a *SmemError when it does not fit even then. It assumes g was
// built by the block builders (so it is valid) and does not modify it. The
// result depends only on g, arch and opts.
func Derive(g *block.Graph, arch target.Arch, opts Options) (*Graph, error) {
	opts.Stages = Depth(g, opts)
	if opts.RegFloats <= 0 {
		opts.RegFloats = DefaultRegFloats
	}
	threads := roundUp(g.Threads.Count(), target.WarpSize)
	opts.RegFloats = min(opts.RegFloats, target.RegsPerBlock/threads/2)
	d := &deriver{g: g, arch: arch, opts: opts, out: &Graph{
		Block:   g,
		Threads: threads,
		Ops:     make([]Op, len(g.Ops)),
		Tiles:   make([]Tile, len(g.Tensors)),
	}}
	for _, p := range passes {
		if err := p.run(d); err != nil {
			return nil, fmt.Errorf("thread: %s: %w", p.name, err)
		}
	}
	return d.out, nil
}

// passes are the steps of Derive, in order; each reads what the earlier
// ones decided.
var passes = [...]struct {
	name string
	run  func(*deriver) error
}{
	{"liveness", (*deriver).liveness},   // live ops, producers and uses of tiles
	{"lowering", (*deriver).lower},      // mma or SIMT for each matmul
	{"fusion", (*deriver).fuse},         // groups: heads, fused chains, stores
	{"through", (*deriver).passThrough}, // one iteration's accumulators that only pass values on
	{"storage", (*deriver).store},       // registers, shared or device; persistent accumulators
	{"slices", (*deriver).sliceK},       // idle warps take slices of a matmul's K
	{"rows", (*deriver).splitRows},      // warps per row of row-at-a-time heads
	{"schedule", (*deriver).schedule},   // loop and post steps; live intervals
	{"allocate", (*deriver).allocate},   // rows, pitches, stages, offsets; fitting the limit
	{"vectors", (*deriver).rowVectors},  // 16-byte reads and stores in row loops
	{"balance", (*deriver).balance},     // the warps each mma begins on
}

// deriver holds what the passes share.
type deriver struct {
	g    *block.Graph
	arch target.Arch
	opts Options
	out  *Graph

	live []bool  // per op
	prod []int   // per tile: the producing op
	uses [][]int // per tile: the live ops reading it, once per operand slot

	sliced []unslice // the matmuls sliceK sliced, which allocate may take back
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
