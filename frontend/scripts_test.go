package frontend

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

// scriptsDir holds programs in the style of Mirage's benchmark and demo
// scripts, one for each thing they do that a hermetic loader did not take
// (testdata/scripts/README.md).
var scriptsDir = filepath.Join("testdata", "scripts")

// TestScripts loads each script as a user would, without options (and
// with the arguments a test gives after --): its graph is the one the
// script builds, and the load warns at most twice, once for the stubbed
// modules and once for the Mirage runtime calls it ignored.
func TestScripts(t *testing.T) {
	s := ugraph.MustShape
	tests := []struct {
		file   string
		args   []string
		inputs []ugraph.Shape
		ops    int    // ops besides the inputs
		config string // superoptimize(config=...)
		noted  string // a name the ignored-calls note gives; "" for no note
	}{
		{"rmsnorm_args.py", nil, []ugraph.Shape{s(2, 4096), s(4096, 128)}, 2, "mlp", "superoptimize(previous_checkpoint=)"},
		{"rmsnorm_args.py", []string{"--bs", "8"}, []ugraph.Shape{s(16, 4096), s(4096, 128)}, 2, "mlp", "superoptimize(save_codes=)"},
		{"rmsnorm_args.py", []string{"--bs=4", "--hidden", "1024", "--out-features=64", "--save_codes"}, []ugraph.Shape{s(8, 1024), s(1024, 64)}, 2, "mlp", ""},
		{"gpu_device.py", nil, []ugraph.Shape{s(1, 256), s(256, 128)}, 2, "mlp", "mirage.set_gpu_device_id"},
		{"torch_timing.py", nil, []ugraph.Shape{s(8, 64), s(64, 64), s(64, 64)}, 4, "mlp", "superoptimize(warmup_iters=)"},
		{"call_graph.py", nil, []ugraph.Shape{s(2, 16, 32), s(2, 32, 64), s(2, 64, 32)}, 5, "attention", ""},
		{"generate_cuda.py", nil, []ugraph.Shape{s(16, 512), s(512, 256)}, 1, "", "mirage.generate_cuda_program"},
		{"visualize.py", nil, []ugraph.Shape{s(16, 64), s(64, 128), s(64, 8), s(8, 128)}, 4, "lora", "graph.visualize"},
		{"decorators.py", nil, []ugraph.Shape{s(8, 64), s(64, 64), s(64, 64)}, 4, "mlp", ""},
		{"asserts.py", nil, []ugraph.Shape{s(16, 128), s(128, 64)}, 2, "mlp", ""},
		{"main_guard.py", nil, []ugraph.Shape{s(8, 256), s(8, 256), s(8, 256)}, 5, "", "superoptimize(previous_checkpoint=)"},
		{"main_guard.py", []string{"-b", "2", "--checkpoint", "ntrans.json"}, []ugraph.Shape{s(2, 256), s(2, 256), s(2, 256)}, 5, "", ""},
		{"first_api.py", nil, []ugraph.Shape{s(8, 64), s(64, 128), s(64, 8), s(8, 128)}, 3, "lora", "graph.generate_triton_program"},
		{"first_api.py", []string{"--checkpoint", "lora.json", "--out-dir", "out"}, []ugraph.Shape{s(8, 64), s(64, 128), s(64, 8), s(8, 128)}, 3, "", "optimize(previous_checkpoint=)"},
		{"moe.py", nil, []ugraph.Shape{s(8, 8, 4096), s(8, 4096, 4096), s(8, 4096, 4096)}, 3, "", "superoptimize(backend=)"},
		{"moe.py", []string{"--experts", "2", "--hidden", "64"}, []ugraph.Shape{s(2, 8, 64), s(2, 64, 64), s(2, 64, 64)}, 3, "", ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		p, err := LoadFile(filepath.Join(scriptsDir, tt.file), Options{Args: tt.args, Stdout: &out})
		if err != nil {
			t.Errorf("%s %q: %v", tt.file, tt.args, err)
			continue
		}
		var inputs []ugraph.Shape
		for _, id := range p.Graph.Inputs() {
			inputs = append(inputs, p.Graph.Tensors[id].Shape)
		}
		if !slices.Equal(inputs, tt.inputs) || len(p.Graph.Ops)-len(inputs) != tt.ops {
			t.Errorf("%s %q: inputs %v and %d ops, want %v and %d", tt.file, tt.args, inputs, len(p.Graph.Ops)-len(inputs), tt.inputs, tt.ops)
		}
		config := ""
		if p.Superopt != nil {
			config = p.Superopt.Config
		}
		if config != tt.config {
			t.Errorf("%s: config %q, want %q", tt.file, config, tt.config)
		}
		if len(p.Warnings) < 1 || len(p.Warnings) > 2 || !strings.Contains(p.Warnings[0], " stub") {
			t.Errorf("%s: warnings %q, want the stubs' and at most one note", tt.file, p.Warnings)
		}
		if tt.noted != "" && (len(p.Warnings) != 2 || !strings.Contains(p.Warnings[1], tt.noted)) {
			t.Errorf("%s: warnings %q, want a note naming %s", tt.file, p.Warnings, tt.noted)
		}
	}
}
