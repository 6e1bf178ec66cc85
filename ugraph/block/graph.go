// Package block is the threadblock level of a μGraph: the body of one
// graph-defined kernel launch. A Graph runs on every block of its grid; each
// block loads tiles of device tensors (input ops), runs a for-loop over
// forloop_range iterations, accumulates across iterations (forloop_accum),
// and stores post-loop tiles into device tensors (output ops).
//
// A Graph names the device tensors it reads by position: its k-th input op
// reads the k-th operand of the kernel-level customized op that holds it.
// That keeps this package below package kernel.
package block

import (
	"fmt"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
)

// TensorID names a tile of a Graph: an index into Graph.Tensors.
type TensorID int32

// NoTensor marks an unused operand slot and the result of an output op.
const NoTensor TensorID = -1

// Dim3 is an extent along the x, y and z axes of a grid or a block.
type Dim3 [3]int

// Count is the product of the three extents.
func (d Dim3) Count() int { return d[0] * d[1] * d[2] }

func (d Dim3) String() string { return fmt.Sprintf("(%d, %d, %d)", d[0], d[1], d[2]) }

// Map gives, for each grid axis x, y, z, the tensor dim that the axis
// partitions, or -1 to replicate along that axis. A grid axis of size 1
// partitions nothing, whatever its entry.
type Map [3]int

// Replicate is the map that partitions nothing.
var Replicate = Map{-1, -1, -1}

func (m Map) String() string { return fmt.Sprintf("(%d, %d, %d)", m[0], m[1], m[2]) }

// Tensor is a tile in shared memory (or registers) of one block.
type Tensor struct {
	Shape ugraph.Shape
	DType ugraph.DType
	// PostLoop is set on tiles computed after the for-loop: the results of
	// forloop_accum and of ops whose operands are post-loop.
	PostLoop bool
}

// InputOp describes how a block loads its tile of a device tensor.
type InputOp struct {
	DShape ugraph.Shape // the device tensor's shape
	IMap   Map          // grid axis -> partitioned dim
	FMap   int          // the dim the for-loop walks, or -1
}

// OutputOp describes how a block stores its post-loop tile.
type OutputOp struct {
	DShape ugraph.Shape // the device tensor's shape: tile dims times grid
	OMap   Map          // grid axis -> dim the blocks' tiles are laid along
}

// Op is one operator of a block graph. It is a plain value (no pointers or
// slices), so copying a Graph's op list copies the ops.
type Op struct {
	Kind   ugraph.OpKind
	In     [2]TensorID // operands; NoTensor past the kind's arity
	Out    TensorID    // the tile produced; NoTensor for output ops
	Attr   ugraph.Attr // parameters the kind uses; the rest zero
	Input  InputOp     // set when Kind is OpInput
	Output OutputOp    // set when Kind is OpOutput
}

// Operands returns the operand tiles of op.
func (op *Op) Operands() []TensorID { return op.In[:op.Kind.Info().Arity] }

// Graph is a threadblock graph. Build it with New and the Add methods, which
// check every rule of DESIGN §3; a Graph built that way is always valid.
// Once attached to a kernel graph (kernel.Graph.Customized) it must not
// change.
type Graph struct {
	Grid          Dim3 // blocks along x, y, z
	Threads       Dim3 // threads per block (Mirage's block_dim)
	ForloopRange  int  // F: iterations of the for-loop
	ReductionDimx int  // d of reduction_to_dimx and the sum_todimx accumulator
	// Stages is the most buffers the cp.async pipeline may give an input
	// tile the for-loop walks: a choice of how the block runs, not of
	// what it computes (shallower pipelines take less shared memory, so
	// more blocks fit an SM). 0 leaves it to the thread plan's default;
	// see SetStages.
	Stages int

	Tensors []Tensor
	Ops     []Op
}

// InputVaries reports whether a block input's tile changes between the
// for-loop's iterations: the loop walks it (fmap >= 0) and runs more than
// once. A tile that does not vary is the same values in every iteration,
// so an accumulator over F iterations adds F equal tiles.
func InputVaries(forloopRange, fmap int) bool { return fmap >= 0 && forloopRange > 1 }

// OpVaries reports whether the result of an op of kind k varies between
// iterations, given whether any operand does. An accumulator's result is
// the loop's total, read after it.
func OpVaries(k ugraph.OpKind, operandVaries bool) bool {
	return operandVaries && k != ugraph.OpForloopAccum
}

// Varies reports, for each tile of g, whether it changes between the
// for-loop's iterations (InputVaries, OpVaries).
func (g *Graph) Varies() []bool {
	varies := make([]bool, len(g.Tensors))
	for i := range g.Ops {
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			varies[op.Out] = InputVaries(g.ForloopRange, op.Input.FMap)
		case ugraph.OpOutput:
		default:
			v := false
			for _, t := range op.Operands() {
				v = v || varies[t]
			}
			varies[op.Out] = OpVaries(op.Kind, v)
		}
	}
	return varies
}

// MaxThreads is CUDA's limit on threads per block.
const MaxThreads = target.MaxThreadsPerBlock

// MaxGridAxis bounds each grid axis: CUDA's limit on the y and z axes,
// applied to x too (no kernel we search wants more blocks along one axis).
const MaxGridAxis = target.MaxGridYZ

// New returns an empty block graph, checking its launch parameters.
func New(grid, threads Dim3, forloopRange, reductionDimx int) (*Graph, error) {
	g := new(Graph)
	if err := g.Reset(grid, threads, forloopRange, reductionDimx); err != nil {
		return nil, err
	}
	return g, nil
}

// Reset makes g an empty block graph with the given launch parameters, as
// New does, keeping the memory of its ops and tensors (a generator reuses
// one graph for many). g is unchanged when the parameters are invalid.
func (g *Graph) Reset(grid, threads Dim3, forloopRange, reductionDimx int) error {
	for a, n := range grid {
		if n < 1 || n > MaxGridAxis {
			return fmt.Errorf("grid_dim %v: axis %d is %d, want 1 to %d", grid, a, n, MaxGridAxis)
		}
	}
	for a, n := range threads {
		if n < 1 || n > MaxThreads { // bounding each axis keeps Count from overflowing
			return fmt.Errorf("block_dim %v: axis %d is %d, want 1 to %d", threads, a, n, MaxThreads)
		}
	}
	if threads.Count() > MaxThreads {
		return fmt.Errorf("block_dim %v: %d threads, at most %d", threads, threads.Count(), MaxThreads)
	}
	// Both stand for extents: the loop walks a dim in F steps, and an
	// accumulator divides by F times a dim; bounding them like extents
	// keeps such products exact.
	if forloopRange < 1 || forloopRange > ugraph.MaxDim {
		return fmt.Errorf("forloop_range %d, want 1 to %d", forloopRange, ugraph.MaxDim)
	}
	if reductionDimx < 1 || reductionDimx > ugraph.MaxDim {
		return fmt.Errorf("reduction_dimx %d, want 1 to %d", reductionDimx, ugraph.MaxDim)
	}
	*g = Graph{Grid: grid, Threads: threads, ForloopRange: forloopRange, ReductionDimx: reductionDimx,
		Tensors: g.Tensors[:0], Ops: g.Ops[:0]}
	return nil
}

// MaxStages bounds Graph.Stages: deeper pipelines than this hold more
// bytes in flight than any SM needs to cover its memory latency.
const MaxStages = 8

// SetStages sets the pipeline depth g's kernel may use (0: the plan's
// default). Like the launch parameters, it must be set before g is
// attached to a kernel graph.
func (g *Graph) SetStages(n int) error {
	if n < 0 || n > MaxStages {
		return fmt.Errorf("stages %d, want 0 (the default) to %d", n, MaxStages)
	}
	g.Stages = n
	return nil
}

// Clone returns a copy of g that shares nothing mutable with it.
func (g *Graph) Clone() *Graph {
	c := *g
	c.Tensors = append([]Tensor(nil), g.Tensors...)
	c.Ops = append([]Op(nil), g.Ops...)
	return &c
}

// InputOps returns the input ops in order; the k-th reads the k-th operand
// of the customized op.
func (g *Graph) InputOps() []*Op { return g.opsOf(ugraph.OpInput) }

// OutputOps returns the output ops in order; the k-th writes the k-th
// result of the customized op.
func (g *Graph) OutputOps() []*Op { return g.opsOf(ugraph.OpOutput) }

func (g *Graph) opsOf(k ugraph.OpKind) []*Op {
	var ops []*Op
	for i := range g.Ops {
		if g.Ops[i].Kind == k {
			ops = append(ops, &g.Ops[i])
		}
	}
	return ops
}

// Pop removes the last op and the tile it produced: the search's undo.
func (g *Graph) Pop() {
	op := g.Ops[len(g.Ops)-1]
	g.Ops = g.Ops[:len(g.Ops)-1]
	if op.Out != NoTensor {
		g.Tensors = g.Tensors[:op.Out]
	}
}

func (g *Graph) tensor(k ugraph.OpKind, t TensorID) (Tensor, error) {
	if t < 0 || int(t) >= len(g.Tensors) {
		return Tensor{}, fmt.Errorf("%v: operand %d is not a tile of this graph", k, t)
	}
	return g.Tensors[t], nil
}

func (g *Graph) push(op Op, t Tensor) TensorID {
	op.Out = TensorID(len(g.Tensors))
	g.Tensors = append(g.Tensors, t)
	g.Ops = append(g.Ops, op)
	return op.Out
}

// checkMap checks a grid map against a device tensor of rank r: entries in
// [-1, r), and no two grid axes of size > 1 on the same dim.
func (g *Graph) checkMap(name string, m Map, r int) error {
	for a, d := range m {
		if d < -1 || d >= r {
			return fmt.Errorf("%s %v: entry %d is %d, want -1 or a dim in [0, %d)", name, m, a, d, r)
		}
		if d < 0 || g.Grid[a] == 1 {
			continue
		}
		for b := a + 1; b < 3; b++ {
			if m[b] == d && g.Grid[b] > 1 {
				return fmt.Errorf("%s %v: grid axes %d and %d (sizes %d and %d) both partition dim %d", name, m, a, b, g.Grid[a], g.Grid[b], d)
			}
		}
	}
	return nil
}

// TileShape returns the tile that a block reads, at one iteration, of a
// device tensor of shape dshape: dim imap[a] divided by grid[a] for every
// axis a of size > 1, then dim fmap divided by forloopRange (the maps must
// be in range; AddInput checks them). When a division is not exact, it
// returns the tile divided so far and the step that fails: the grid axis,
// or 3 for the for-loop; otherwise -1. It allocates nothing, so that a
// generator can test many tilings.
func TileShape(dshape ugraph.Shape, grid Dim3, forloopRange int, imap Map, fmap int) (tile ugraph.Shape, failed int) {
	tile = dshape
	for a, d := range imap {
		if d < 0 || grid[a] == 1 {
			continue
		}
		if tile.Dim(d)%grid[a] != 0 {
			return tile, a
		}
		tile = tile.WithDim(d, tile.Dim(d)/grid[a])
	}
	if fmap >= 0 {
		if tile.Dim(fmap)%forloopRange != 0 {
			return tile, 3
		}
		tile = tile.WithDim(fmap, tile.Dim(fmap)/forloopRange)
	}
	return tile, -1
}

// AddInput adds an input op that loads tiles of a device tensor with shape
// dshape. The tile is dshape with dim imap[a] divided by Grid[a] for every
// axis a of size > 1, and then dim fmap divided by ForloopRange.
func (g *Graph) AddInput(dshape ugraph.Shape, dt ugraph.DType, imap Map, fmap int) (TensorID, error) {
	fail := func(format string, args ...any) (TensorID, error) {
		return NoTensor, &ugraph.OpError{Op: ugraph.OpInput, Inputs: []ugraph.Shape{dshape}, Rule: fmt.Sprintf(format, args...)}
	}
	if !dshape.Valid() {
		return fail("invalid device tensor shape")
	}
	if !dt.Valid() {
		return fail("invalid dtype %v", dt)
	}
	if err := g.checkMap("input_map", imap, dshape.Rank()); err != nil {
		return fail("%v", err)
	}
	if fmap < -1 || fmap >= dshape.Rank() {
		return fail("forloop_dim %d, want -1 or a dim in [0, %d)", fmap, dshape.Rank())
	}
	tile, failed := TileShape(dshape, g.Grid, g.ForloopRange, imap, fmap)
	switch {
	case failed == 3:
		_, err := tile.DivDim(fmap, g.ForloopRange)
		return fail("forloop_dim %d with forloop_range %d: %v", fmap, g.ForloopRange, err)
	case failed >= 0:
		_, err := tile.DivDim(imap[failed], g.Grid[failed])
		return fail("input_map %v: grid axis %d (%d blocks): %v", imap, failed, g.Grid[failed], err)
	}
	op := Op{Kind: ugraph.OpInput, In: [2]TensorID{NoTensor, NoTensor}, Input: InputOp{DShape: dshape, IMap: imap, FMap: fmap}}
	return g.push(op, Tensor{Shape: tile, DType: dt}), nil
}

// AddOutput adds an output op storing the post-loop tile x into a device
// tensor: x's shape with dim omap[a] multiplied by Grid[a] for every axis a
// of size > 1. Every such axis must map to a dim: one kernel never reduces
// across its blocks.
func (g *Graph) AddOutput(x TensorID, omap Map) error {
	t, err := g.tensor(ugraph.OpOutput, x)
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return &ugraph.OpError{Op: ugraph.OpOutput, Inputs: []ugraph.Shape{t.Shape}, Rule: fmt.Sprintf(format, args...)}
	}
	if !t.PostLoop {
		return fail("the tile is computed inside the for-loop; output a forloop_accum result or a tile derived from one")
	}
	if err := g.checkMap("output_map", omap, t.Shape.Rank()); err != nil {
		return fail("%v", err)
	}
	dshape := t.Shape
	for a, d := range omap {
		if g.Grid[a] == 1 {
			continue
		}
		if d < 0 {
			return fail("output_map %v: grid axis %d has %d blocks but maps to no dim; a kernel cannot reduce across blocks", omap, a, g.Grid[a])
		}
		if dshape, err = dshape.MulDim(d, g.Grid[a]); err != nil {
			return fail("output_map %v: %v", omap, err)
		}
	}
	g.Ops = append(g.Ops, Op{
		Kind: ugraph.OpOutput, In: [2]TensorID{x, NoTensor}, Out: NoTensor,
		Output: OutputOp{DShape: dshape, OMap: omap},
	})
	return nil
}

// Add adds a compute op (anything but input, output and customized) of the
// given kind on the given tiles, and returns the tile it produces. Attribute
// fields the kind does not use are ignored, and rms_norm's Dim is always set
// to the last dim.
func (g *Graph) Add(k ugraph.OpKind, a ugraph.Attr, operands ...TensorID) (TensorID, error) {
	info := k.Info()
	if !k.AllowedAt(ugraph.LevelBlock) || info.Class == ugraph.ClassIO {
		return NoTensor, fmt.Errorf("%v is not a threadblock compute op", k)
	}
	if len(operands) != info.Arity {
		return NoTensor, fmt.Errorf("%v takes %d operands, got %d", k, info.Arity, len(operands))
	}
	var shapes [2]ugraph.Shape
	var dtypes [2]ugraph.DType
	var ts [2]Tensor
	op := Op{Kind: k, In: [2]TensorID{NoTensor, NoTensor}, Out: NoTensor}
	for i, x := range operands {
		t, err := g.tensor(k, x)
		if err != nil {
			return NoTensor, err
		}
		ts[i], shapes[i], dtypes[i], op.In[i] = t, t.Shape, t.DType, x
	}
	in := shapes[:len(operands)]
	fail := func(format string, args ...any) (TensorID, error) {
		return NoTensor, &ugraph.OpError{Op: k, Inputs: append([]ugraph.Shape(nil), in...), Rule: fmt.Sprintf(format, args...)}
	}
	post := ts[0].PostLoop
	for i := 1; i < len(operands); i++ {
		if ts[i].PostLoop != post {
			return fail("combines a tile from inside the for-loop with one computed after it")
		}
	}
	if k == ugraph.OpForloopAccum {
		if post {
			return fail("accumulates a tile that is already computed after the for-loop")
		}
		post = true
	}
	op.Attr = OpAttr(k, a, shapes[0])
	shape, err := ugraph.InferShape(k, op.Attr, in, g.ReductionDimx)
	if err != nil {
		return NoTensor, err
	}
	dt, err := ugraph.SameDType(k, dtypes[:len(operands)])
	if err != nil {
		return NoTensor, err
	}
	return g.push(op, Tensor{Shape: shape, DType: dt, PostLoop: post}), nil
}

// OpAttr returns the attributes a compute op of kind k with attributes a
// has in a block graph, on a first operand of shape x: the canonical ones
// (ugraph.Canonical), with rms_norm normalizing the last dim, the only one a
// threadblock rms_norm normalizes.
func OpAttr(k ugraph.OpKind, a ugraph.Attr, x ugraph.Shape) ugraph.Attr {
	a = ugraph.Canonical(k, a)
	if k == ugraph.OpRMSNorm && x.Valid() {
		a.Dim = x.Rank() - 1
	}
	return a
}
