package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

func TestNamedConfigs(t *testing.T) {
	for _, name := range append(ConfigNames(), "") {
		c, err := NamedConfig(name)
		if err != nil {
			t.Fatalf("NamedConfig(%q): %v", name, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("config %q: %v", name, err)
		}
	}
	if _, err := NamedConfig("fast"); err == nil || !strings.Contains(err.Error(), "attention, default, lora, mlp") {
		t.Errorf("unknown config: %v", err)
	}
	// NamedConfig returns copies: changing one leaves the table alone.
	a, _ := NamedConfig("mlp")
	a.BlockOps[0] = OpChoice{Kind: ugraph.OpGelu}
	b, _ := NamedConfig("mlp")
	if b.BlockOps[0].Kind != ugraph.OpMatmul {
		t.Error("NamedConfig shares its slices")
	}
}

// TestComplete: the program's own operators join the op sets, with their
// threadblock counterparts; empty candidate lists are derived.
func TestComplete(t *testing.T) {
	p := load(t, "rmsnorm_matmul.py")
	c, _ := NamedConfig("mlp")
	c.Complete(p.Graph)
	if !slices.Contains(c.KernelOps, OpChoice{Kind: ugraph.OpRMSNorm, Attr: ugraph.Attr{Dim: 1}}) {
		t.Errorf("kernel ops lack the program's rms_norm: %v", c.KernelOps)
	}
	if !slices.Contains(c.BlockOps, OpChoice{Kind: ugraph.OpForloopAccum, Attr: ugraph.Attr{Accum: ugraph.AccumRMS}}) {
		t.Errorf("block ops lack the rms accumulator: %v", c.BlockOps)
	}
	// One block per 64- and 128-wide tile of the 6144 output columns.
	for _, g := range []block.Dim3{{96, 1, 1}, {48, 1, 1}, {96, 2, 1}} {
		if !slices.Contains(c.Grids, g) {
			t.Errorf("grids %v lack %v", c.Grids, g)
		}
	}
	for _, g := range c.Grids {
		if g.Count() > maxBlocks {
			t.Errorf("grid %v has more than %d blocks", g, maxBlocks)
		}
	}
	// Built at Mirage's 128 threads, sized after at 128, 256 or 512.
	if want := []block.Dim3{{128, 1, 1}, {256, 1, 1}, {512, 1, 1}}; !slices.Equal(c.Threads, want) {
		t.Errorf("threads %v, want %v", c.Threads, want)
	}
	if !slices.Equal(c.FMaps, []int{-1, 0, 1}) || len(c.IMaps) != 7 {
		t.Errorf("fmaps %v, %d imaps", c.FMaps, len(c.IMaps))
	}
	// Batch dims of rank-3 tensors give grid x extents.
	q := load(t, "gqa.py")
	c, _ = NamedConfig("attention")
	c.Complete(q.Graph)
	if !slices.Contains(c.Grids, block.Dim3{2, 16, 1}) {
		t.Errorf("attention grids %v lack (2, 16, 1)", c.Grids)
	}
}

func TestRestrict(t *testing.T) {
	c, _ := NamedConfig("mlp")
	c.Restrict(Restrictions{
		Grids: []block.Dim3{{16, 1, 1}}, IMaps: []block.Map{{0, -1, -1}}, FRanges: []int{8},
	})
	if len(c.Grids) != 1 || len(c.IMaps) != 1 || !slices.Equal(c.FRanges, []int{8}) {
		t.Errorf("restrictions not applied: %+v", c)
	}
	c.Restrict(Restrictions{}) // nil lists leave the config alone
	if len(c.Grids) != 1 || len(c.FRanges) != 1 {
		t.Error("a nil list cleared a list")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		err    string
	}{
		{func(c *Config) { c.MaxBlockOps = 0 }, "size limits"},
		{func(c *Config) { c.FRanges = []int{0} }, "forloop range 0"},
		{func(c *Config) { c.KernelOps = append(c.KernelOps, OpChoice{Kind: ugraph.OpConcat}) }, "concat(dim 0) is not a pre-defined kernel op"},
		{func(c *Config) { c.Stages = []int{0, 9} }, "stages 9, want 0 (the default) to 8"},
		{func(c *Config) { c.BlockOps = append(c.BlockOps, OpChoice{Kind: ugraph.OpCustomized}) }, "not a threadblock op"},
		{func(c *Config) { c.Grids = []block.Dim3{{0, 1, 1}} }, "grid_dim"},
	}
	for _, tt := range tests {
		c, _ := NamedConfig("default")
		tt.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("error %v, want %q", err, tt.err)
		}
	}
}

// Mirage's grid rule (dim_strategy.cc): x = n/t for every dim n of an
// input and tiles t from 8 to 256, 32 <= x <= 1024. Searches of one
// graph-defined kernel get (x, y, 1) for every y of gridY; the attention
// presets Mirage's attention grids: (x, 1, 1), and per batch b (the inputs'
// leading dim) (b, n/y, 1) for y of 8, 64, 128 and 256, and (b, y, 1) for
// y of gridY; nothing else.
func TestCompleteCoversMiragesGrids(t *testing.T) {
	mirage := func(dims ...int) []int {
		var xs []int
		for _, n := range dims {
			for tile := 8; tile <= 256; tile *= 2 {
				if x := n / tile; n%tile == 0 && x >= 32 && x <= 1024 && !slices.Contains(xs, x) {
					xs = append(xs, x)
				}
			}
		}
		return xs
	}
	for _, tt := range []struct {
		example, config string
		xs              []int        // the rule's extents for the example's inputs
		batch           int          // attention: the inputs' leading dim
		twoD            []block.Dim3 // attention: Mirage's (batch, n/y, 1)
	}{
		{"rmsnorm_matmul.py", "mlp", mirage(16, 4096, 6144), 0, nil}, // 32 to 768
		{"gated_mlp.py", "mlp", mirage(8, 4096), 0, nil},             // 32 to 512
		// Inputs [2, 256, 64], [2, 64, 4096], [2, 4096, 64]: 256/8, 4096/8,
		// 4096/64, 4096/128, 4096/256 (2·8 = 16 blocks are too few).
		{"gqa.py", "attention", mirage(2, 256, 64, 4096), 2, []block.Dim3{{2, 32, 1}, {2, 512, 1}, {2, 64, 1}, {2, 16, 1}}},
	} {
		c, _ := NamedConfig(tt.config)
		c.Complete(load(t, tt.example).Graph)
		for _, x := range tt.xs {
			if !slices.Contains(c.Grids, block.Dim3{x, 1, 1}) {
				t.Errorf("%s: grids %v lack (%d, 1, 1)", tt.example, c.Grids, x)
			}
			if tt.config == "mlp" && !slices.Contains(c.Grids, block.Dim3{x, 2, 1}) && 2*x <= 1024 {
				t.Errorf("%s: grids %v lack (%d, 2, 1)", tt.example, c.Grids, x)
			}
		}
		if tt.config != "attention" {
			continue
		}
		for _, g := range tt.twoD {
			if !slices.Contains(c.Grids, g) {
				t.Errorf("%s: grids %v lack Mirage's attention grid %v", tt.example, c.Grids, g)
			}
		}
		for _, y := range []int{1, 2, 4, 8, 16} {
			if !slices.Contains(c.Grids, block.Dim3{tt.batch, y, 1}) {
				t.Errorf("%s: grids %v lack (%d, %d, 1)", tt.example, c.Grids, tt.batch, y)
			}
		}
		// (batch, 16, 4) and the maps that split its z axis as Mirage's
		// attention does.
		z := block.Dim3{tt.batch, 16, 4}
		if !slices.Contains(c.Grids, z) {
			t.Errorf("%s: grids %v lack %v", tt.example, c.Grids, z)
		}
		if !slices.Contains(c.IMaps, block.Map{0, -1, 1}) || !slices.Contains(c.OMaps, block.Map{0, 2, 1}) || !slices.Contains(c.OMaps, block.Map{-1, 2, 1}) {
			t.Errorf("%s: maps lack Mirage's onto z: imaps %v, omaps %v", tt.example, c.IMaps, c.OMaps)
		}
		for _, g := range c.Grids {
			if g == z {
				continue
			}
			if g[2] != 1 || (g[0] != tt.batch && (g[1] != 1 || !slices.Contains(tt.xs, g[0]))) {
				t.Errorf("%s: grid %v is none of the rule's", tt.example, g)
			}
			if g[0] == tt.batch && g[1] > 16 && !slices.Contains(tt.twoD, g) {
				t.Errorf("%s: grid %v is none of the rule's", tt.example, g)
			}
		}
	}
}
