package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// emitFlags are the flags of mirage emit.
type emitFlags struct {
	load       loadFlags
	outDir     string
	arch       archFlag
	candidate  int
	singleFile bool
	name       string
	asJSON     bool
}

func newEmitCmd() *cobra.Command {
	var f emitFlags
	cmd := &cobra.Command{
		Use:   "emit FILE [-- PROGRAM-ARGS]",
		Short: "Write CUDA for a μGraph: NAME.cu, NAME.h and the device runtime",
		Long: `emit lowers a μGraph to CUDA that compiles with plain nvcc (the CUDA toolkit
alone): DIR/NAME.cu with one __global__ per graph-defined kernel and the host
entry point

  extern "C" cudaError_t mirage_NAME(void* const* outputs, void const* const* inputs,
                                     void* workspace, cudaStream_t stream);
  size_t mirage_NAME_workspace_bytes(void);

declared in DIR/NAME.h, whose comments give each tensor's shape, dtype and
strides, and the device runtime mirage_runtime.cuh (inlined into NAME.cu
with --single-file).

FILE is a .ugraph.json (from superopt: --candidate picks the graph, 0 the
best) or a .py program, typically a hand-written μGraph. Files are written
only when the whole program lowers; a kernel over the architecture's shared
memory is an error naming it. --json prints a manifest: the files, the
kernels with their launches, and the tensors the entry point takes.`,
		Args: f.load.files(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.load.register(cmd)
	registerArch(cmd, &f.arch, "shared memory per block")
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write the files into")
	fl.IntVar(&f.candidate, "candidate", 0, "which graph of a .ugraph.json file (0: the first, the best)")
	fl.BoolVar(&f.singleFile, "single-file", false, "inline the device runtime into NAME.cu")
	fl.StringVar(&f.name, "name", "", "the NAME of the files and of mirage_NAME (default: the program's name), so that several candidates can be linked together")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON manifest of what was written")
	return cmd
}

func (f *emitFlags) run(cmd *cobra.Command, path string) error {
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	g, err := in.graph(f.candidate)
	if err != nil {
		return err
	}
	name := in.Name
	if f.name != "" {
		name = f.name
	}
	res, err := emitFiles(name, g, cuda.Options{Arch: f.arch.Arch, SingleFile: f.singleFile, Source: path}, f.outDir)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), newManifest(res, in.Name, path, f.candidate, g, f.outDir))
	}
	printEmitSummary(cmd.OutOrStdout(), res, f.outDir)
	return nil
}

// emitFiles lowers g and writes its files into dir as one set, with
// NAME.manifest.json last (atomicfile.WriteSet). Nothing is written when
// the lowering fails.
func emitFiles(name string, g *kernel.Graph, opts cuda.Options, dir string) (*cuda.Result, error) {
	res, err := cuda.Emit(name, g, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []atomicfile.File
	for _, f := range res.Files {
		files = append(files, atomicfile.File{Name: f.Name, Data: f.Data})
	}
	if err := atomicfile.WriteSet(dir, files, res.Name+".manifest.json"); err != nil {
		return nil, err
	}
	return res, nil
}

func printEmitSummary(w io.Writer, res *cuda.Result, dir string) {
	var names []string
	for _, file := range res.Files {
		names = append(names, filepath.Join(dir, file.Name))
	}
	fmt.Fprintf(w, "wrote %s\n", strings.Join(names, ", "))
	fmt.Fprintf(w, "mirage_%s for %s: %d kernel(s), workspace %d bytes\n", res.Name, res.Arch, len(res.Kernels), res.WorkspaceBytes)
	for i, k := range res.Kernels {
		fmt.Fprintf(w, "  kernel %d  %-14s grid (%d, %d, %d) x %d threads, %d B shared  %s\n",
			i, k.What, k.Grid[0], k.Grid[1], k.Grid[2], k.Threads, k.SmemBytes, k.Name)
	}
}

// manifest is emit --json: what a harness needs to build and call the
// emitted code without reading the header.
type manifest struct {
	Name           string           `json:"name"`    // the C identifier: mirage_NAME
	Program        string           `json:"program"` // the program's name, as profiles key it
	Source         string           `json:"source"`
	Candidate      int              `json:"candidate"`
	Hash           string           `json:"hash"` // cost.GraphHash, as profiles key it
	Arch           string           `json:"arch"`
	Dir            string           `json:"dir"`
	Files          []string         `json:"files"`
	WorkspaceBytes int              `json:"workspace_bytes"`
	Inputs         []manifestTensor `json:"inputs"`
	Outputs        []manifestTensor `json:"outputs"`
	Kernels        []manifestKernel `json:"kernels"`
}

type manifestTensor struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"` // float16, bfloat16 or float32; dense row-major
}

type manifestKernel struct {
	Name      string `json:"name"`
	What      string `json:"what"`
	Grid      [3]int `json:"grid"`
	Threads   int    `json:"threads"`
	SmemBytes int    `json:"smem_bytes"`
}

func newManifest(res *cuda.Result, program, source string, candidate int, g *kernel.Graph, dir string) manifest {
	m := manifest{
		Name: res.Name, Program: program, Source: source, Candidate: candidate,
		Hash: cost.GraphHash(g), Arch: res.Arch, Dir: dir, WorkspaceBytes: res.WorkspaceBytes,
		Files: []string{}, Inputs: []manifestTensor{}, Outputs: []manifestTensor{}, Kernels: []manifestKernel{},
	}
	for _, file := range res.Files {
		m.Files = append(m.Files, file.Name)
	}
	tensor := func(t kernel.TensorID) manifestTensor {
		dt := g.Tensors[t]
		return manifestTensor{Shape: dt.Shape.Dims(), DType: dt.DType.String()}
	}
	for _, t := range g.Inputs() {
		m.Inputs = append(m.Inputs, tensor(t))
	}
	for _, t := range g.Outputs {
		m.Outputs = append(m.Outputs, tensor(t))
	}
	for _, k := range res.Kernels {
		m.Kernels = append(m.Kernels, manifestKernel{Name: k.Name, What: k.What, Grid: k.Grid, Threads: k.Threads, SmemBytes: k.SmemBytes})
	}
	return m
}
