// Package bench is mirage's regression suite: the workloads of the Mirage
// paper as programs with the paper's shapes and a team's own programs, the
// report 'mirage bench' writes of a search over each (a markdown table and
// an SVG bar chart), the results file and history a run leaves, and the
// comparison of a run with a stored baseline that decides whether
// anything got worse. Suite is a run of it, as mirage bench's flags give
// one: it checks everything before searching, runs each workload as
// superopt would (driver.Settings.Options, without the cache), and writes
// the files.
//
// Workload programs live in bench/workloads and, for the three that are
// also the project's examples, in examples/; both are embedded.
package bench

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/examples"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

//go:embed workloads/*.py
var workloadFS embed.FS

// Workload is one program of the suite: a built-in one, or one a user
// names on the command line.
type Workload struct {
	Name   string // short name, e.g. "rmsnorm_matmul": the file's, less .py or .ugraph.json
	Title  string // what it is, for reports
	File   string // where it lives: in the repository for a built-in one
	Source []byte // the program's text (.py) or μGraph document (.ugraph.json)
}

// programExts are the endings of files that hold a program.
var programExts = []string{".py", ".ugraph.json"}

// workloadName returns the name of the program in file, and whether the
// file's ending says it is one.
func workloadName(file string) (string, bool) {
	base := filepath.Base(file)
	for _, ext := range programExts {
		if name, ok := strings.CutSuffix(base, ext); ok && name != "" {
			return name, true
		}
	}
	return "", false
}

// maxProgramFile bounds what a workload file may hold: the most either
// loader reads (the front-end reads far less of a .py; it says so).
const maxProgramFile = kernel.MaxFileSize

// FromPaths returns in followed by the workloads at paths: programs (.py),
// μGraph files (.ugraph.json) and directories, of which each such file
// (not those in subdirectories) is one. A path that is neither, a
// directory that holds none, and two workloads of one name are errors; a
// file with the name and text of a workload already listed (a user naming
// examples/, whose programs are also built in) is that workload, not a
// second one.
func FromPaths(in []Workload, paths []string) ([]Workload, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if _, ok := workloadName(p); !ok || !info.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: not a program (want a .py program, a .ugraph.json μGraph file or a directory of them)", p)
			}
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		n := len(files)
		for _, e := range entries {
			if _, ok := workloadName(e.Name()); ok && e.Type().IsRegular() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: a directory with no programs (.py or .ugraph.json files)", p)
		}
	}
	byName := map[string]int{}
	for i, w := range in {
		byName[w.Name] = i
	}
	out := slices.Clone(in)
	for _, file := range files {
		name, _ := workloadName(file)
		src, err := boundedread.ReadFile(file, maxProgramFile)
		if err != nil {
			return nil, err
		}
		if i, ok := byName[name]; ok {
			if bytes.Equal(out[i].Source, src) {
				continue // the same program, named twice
			}
			return nil, fmt.Errorf("two workloads named %s: %s and %s (rename one; with --only-paths the built-in ones are left out)", name, out[i].File, file)
		}
		byName[name] = len(out)
		out = append(out, Workload{Name: name, Title: file, File: file, Source: src})
	}
	return out, nil
}

// suite lists the workloads in report order: the Mirage paper's (OSDI'25,
// §7) GQA decode, QKNorm+GQA, RMSNorm+MatMul, LoRA, gated MLP and nTrans,
// then whole programs at real model shapes, which superopt cuts into
// parts, a modern model's grouped-query attention as written without a
// reshape, and an encoder's MLP, whose rows no power of two divides.
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
	{"gqa_repeat_kv", "GQA decode, groups x heads, K/V repeated (LLaMA-3-8B: 8x4 heads, 4 tokens, KV 2048)", workloadFS, "bench/workloads"},
	{"encoder_mlp", "Encoder MLP, RMSNorm, biases and residual (ViT-B: 197x768, MLP 3072)", workloadFS, "bench/workloads"},
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
