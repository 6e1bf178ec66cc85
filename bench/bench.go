// Package bench is mirage's regression suite: the workloads of the Mirage
// paper as programs with the paper's shapes, and the report 'mirage bench'
// writes of a search over each (a markdown table and an SVG bar chart).
//
// Workload programs live in bench/workloads and, for the three that are
// also the project's examples, in examples/; both are embedded.
package bench

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"github.com/mirage-go/mirage/examples"
)

//go:embed workloads/*.py
var workloadFS embed.FS

// Workload is one program of the suite.
type Workload struct {
	Name   string // short name, e.g. "rmsnorm_matmul"
	Title  string // what it is, for reports
	File   string // where it lives in the repository
	Source []byte
}

// suite lists the workloads in report order: the Mirage paper's (OSDI'25,
// §7) GQA decode, QKNorm+GQA, RMSNorm+MatMul, LoRA, gated MLP and nTrans,
// then whole programs at real model shapes, which superopt cuts into
// parts.
var suite = []struct {
	name, title string
	fsys        fs.FS
	dir         string
}{
	{"gqa", "GQA decode (Q 2x256x64, KV 4096)", examples.FS, "examples"},
	{"qknorm_gqa", "QKNorm + GQA", workloadFS, "bench/workloads"},
	{"rmsnorm_matmul", "RMSNorm + MatMul (16x4096 @ 4096x6144)", examples.FS, "examples"},
	{"lora", "LoRA (16x256 @ 256x4096, rank 16)", workloadFS, "bench/workloads"},
	{"gated_mlp", "Gated MLP (8x4096 @ 4096x4096 x2)", examples.FS, "examples"},
	{"ntrans", "nTrans (32x4096)", workloadFS, "bench/workloads"},
	{"llama_mlp_block", "LLaMA-7B MLP block, decode (8x4096, MLP 11008)", examples.FS, "examples"},
	{"stacked_layers", "Three stacked norm-matmul-silu-residual layers (8x4096)", examples.FS, "examples"},
}

// Workloads returns the suite, in report order.
func Workloads() ([]Workload, error) {
	ws := make([]Workload, len(suite))
	for i, s := range suite {
		name := s.name + ".py"
		if s.fsys == workloadFS {
			name = path.Join("workloads", name)
		}
		src, err := fs.ReadFile(s.fsys, name)
		if err != nil {
			return nil, fmt.Errorf("bench: workload %s: %v", s.name, err)
		}
		ws[i] = Workload{Name: s.name, Title: s.title, File: path.Join(s.dir, s.name+".py"), Source: src}
	}
	return ws, nil
}
