package search

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// OpChoice is an operator the generator may add: a kind and its attributes
// (a reduction's dim, an accumulator's kind, ...).
type OpChoice struct {
	Kind ugraph.OpKind
	Attr ugraph.Attr
}

func (c OpChoice) String() string {
	switch c.Kind.Info().Class {
	case ugraph.ClassAccum:
		return fmt.Sprintf("%v(%v)", c.Kind, c.Attr.Accum)
	case ugraph.ClassReduction, ugraph.ClassConcat:
		return fmt.Sprintf("%v(dim %d)", c.Kind, c.Attr.Dim)
	}
	return c.Kind.String()
}

// Config is what the generator explores. The named configurations
// (NamedConfig) follow Mirage's, adapted to our IR; Complete fills what a
// program leaves open from its shapes.
type Config struct {
	Name string

	// KernelOps are the pre-defined kernel operators to explore; graph-
	// defined kernels are governed by MaxCustomized.
	KernelOps []OpChoice
	// BlockOps are the threadblock operators to explore (input and output
	// ops are placed by the generator itself).
	BlockOps []OpChoice

	// Size limits.
	MaxKernelOps    int // kernel ops of a candidate, inputs included (Mirage: 5)
	MaxCustomized   int // graph-defined kernels per candidate (Mirage: 1, attention 2)
	MaxBlockOps     int // ops of a block graph, input ops included, output ops not (Mirage: 9)
	MaxBlockInputs  int // inputs of a graph-defined kernel (Mirage: 3)
	MaxBlockOutputs int // outputs of a graph-defined kernel (Mirage: 1, attention 2)

	// Threadblock graph candidates. Complete derives the empty ones from the
	// program's shapes.
	Grids []block.Dim3
	// Threads are the block sizes a graph-defined kernel may have: the
	// enumeration and the seeds build with the first, and the seeds' and
	// the best-ranked candidates' kernels get the one the cost model ranks
	// best (sizeAll).
	Threads []block.Dim3
	// Stages are the pipeline depths (block.Graph.Stages) a graph-defined
	// kernel may have; the enumeration builds with 0 (the plan's default)
	// and sizeAll chooses among them with Threads.
	Stages []int
	IMaps  []block.Map
	OMaps  []block.Map
	FMaps  []int // -1 (no for-loop dim) or a dim
	// FRanges are the for-loop ranges (> 1) tried; 1 is used exactly when
	// no input is walked. Complete adds the ranges the program's shapes
	// call for, unless the program fixed the list (Restrict).
	FRanges     []int
	fixedRanges bool
	// restricted holds the lists the program fixed (Restrict): the
	// seeds, built by rule rather than from these lists, keep to them.
	restricted    Restrictions
	ReductionDimx int

	// Arch is the target: a graph-defined kernel must fit its shared memory
	// per block, as the code generator lays the kernel out. Complete sets
	// the zero Arch to target.Default.
	Arch target.Arch
}

func ops(kinds ...ugraph.OpKind) []OpChoice {
	cs := make([]OpChoice, len(kinds))
	for i, k := range kinds {
		cs[i] = OpChoice{Kind: k}
	}
	return cs
}

func accums(as ...ugraph.Accum) []OpChoice {
	cs := make([]OpChoice, len(as))
	for i, a := range as {
		cs[i] = OpChoice{Kind: ugraph.OpForloopAccum, Attr: ugraph.Attr{Accum: a}}
	}
	return cs
}

func reductions(k ugraph.OpKind, dims ...int) []OpChoice {
	cs := make([]OpChoice, len(dims))
	for i, d := range dims {
		cs[i] = OpChoice{Kind: k, Attr: ugraph.Attr{Dim: d}}
	}
	return cs
}

// namedConfigs are Mirage's generator configurations (src/search/config.cc:
// get_default_config, get_mlp_default_config, get_attention_default_config,
// get_lora_default_config) in our terms. Their map, grid and range lists
// are left empty where our shape-derived defaults (Complete) subsume
// Mirage's fixed lists. One limit differs: attention allows 10 threadblock
// ops, not 9, because QKNorm's first kernel in the partial-sum form (three
// inputs, two rms_norms, two matmuls, exp and two accumulators) needs 10;
// Mirage reaches that program through per-iteration outputs
// (forloop_dim != -1), which DESIGN §3 rules out.
var namedConfigs = map[string]Config{
	"default": {
		KernelOps: ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpSilu, ugraph.OpAdd, ugraph.OpMul, ugraph.OpDiv),
		BlockOps: slices.Concat(
			ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpSilu, ugraph.OpAdd, ugraph.OpMul, ugraph.OpDiv),
			accums(ugraph.AccumNone, ugraph.AccumSum, ugraph.AccumMean, ugraph.AccumSumToDimx)),
		MaxKernelOps: 5, MaxCustomized: 1, MaxBlockOps: 9, MaxBlockInputs: 3, MaxBlockOutputs: 2,
		FRanges: []int{4, 16, 64}, ReductionDimx: 64,
	},
	"mlp": {
		KernelOps: ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpDiv, ugraph.OpAdd, ugraph.OpMul, ugraph.OpSilu),
		BlockOps: slices.Concat(
			ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpDiv, ugraph.OpSilu, ugraph.OpMul, ugraph.OpAdd),
			accums(ugraph.AccumNone)),
		MaxKernelOps: 5, MaxCustomized: 1, MaxBlockOps: 9, MaxBlockInputs: 3, MaxBlockOutputs: 2,
		FRanges: []int{4, 16, 64}, ReductionDimx: 64,
	},
	"attention": {
		KernelOps: slices.Concat(ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpDiv), reductions(ugraph.OpReduction, 0, 1, 2)),
		BlockOps: slices.Concat(
			ops(ugraph.OpMatmul, ugraph.OpExp, ugraph.OpDiv),
			accums(ugraph.AccumNone, ugraph.AccumSum, ugraph.AccumSumToDimx)),
		MaxKernelOps: 5, MaxCustomized: 2, MaxBlockOps: 10, MaxBlockInputs: 3, MaxBlockOutputs: 2,
		FRanges: []int{4, 8}, ReductionDimx: 64,
	},
	"lora": {
		KernelOps: slices.Concat(ops(ugraph.OpMatmul), reductions(ugraph.OpReduction, 1)),
		BlockOps: slices.Concat(
			ops(ugraph.OpMatmul),
			reductions(ugraph.OpReduction, 1), reductions(ugraph.OpReductionToDimx, 1),
			ops(ugraph.OpConcat), accums(ugraph.AccumNone)),
		MaxKernelOps: 5, MaxCustomized: 1, MaxBlockOps: 9, MaxBlockInputs: 4, MaxBlockOutputs: 1,
		FRanges: []int{2, 4}, ReductionDimx: 64,
	},
}

// ConfigNames lists the named configurations.
func ConfigNames() []string {
	names := make([]string, 0, len(namedConfigs))
	for n := range namedConfigs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NamedConfig returns a copy of the named configuration ("" is "default").
func NamedConfig(name string) (Config, error) {
	if name == "" {
		name = "default"
	}
	c, ok := namedConfigs[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown config %q (want one of %s)", name, strings.Join(ConfigNames(), ", "))
	}
	c.Name = name
	c.KernelOps = slices.Clone(c.KernelOps)
	c.BlockOps = slices.Clone(c.BlockOps)
	c.FRanges = slices.Clone(c.FRanges)
	return c, nil
}

// defaultStages are the pipeline depths the cost model chooses among: the
// plan's default (the deepest of thread.DefaultStages that fits); the
// shallower 2 and 3 (Mirage tunes 2, 3 and 4 on Hopper), whose smaller
// footprint lets more blocks share an SM; and 6, more tiles in flight for
// a kernel of few warps that waits on memory.
var defaultStages = []int{0, 2, 3, 6}

// Restrictions are candidate lists that replace a configuration's: what a
// program passes to superoptimize (Mirage's griddims, blockdims, imaps,
// omaps, fmaps, franges). A nil list leaves the configuration's.
type Restrictions struct {
	Grids, Threads []block.Dim3
	IMaps, OMaps   []block.Map
	FMaps, FRanges []int
}

// Restrict replaces c's candidate lists with r's non-nil ones.
func (c *Config) Restrict(r Restrictions) {
	c.fixedRanges = c.fixedRanges || r.FRanges != nil
	restrict(&c.restricted.Grids, r.Grids)
	restrict(&c.restricted.Threads, r.Threads)
	restrict(&c.restricted.IMaps, r.IMaps)
	restrict(&c.restricted.OMaps, r.OMaps)
	restrict(&c.restricted.FMaps, r.FMaps)
	restrict(&c.restricted.FRanges, r.FRanges)
	restrict(&c.Grids, r.Grids)
	restrict(&c.Threads, r.Threads)
	restrict(&c.IMaps, r.IMaps)
	restrict(&c.OMaps, r.OMaps)
	restrict(&c.FMaps, r.FMaps)
	restrict(&c.FRanges, r.FRanges)
}

func restrict[T any](list *[]T, r []T) {
	if r != nil {
		*list = slices.Clone(r)
	}
}

// Complete adds to c what the program itself calls for and derives the
// candidate lists left empty from the program's shapes:
//
//   - Op sets gain the operators the program uses (at kernel level) and
//     their threadblock counterparts (rms_norm brings itself, the rms
//     accumulator and div; reduction the sum accumulators), so that a program is
//     never out of reach of its own operators.
//   - Grids: (x, y, 1) with x one block per batch entry (the leading dim of
//     a tensor of rank >= 3), per 64- or 128-wide tile of an output dim,
//     per one or two rows of a short output dim (at most maxRowsDim: the
//     tokens of a decode step), or, Mirage's rule, per tile of 8 to 256
//     along any dim of an input (32 to maxBlocks blocks), and y from gridY;
//     at most maxBlocks blocks. With several graph-defined kernels
//     (the attention presets), Mirage's attention grids instead
//     (attentionGrids).
//     Mirage's hand-picked lists ((16, 1, 1), (16, 2, 1), (64, 1, 1)) are
//     of this kind, and this adapts them to the program's shapes.
//   - For-loop ranges: besides the configuration's own, for every dim that
//     none of them cuts into tiles of at most 128, the ranges that cut it
//     into tiles of 64 and 128 (deriveRanges): a real model's K of 4096 or
//     11008 in tiles that fit shared memory. With two graph-defined
//     kernels, a grid may split a reduced dim first (the partial sums of
//     attention), by up to the largest of gridY.
//   - Imaps and omaps: every map that sends x and y to distinct dims below
//     the maximal rank (or to none); the shapes prune the rest.
//   - Fmaps: -1 and every dim below the maximal rank.
//   - Threads: 128 (4 warps, Mirage's default), 256 and 512. The
//     enumeration builds every block graph with the first; the others
//     compute the same, and the cost model picks among them for the
//     best-ranked complete candidates and the seeds (sizeAll).
//   - Stages: defaultStages, chosen the same way.
func (c *Config) Complete(program *kernel.Graph) {
	for _, op := range program.Ops {
		c.KernelOps = addOp(c.KernelOps, kernelChoice(op))
		for _, bc := range blockCounterparts(op) {
			c.BlockOps = addOp(c.BlockOps, bc)
		}
	}
	rank := 0
	for _, t := range program.Tensors {
		rank = max(rank, t.Shape.Rank())
	}
	if len(c.Grids) == 0 {
		c.Grids = deriveGrids(program, c.MaxCustomized > 1)
	}
	if !c.fixedRanges {
		split := 1
		if c.MaxCustomized > 1 {
			split = slices.Max(gridY)
		}
		c.FRanges = deriveRanges(program, c.FRanges, split)
	}
	if len(c.Threads) == 0 {
		c.Threads = []block.Dim3{{128, 1, 1}, {256, 1, 1}, {512, 1, 1}}
	}
	if len(c.Stages) == 0 {
		c.Stages = slices.Clone(defaultStages)
	}
	zMaps := c.MaxCustomized > 1 && rank >= 3 // for (batch, 16, 4)
	if len(c.IMaps) == 0 {
		c.IMaps = allMaps(rank)
		if zMaps {
			c.IMaps = append(c.IMaps, attentionZIMaps...)
		}
	}
	if len(c.OMaps) == 0 {
		c.OMaps = allMaps(rank)
		if zMaps {
			c.OMaps = append(c.OMaps, attentionZOMaps...)
		}
	}
	if len(c.FMaps) == 0 {
		c.FMaps = []int{-1}
		for d := range rank {
			c.FMaps = append(c.FMaps, d)
		}
	}
	if c.ReductionDimx == 0 {
		c.ReductionDimx = 64
	}
	if c.Arch.Name == "" {
		c.Arch = target.MustLookup(target.Default)
	}
}

func addOp(cs []OpChoice, c OpChoice) []OpChoice {
	if c.Kind == ugraph.OpInvalid || slices.Contains(cs, c) {
		return cs
	}
	return append(cs, c)
}

// kernelChoice is the choice that recreates a program op at kernel level.
func kernelChoice(op kernel.Op) OpChoice {
	switch op.Kind {
	case ugraph.OpInput, ugraph.OpCustomized:
		return OpChoice{}
	}
	return OpChoice{Kind: op.Kind, Attr: op.Attr}
}

// blockCounterparts are the threadblock operators through which a kernel
// operator's computation can be fused.
func blockCounterparts(op kernel.Op) []OpChoice {
	switch op.Kind {
	case ugraph.OpInput, ugraph.OpCustomized:
		return nil
	case ugraph.OpMatmul:
		return slices.Concat(ops(ugraph.OpMatmul), accums(ugraph.AccumNone))
	case ugraph.OpReduction:
		return accums(ugraph.AccumNone, ugraph.AccumSum, ugraph.AccumSumToDimx)
	case ugraph.OpRMSNorm:
		// Over a whole row in one tile, or accumulated over the for-loop.
		return slices.Concat(ops(ugraph.OpRMSNorm, ugraph.OpDiv), accums(ugraph.AccumRMS))
	}
	if op.Kind.AllowedAt(ugraph.LevelBlock) {
		return []OpChoice{{Kind: op.Kind, Attr: op.Attr}}
	}
	return nil
}

// deriveGrids returns the grids described at Complete, in a fixed order.
func deriveGrids(program *kernel.Graph, attention bool) []block.Dim3 {
	// Mirage's rule: one block per tile of 8 to 256 along any dim of an
	// input, from 32 to 1024 blocks.
	tiles := map[int]bool{}
	for _, in := range program.Inputs() {
		for _, n := range program.Tensors[in].Shape.Dims() {
			for tile := minGridTile; tile <= maxGridTile; tile *= 2 {
				if x := n / tile; n%tile == 0 && x >= minTiledGrid && x <= maxBlocks {
					tiles[x] = true
				}
			}
		}
	}
	if attention {
		return attentionGrids(program, tiles)
	}
	xs := tiles
	for _, t := range program.Tensors {
		if s := t.Shape; s.Rank() >= 3 && s.Dim(0) > 1 && s.Dim(0) <= 64 {
			xs[s.Dim(0)] = true // a batch dim: one block (column) per batch entry
		}
	}
	for _, o := range program.Outputs {
		s := program.Tensors[o].Shape
		for d := range s.Rank() {
			n := s.Dim(d)
			for _, tile := range []int{64, 128} {
				if n%tile == 0 && n/tile > 1 {
					xs[n/tile] = true // one block per output tile
				}
			}
			if n > 1 && n <= maxRowsDim {
				xs[n] = true // one block per row
				if n%2 == 0 && n > 2 {
					xs[n/2] = true // per two rows
				}
			}
		}
	}
	var grids []block.Dim3
	for _, x := range slices.Sorted(maps.Keys(xs)) {
		for _, y := range gridY {
			if x*y <= maxBlocks {
				grids = append(grids, block.Dim3{x, y, 1})
			}
		}
	}
	return grids
}

// attentionGrids returns the grids of the attention presets: Mirage's
// (dim_strategy.cc, with its attention optimization on), with y of gridY
// beside Mirage's (batch, 1, 1). For each batch b, the leading dim (above
// 1) of an input of rank 2 or 3: (b, y, 1) for y of gridY (the splits of
// the keys that flash-decoding seeds use), and (b, n/y, 1) for every dim
// n of an input and y of attentionY; then (x, 1, 1) for each of Mirage's
// tile extents x; then, for programs of more than two inputs, (b, 16, 4),
// whose z axis only attentionZIMaps and attentionZOMaps split. All have
// from minTiledGrid (but (b, y, 1)) to maxBlocks blocks.
//
// These replace the grids that Complete derives from the outputs for one
// kernel: with those too, qknorm_gqa's whole search took 74 s (the
// search-space issue's bound is 60 s); with these, 40 s (without
// (b, 16, 4); 15% more states with it), and the best estimate of no
// attention program (gqa, qknorm_gqa, decode attention at LLaMA-7B's 32
// heads and 4096 keys, QK-norm with K's norm written out) got worse; gqa's
// improved with (b, 16, 4), the grid of Mirage's own gqa μGraph.
func attentionGrids(program *kernel.Graph, tiles map[int]bool) []block.Dim3 {
	batches := map[int]bool{}
	for _, in := range program.Inputs() {
		if s := program.Tensors[in].Shape; (s.Rank() == 2 || s.Rank() == 3) && s.Dim(0) > 1 {
			batches[s.Dim(0)] = true
		}
	}
	var grids []block.Dim3
	add := func(g block.Dim3) {
		if !slices.Contains(grids, g) {
			grids = append(grids, g)
		}
	}
	for _, b := range slices.Sorted(maps.Keys(batches)) {
		for _, y := range gridY {
			if b*y <= maxBlocks {
				add(block.Dim3{b, y, 1})
			}
		}
		for _, y := range attentionY {
			for _, in := range program.Inputs() {
				for _, n := range program.Tensors[in].Shape.Dims() {
					if blocks := b * (n / y); n%y == 0 && blocks >= minTiledGrid && blocks <= maxBlocks {
						add(block.Dim3{b, n / y, 1})
					}
				}
			}
		}
	}
	for _, x := range slices.Sorted(maps.Keys(tiles)) {
		add(block.Dim3{x, 1, 1})
	}
	if len(program.Inputs()) > 2 {
		for _, b := range slices.Sorted(maps.Keys(batches)) {
			if b*16*4 <= maxBlocks {
				add(block.Dim3{b, 16, 4})
			}
		}
	}
	return grids
}

// The maps of Mirage's attention that split grid axis z, which only
// (batch, 16, 4) has: a query's rows along z, its keys along y (dim_strategy.cc).
// The others of its attention maps are among allMaps'. Searched alone
// beside allMaps': all maps onto z besides took qknorm_gqa's search from
// 19.4 M states to 24.2 M, these to 22.3 M, to the same best answers.
var (
	attentionZIMaps = []block.Map{{0, -1, 1}}
	attentionZOMaps = []block.Map{{0, 2, 1}, {-1, 2, 1}}
)

// attentionY are the tiles along a dim that Mirage's attention grids
// (batch, n/y, 1) cut.
var attentionY = []int{8, 64, 128, 256}

// maxRowsDim bounds the output dims that a grid may split row by row: the
// tokens of a decode step, or a few heads.
const maxRowsDim = 32

// Mirage's grids (src/search/config.cc): x = n / tile for every dim n of
// a kernel's inputs and tiles from minGridTile to maxGridTile, with at
// least minTiledGrid blocks.
const (
	minGridTile  = 8
	maxGridTile  = 256
	minTiledGrid = 32
)

// maxTile is the largest tile along a walked dim that a for-loop range
// must offer: larger ones do not fit shared memory beside the other
// operands' tiles at a real model's widths.
const maxTile = 128

// deriveRanges returns ranges with, besides those given, for each dim of
// the program's tensors that none of them cuts into tiles of at most
// maxTile (after a grid split of split, where that divides it), the ranges
// that cut it into tiles of 64 and 128 (those that divide it), sorted. The
// given ranges are presets' (Mirage's lists, which suit its benchmark
// shapes); a real model's K of 4096 or 11008 needs more.
func deriveRanges(program *kernel.Graph, given []int, split int) []int {
	ranges := slices.Clone(given)
	cuts := func(n int) bool {
		if n%split == 0 {
			n /= split
		}
		return slices.ContainsFunc(ranges, func(f int) bool { return n%f == 0 && n/f <= maxTile })
	}
	for _, t := range program.Tensors {
		for _, n := range t.Shape.Dims() {
			if n <= maxTile || cuts(n) {
				continue
			}
			for _, tile := range []int{64, 128} {
				if n%tile == 0 && !slices.Contains(ranges, n/tile) {
					ranges = append(ranges, n/tile)
				}
			}
		}
	}
	slices.Sort(ranges)
	return ranges
}

// gridY are the extents tried along the grid's y axis: a second split of
// the work (Mirage's (16, 2, 1)), up to the 16 slices of a split-K or
// flash-decoding kernel.
var gridY = []int{1, 2, 4, 8, 16}

// maxBlocks bounds the blocks of a derived grid: eight waves on the
// largest GPUs we target is more than a fused kernel wants.
const maxBlocks = 1024

// allMaps returns every map sending x and y to distinct dims below rank
// or to none, and z to none.
func allMaps(rank int) []block.Map {
	var ms []block.Map
	for x := -1; x < rank; x++ {
		for y := -1; y < rank; y++ {
			if x >= 0 && x == y {
				continue
			}
			ms = append(ms, block.Map{x, y, -1})
		}
	}
	return ms
}

// Validate checks that c can drive a search.
func (c *Config) Validate() error {
	switch {
	case c.MaxKernelOps < 1, c.MaxBlockOps < 1, c.MaxBlockInputs < 1, c.MaxBlockOutputs < 1, c.MaxCustomized < 0:
		return fmt.Errorf("config %q: size limits must be positive", c.Name)
	case c.ReductionDimx < 1:
		return fmt.Errorf("config %q: reduction_dimx %d", c.Name, c.ReductionDimx)
	}
	for _, f := range c.FRanges {
		if f < 1 {
			return fmt.Errorf("config %q: forloop range %d", c.Name, f)
		}
	}
	for _, op := range c.KernelOps {
		if !op.Kind.AllowedAt(ugraph.LevelKernel) || op.Kind.Info().Class == ugraph.ClassIO || op.Kind == ugraph.OpCustomized {
			return fmt.Errorf("config %q: %v is not a pre-defined kernel op", c.Name, op)
		}
	}
	for _, op := range c.BlockOps {
		if !op.Kind.AllowedAt(ugraph.LevelBlock) || op.Kind.Info().Class == ugraph.ClassIO {
			return fmt.Errorf("config %q: %v is not a threadblock op", c.Name, op)
		}
	}
	for _, g := range c.Grids {
		if _, err := block.New(g, block.Dim3{1, 1, 1}, 1, 1); err != nil {
			return fmt.Errorf("config %q: %v", c.Name, err)
		}
	}
	var b block.Graph
	for _, n := range c.Stages {
		if err := b.SetStages(n); err != nil {
			return fmt.Errorf("config %q: %v", c.Name, err)
		}
	}
	return nil
}

// admits reports whether every graph-defined kernel of g keeps to the
// lists the program fixed (Restrict): its grid, block size, maps and
// for-loop range (one iteration always, as for the enumeration when no
// input is walked). The seeds are built by rule, not from the lists.
func (c *Config) admits(g *kernel.Graph) bool {
	r := c.restricted
	in := func(list []int, v int) bool { return list == nil || slices.Contains(list, v) }
	for _, op := range g.Ops {
		b := op.Block
		if b == nil {
			continue
		}
		if r.Grids != nil && !slices.Contains(r.Grids, b.Grid) || r.Threads != nil && !slices.Contains(r.Threads, b.Threads) ||
			b.ForloopRange > 1 && !in(r.FRanges, b.ForloopRange) {
			return false
		}
		for _, bop := range b.Ops {
			switch {
			case bop.Kind == ugraph.OpInput && (r.IMaps != nil && !slices.Contains(r.IMaps, bop.Input.IMap) || !in(r.FMaps, bop.Input.FMap)):
				return false
			case bop.Kind == ugraph.OpOutput && r.OMaps != nil && !slices.Contains(r.OMaps, bop.Output.OMap):
				return false
			}
		}
	}
	return true
}
