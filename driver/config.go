package driver

import (
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// limitsFor returns the limits of the parts the driver cuts g into: those
// of the named preset, or of the preset each run of ops calls for.
func limitsFor(g *kernel.Graph, preset string) (func(ops []int) Limits, error) {
	if preset != "" {
		cfg, err := search.NamedConfig(preset)
		if err != nil {
			return nil, err
		}
		lim := limitsOf(cfg)
		return func([]int) Limits { return lim }, nil
	}
	return func(ops []int) Limits {
		cfg, err := search.NamedConfig(presetFor(g, ops))
		if err != nil {
			panic(err) // presetFor names presets that exist
		}
		return limitsOf(cfg)
	}, nil
}

// limitsOf are the parts a preset's searches take: each of its
// graph-defined kernels holds MaxBlockOps threadblock ops, and a part may
// estimate two more (blockCost estimates; a search's time grows steeply
// with the limit, so it stays the preset's). The ops of one
// part are few: a search's time grows steeply with them (QKNorm+GQA's seven
// take minutes), and a part that does not fuse costs the whole part.
func limitsOf(cfg search.Config) Limits {
	ops := 6
	if cfg.MaxCustomized > 1 {
		ops = 7
	}
	return Limits{
		Ops:      ops,
		BlockOps: (cfg.MaxBlockOps + 2) * max(1, cfg.MaxCustomized),
		Inputs:   min(cfg.MaxBlockInputs, search.MaxKernelInputs),
		Outputs:  min(max(cfg.MaxBlockOutputs, 2), search.MaxKernelOutputs),
	}
}

// presetFor names the preset whose operators and limits suit ops of g
// when the program names none: attention for a softmax (exp, and a
// reduction or a division) next to a matmul, which wants two graph-defined
// kernels (the partial sums, then their combination); lora for a concat;
// mlp for matmuls with element-wise ops and norms; default for the rest
// (reductions and element-wise chains, whose accumulators mlp lacks).
func presetFor(g *kernel.Graph, ops []int) string {
	has := map[ugraph.OpKind]bool{}
	for _, i := range ops {
		has[g.Ops[i].Kind] = true
	}
	switch {
	case has[ugraph.OpMatmul] && has[ugraph.OpExp] && (has[ugraph.OpReduction] || has[ugraph.OpDiv]):
		return "attention"
	case has[ugraph.OpConcat]:
		return "lora"
	case has[ugraph.OpMatmul] && !has[ugraph.OpReduction]:
		return "mlp" // rms_norm brings its accumulator along (search.Config.Complete)
	}
	return "default"
}

// partConfig returns the configuration a part (pg, its program) is
// searched with: the preset named, or the one its ops call for, with the
// size limits raised to hold the part's inputs and outputs in one
// graph-defined kernel (and kernel ops for them and the kernels), the
// program's restrictions, and arch. Grids and for-loop ranges are derived
// from the part's shapes when the search completes the configuration.
func partConfig(pg *kernel.Graph, preset string, r search.Restrictions, arch target.Arch) (search.Config, error) {
	if preset == "" {
		preset = presetFor(pg, computeOps(pg))
	}
	cfg, err := search.NamedConfig(preset)
	if err != nil {
		return cfg, err
	}
	ins, outs := len(pg.Inputs()), len(pg.Outputs)
	cfg.MaxBlockInputs = min(max(cfg.MaxBlockInputs, ins), search.MaxKernelInputs)
	cfg.MaxBlockOutputs = min(max(cfg.MaxBlockOutputs, outs), search.MaxKernelOutputs)
	cfg.MaxKernelOps = max(cfg.MaxKernelOps, ins+max(cfg.MaxCustomized, 1))
	cfg.Restrict(r)
	cfg.Arch = arch
	return cfg, nil
}
