package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/templates"
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
	counters   bool
	dynamic    dynamicFlags
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
kernels with their launches, and the tensors the entry point takes.

--counters also builds the code for mirage's CPU emulator (with g++; no GPU
or CUDA toolkit), runs it once on random inputs and prints, per kernel, what
it moves through memory as a GPU would serve its warps' requests (32-byte
sectors, no cache): per device tensor the bytes requested against its
size, its distinct bytes (the sectors touched, each once: what DRAM would
move were L2 to serve every re-read) and the sectors per warp request;
the total against the ideal (each input read once, each output written
once); coalescing (bytes used over bytes moved); shared-memory bank
conflicts per request; and cp.async bytes. A kernel whose largest input
(its weights) is requested above 1.05x its size, or loaded below 90%
coalescing, is flagged. With --json each kernel of the manifest has them as
"counters".

A dynamic program's document (superopt --dynamic) is emitted as its one
entry point, mirage_NAME(outputs, inputs, m, workspace, stream), each
bucket's first graph (or its --candidate-th). A .py program with --dynamic
(and --buckets) is emitted the same way, every bucket running the program's
own ops at its size.

` + dynamicHelp,
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
	fl.BoolVar(&f.counters, "counters", false, "run the code in the CPU emulator (needs g++) and report each kernel's memory traffic")
	f.dynamic.register(cmd, true)
	pathFlags(cmd, "out")
	return cmd
}

func (f *emitFlags) run(cmd *cobra.Command, path string) error {
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	if done, err := f.emitDynamic(cmd, in, path); done || err != nil {
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
	if f.counters {
		if _, err := templates.EmulatorCompiler(); err != nil {
			return fmt.Errorf("--counters: %v", err)
		}
	}
	res, err := emitFiles(name, g, cuda.Options{Arch: f.arch.Arch, SingleFile: f.singleFile, Source: path}, f.outDir)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	var counters []cuda.Counters
	if f.counters {
		if counters, err = cuda.Measure(cmd.Context(), g, res, 1); err != nil {
			return fmt.Errorf("%s: --counters: %v", path, err)
		}
	}
	if f.asJSON {
		m := newManifest(res, in.Name, path, f.candidate, g, f.outDir)
		for i, c := range counters {
			m.Kernels[i].Counters = newManifestCounters(&c)
		}
		return writeJSON(cmd.OutOrStdout(), m)
	}
	printEmitSummary(cmd.OutOrStdout(), res, f.outDir)
	if f.counters {
		fmt.Fprintf(cmd.OutOrStdout(), "\nmemory traffic in the CPU emulator (32-byte sectors per warp request, no cache):\n")
		if err := cuda.WriteCountersTable(cmd.OutOrStdout(), res, counters); err != nil {
			return err
		}
	}
	return nil
}

// emitDynamic emits a dynamic program (a dynamic document, or a program
// with --dynamic) and reports whether in was one.
func (f *emitFlags) emitDynamic(cmd *cobra.Command, in *input, path string) (bool, error) {
	rows, docs, ok, err := driver.ReadDynamic(in.File)
	switch {
	case err != nil:
		return true, fmt.Errorf("%s: %v", path, err)
	case ok && f.dynamic.on():
		return true, fmt.Errorf("%s is a dynamic program's document already: --dynamic is for a .py program", path)
	case !ok && !f.dynamic.on() && f.dynamic.buckets == "":
		return false, nil
	case f.counters:
		return true, errors.New("--counters measures one static program: emit a bucket's graph alone (show --candidate) to measure it")
	}
	var buckets []cuda.Bucket
	if ok {
		for _, b := range docs {
			if f.candidate < 0 || f.candidate >= len(b.Graphs) {
				return true, fmt.Errorf("%s: bucket %d has %d graph(s), no --candidate %d", path, b.Size, len(b.Graphs), f.candidate)
			}
			buckets = append(buckets, cuda.Bucket{Size: b.Rows[f.candidate], Lo: b.Lo, Hi: b.Hi, Graph: b.Graphs[f.candidate]})
		}
	} else {
		program, lo, hi, sizes, err := f.dynamic.mark(in)
		if err != nil {
			return true, err
		}
		rows = cuda.Rows{Lo: lo, Hi: hi}
		rows.Inputs, rows.Outputs = program.DynamicDims()
		from := lo
		for _, size := range sizes {
			g, err := program.Bind(size)
			if err != nil {
				return true, fmt.Errorf("%s: %v", path, err)
			}
			buckets = append(buckets, cuda.Bucket{Size: size, Lo: from, Hi: min(size, hi), Graph: g})
			from = size + 1
		}
	}
	name := in.Name
	if f.name != "" {
		name = f.name
	}
	res, err := cuda.EmitDynamic(name, rows, buckets, cuda.Options{Arch: f.arch.Arch, SingleFile: f.singleFile, Source: path})
	if err != nil {
		return true, fmt.Errorf("%s: %v", path, err)
	}
	if err := writeFiles(res, f.outDir, name); err != nil {
		return true, err
	}
	if f.asJSON {
		return true, writeJSON(cmd.OutOrStdout(), struct {
			Name    string            `json:"name"`
			Lo      int               `json:"lo"`
			Hi      int               `json:"hi"`
			Files   []string          `json:"files"`
			Buckets []cuda.BucketCode `json:"buckets"`
		}{res.Name, rows.Lo, rows.Hi, fileNames(res, f.outDir), res.Buckets})
	}
	printEmitSummary(cmd.OutOrStdout(), res, f.outDir)
	for _, b := range res.Buckets {
		fmt.Fprintf(cmd.OutOrStdout(), "  bucket %d (m %d..%d): %d kernel(s), workspace %d bytes\n", b.Size, b.Lo, b.Hi, len(b.Kernels), b.WorkspaceBytes)
	}
	return true, nil
}

func fileNames(res *cuda.Result, dir string) []string {
	var names []string
	for _, file := range res.Files {
		names = append(names, filepath.Join(dir, file.Name))
	}
	return names
}

// writeFiles writes res's files into dir as one set, the set of program
// name, with NAME.manifest.json last (atomicfile.Set): a set of another
// program whose name a C identifier reads alike is not overwritten.
func writeFiles(res *cuda.Result, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var files []atomicfile.File
	for _, f := range res.Files {
		files = append(files, atomicfile.File{Name: f.Name, Data: f.Data})
	}
	err := atomicfile.Set{Dir: dir, Files: files, Manifest: res.Name + atomicfile.ManifestSuffix, Owner: name}.Write()
	var c *atomicfile.ConflictError
	if errors.As(err, &c) {
		return fmt.Errorf("-o %s: %v: %s would overwrite another program's files (its C name is %s too); use another -o, or --name", dir, err, name, res.Name)
	}
	return err
}

// emitFiles lowers g and writes its files into dir as one set, with
// NAME.manifest.json last (atomicfile.WriteSet). Nothing is written when
// the lowering fails.
func emitFiles(name string, g *kernel.Graph, opts cuda.Options, dir string) (*cuda.Result, error) {
	res, err := cuda.Emit(name, g, opts)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(res, dir, name); err != nil {
		return nil, err
	}
	return res, nil
}

func printEmitSummary(w io.Writer, res *cuda.Result, dir string) {
	fmt.Fprintf(w, "wrote %s\n", strings.Join(fileNames(res, dir), ", "))
	fmt.Fprintf(w, "mirage_%s for %s: %d kernel(s), workspace %d bytes\n", res.Name, res.Arch, len(res.Kernels), res.WorkspaceBytes)
	for i, k := range res.Kernels {
		if k.Library != "" {
			fmt.Fprintf(w, "  kernel %d  %-14s a call into %s  %s\n", i, k.What, k.Library, k.Name)
			continue
		}
		fmt.Fprintf(w, "  kernel %d  %-14s grid (%d, %d, %d) x %d threads, %d B shared  %s\n",
			i, k.What, k.Grid[0], k.Grid[1], k.Grid[2], k.Threads, k.SmemBytes, k.Name)
	}
	if len(res.Links) > 0 {
		fmt.Fprintf(w, "link with: -l%s\n", strings.Join(res.Links, " -l"))
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
	// Links are the CUDA toolkit libraries to link with, as -l takes
	// them: ["cublasLt"]; empty when the CUDA runtime alone will do.
	Links []string `json:"links"`
}

type manifestTensor struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"` // float16, bfloat16 or float32; dense row-major
}

type manifestKernel struct {
	Name      string            `json:"name"`
	What      string            `json:"what"`
	Grid      [3]int            `json:"grid"`
	Threads   int               `json:"threads"`
	SmemBytes int               `json:"smem_bytes"`
	Library   string            `json:"library,omitempty"`  // a call into this library ("cublasLt"): grid and threads are its own
	Counters  *manifestCounters `json:"counters,omitempty"` // --counters
}

// manifestCounters is what the emulator counted of one kernel launch
// (cuda.Counters); bytes moved are whole 32-byte sectors.
type manifestCounters struct {
	Name                   string            `json:"name"`
	Tensors                []manifestTraffic `json:"tensors"`
	IdealBytes             int64             `json:"ideal_bytes"`
	MovedBytes             int64             `json:"moved_bytes"`
	DistinctBytes          int64             `json:"distinct_bytes"` // the sectors touched, each once: the traffic were L2 to serve every re-read
	UsedBytes              int64             `json:"used_bytes"`
	Coalescing             float64           `json:"coalescing"`
	SharedRequests         int64             `json:"shared_requests"`
	BankConflicts          int64             `json:"bank_conflicts"`
	BankConflictsPerAccess float64           `json:"bank_conflicts_per_access"`
	CpAsyncBytes           int64             `json:"cp_async_bytes"`
	WeightProblems         []string          `json:"weight_problems"`
}

type manifestTraffic struct {
	Tensor         string  `json:"tensor"` // the kernel graph's tensor: "t3"; "" for addresses in none
	Role           string  `json:"role"`   // input, output or intermediate
	Bytes          int64   `json:"bytes"`  // its size
	RequestedBytes int64   `json:"requested_bytes"`
	DistinctBytes  int64   `json:"distinct_bytes"`
	Requests       int64   `json:"requests"`            // warp-level loads and stores
	SectorsPerReq  float64 `json:"sectors_per_request"` // sectors moved per request, on average
	LoadedBytes    int64   `json:"loaded_bytes"`
	StoredBytes    int64   `json:"stored_bytes"`
	LoadCoalescing float64 `json:"load_coalescing"`
}

func newManifestCounters(c *cuda.Counters) *manifestCounters {
	load, store := c.Total()
	m := &manifestCounters{Name: c.Name, Tensors: []manifestTraffic{}, IdealBytes: c.IdealBytes, MovedBytes: c.MovedBytes(),
		DistinctBytes: c.DistinctBytes(),
		UsedBytes:     load.Used + store.Used, Coalescing: c.Coalescing(), SharedRequests: c.SharedRequests,
		BankConflicts: c.BankConflicts(), BankConflictsPerAccess: c.BankConflictsPerAccess(), CpAsyncBytes: c.CpAsyncBytes,
		WeightProblems: append([]string{}, c.WeightProblems()...)}
	for _, t := range c.Tensors {
		role := ""
		if t.Role >= 0 {
			role = t.Role.String()
		}
		m.Tensors = append(m.Tensors, manifestTraffic{Tensor: t.Tensor, Role: role, Bytes: t.Bytes, RequestedBytes: t.Requested(), DistinctBytes: t.DistinctBytes(),
			Requests: t.Load.Requests + t.Store.Requests, SectorsPerReq: t.SectorsPerRequest(),
			LoadedBytes: t.Load.Bytes(), StoredBytes: t.Store.Bytes(), LoadCoalescing: t.LoadCoalescing()})
	}
	return m
}

func newManifest(res *cuda.Result, program, source string, candidate int, g *kernel.Graph, dir string) manifest {
	m := manifest{
		Name: res.Name, Program: program, Source: source, Candidate: candidate,
		Hash: cost.GraphHash(g), Arch: res.Arch, Dir: dir, WorkspaceBytes: res.WorkspaceBytes,
		Files: []string{}, Inputs: []manifestTensor{}, Outputs: []manifestTensor{}, Kernels: []manifestKernel{},
		Links: append([]string{}, res.Links...),
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
		m.Kernels = append(m.Kernels, manifestKernel{Name: k.Name, What: k.What, Grid: k.Grid, Threads: k.Threads, SmemBytes: k.SmemBytes, Library: k.Library})
	}
	return m
}
