package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// EmitRequest is what mirage emit is asked for.
type EmitRequest struct {
	Name       string // of the files and of mirage_NAME; "": the input's
	Candidate  int    // which graph of a document (of each bucket's, for a dynamic one)
	Arch       target.Arch
	SingleFile bool
	Dir        string
	// Dynamic and Buckets mark a program's rows m (Input.MarkDynamic): its
	// one entry point runs every bucket's program as written.
	Dynamic []string
	Buckets string
	// Counters runs a static graph's code once in the CPU emulator and
	// counts each kernel's memory traffic.
	Counters bool
	// DependentLaunch launches graph-defined kernels as programmatic
	// dependent launches (cuda.Options.DependentLaunch).
	DependentLaunch bool
	// Note, when not nil, is told what the user should know of the code
	// written: another candidate of the document the cost model ranks
	// ahead on Arch (rankedElsewhere).
	Note func(string)
}

// Emission is what Emit wrote.
type Emission struct {
	Code     *cuda.Result
	Dir      string
	Program  string        // the input's name, as profiles key it
	Source   string        // the input's path
	Graph    *kernel.Graph // the static graph emitted; nil for a dynamic program
	Rows     cuda.Rows     // a dynamic program's range
	Largest  *kernel.Graph // a dynamic program's graph at its largest bucket
	Counters []cuda.Counters
	req      EmitRequest
}

// Emit lowers in's graph (or a dynamic program's buckets) to CUDA and
// writes the files into r.Dir as one set, with NAME.manifest.json last.
// Nothing is written when the lowering fails.
func Emit(ctx context.Context, in *Input, r EmitRequest) (*Emission, error) {
	// The files go in r.Dir, named after the program: a name, not a path.
	name := in.Name
	if r.Name != "" {
		if !fileName(r.Name) {
			return nil, fmt.Errorf("--name %q: a name, not a path (the files go in -o's directory)", r.Name)
		}
		name = r.Name
	} else if !fileName(name) {
		return nil, fmt.Errorf("%s: the program's name %q is not a file name, which emit names its files after; give --name", in.Path, name)
	}
	opts := cuda.Options{Arch: r.Arch, SingleFile: r.SingleFile, Source: in.Path, DependentLaunch: r.DependentLaunch}
	e := &Emission{Dir: r.Dir, Program: in.Name, Source: in.Path, req: r}
	switch done, err := e.dynamic(in, name, opts); {
	case err != nil:
		return nil, err
	case done:
		return e, nil
	}
	g, err := in.Graph(r.Candidate)
	if err != nil {
		return nil, err
	}
	if r.Counters {
		if _, err := templates.EmulatorCompiler(); err != nil {
			return nil, fmt.Errorf("--counters: %v", err)
		}
	}
	e.Graph = g
	if e.Code, err = emitFiles(name, g, opts, r.Dir); err != nil {
		return nil, fmt.Errorf("%s: %v", in.Path, err)
	}
	if r.Note != nil {
		if note := rankedElsewhere(in, r.Candidate, opts); note != "" {
			r.Note(note)
		}
	}
	if r.Counters {
		if e.Counters, err = cuda.Measure(ctx, g, e.Code, 1); err != nil {
			return nil, fmt.Errorf("%s: --counters: %v", in.Path, err)
		}
	}
	return e, nil
}

// dynamic emits a dynamic program (a dynamic document, or a program with
// --dynamic) and reports whether in was one.
func (e *Emission) dynamic(in *Input, name string, opts cuda.Options) (bool, error) {
	r, path := e.req, in.Path
	rows, docs, ok, err := ReadDynamic(in.File)
	switch {
	case err != nil:
		return true, fmt.Errorf("%s: %v", path, err)
	case ok && len(r.Dynamic) > 0:
		return true, fmt.Errorf("%s is a dynamic program's document already: --dynamic is for a .py program", path)
	case !ok && len(r.Dynamic) == 0 && r.Buckets == "":
		return false, nil
	case r.Counters:
		return true, errors.New("--counters measures one static program: emit a bucket's graph alone (show --candidate) to measure it")
	}
	var buckets []cuda.Bucket
	if ok {
		for _, b := range docs {
			if r.Candidate < 0 || r.Candidate >= len(b.Graphs) {
				return true, fmt.Errorf("%s: bucket %d has %d graph(s), no --candidate %d", path, b.Size, len(b.Graphs), r.Candidate)
			}
			buckets = append(buckets, cuda.Bucket{Size: b.Rows[r.Candidate], Lo: b.Lo, Hi: b.Hi, Graph: b.Graphs[r.Candidate]})
		}
	} else {
		d, err := in.MarkDynamic(r.Dynamic, r.Buckets)
		if err != nil {
			return true, err
		}
		rows = cuda.Rows{Lo: d.Lo, Hi: d.Hi, Padded: d.Program.Padded()}
		rows.Inputs, rows.Outputs = d.Program.DynamicDims()
		from := d.Lo
		for _, size := range d.Buckets {
			g, err := d.Program.Bind(size)
			if err != nil {
				return true, fmt.Errorf("%s: %v", path, err)
			}
			buckets = append(buckets, cuda.Bucket{Size: size, Lo: from, Hi: min(size, d.Hi), Graph: g})
			from = size + 1
		}
	}
	if e.Code, err = cuda.EmitDynamic(name, rows, buckets, opts); err != nil {
		return true, fmt.Errorf("%s: %v", path, err)
	}
	e.Rows, e.Largest = rows, buckets[len(buckets)-1].Graph
	return true, writeFiles(e.Code, e.Dir, name)
}

// DynamicManifest is emit --json's object for a dynamic program: its one
// entry point's files, tensors and buckets, in a static Manifest's terms.
// (Found by review: it had no links, which a build script needs for a
// program that calls cuBLASLt, no tensors, and the buckets as Go structs.)
type DynamicManifest struct {
	Name  string   `json:"name"` // the C identifier: mirage_NAME
	Arch  string   `json:"arch"`
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
	Lo    int      `json:"lo"` // the rows m the entry point takes
	Hi    int      `json:"hi"`
	// Inputs and Outputs are the entry point's tensors at m = the largest
	// bucket's rows, with the dim that holds m.
	Inputs  []DynamicTensor  `json:"inputs"`
	Outputs []DynamicTensor  `json:"outputs"`
	Buckets []ManifestBucket `json:"buckets"`
	Links   []string         `json:"links"` // as a Manifest's
}

// DynamicTensor is a dynamic entry point's tensor: RowsDim is the dim of
// Shape that holds m, -1 when it has none.
type DynamicTensor struct {
	ManifestTensor
	RowsDim int `json:"rows_dim"`
}

// ManifestBucket is one bucket of a dynamic entry point: the rows it
// serves (m in lo..hi, run at size rows) and its kernels.
type ManifestBucket struct {
	Rows           int              `json:"rows"`
	Lo             int              `json:"lo"`
	Hi             int              `json:"hi"`
	WorkspaceBytes int              `json:"workspace_bytes"`
	Kernels        []ManifestKernel `json:"kernels"`
}

func newDynamicManifest(res *cuda.Result, rows cuda.Rows, largest *kernel.Graph, dir string) DynamicManifest {
	m := DynamicManifest{Name: res.Name, Arch: res.Arch, Dir: dir, Files: baseNames(res), Lo: rows.Lo, Hi: rows.Hi,
		Inputs: []DynamicTensor{}, Outputs: []DynamicTensor{}, Buckets: []ManifestBucket{}, Links: append([]string{}, res.Links...)}
	tensor := func(t kernel.TensorID, rowsDim int) DynamicTensor {
		dt := largest.Tensors[t]
		return DynamicTensor{ManifestTensor{Shape: dt.Shape.Dims(), DType: dt.DType.String()}, rowsDim}
	}
	for k, t := range largest.Inputs() {
		m.Inputs = append(m.Inputs, tensor(t, rows.Inputs[k]))
	}
	for j, t := range largest.Outputs {
		m.Outputs = append(m.Outputs, tensor(t, rows.Outputs[j]))
	}
	for _, b := range res.Buckets {
		m.Buckets = append(m.Buckets, ManifestBucket{Rows: b.Size, Lo: b.Lo, Hi: b.Hi, WorkspaceBytes: b.WorkspaceBytes, Kernels: manifestKernels(b.Kernels)})
	}
	return m
}

// Report is emit --json's object: a static graph's Manifest (with the
// counters when measured), or a DynamicManifest.
func (e *Emission) Report() any {
	if e.Graph == nil {
		return newDynamicManifest(e.Code, e.Rows, e.Largest, e.Dir)
	}
	m := newManifest(e.Code, e.Program, e.Source, e.req.Candidate, e.Graph, e.Dir)
	for i, c := range e.Counters {
		m.Kernels[i].Counters = newManifestCounters(&c)
	}
	return m
}

// WriteSummary prints what was written, each kernel's launch, and the
// counters when measured (or each bucket, for a dynamic program).
func (e *Emission) WriteSummary(w io.Writer) error {
	writeSummary(w, e.Code, e.Dir)
	if e.Graph == nil {
		for _, b := range e.Code.Buckets {
			fmt.Fprintf(w, "  bucket %d (m %d..%d): %d kernel(s), workspace %d bytes\n", b.Size, b.Lo, b.Hi, len(b.Kernels), b.WorkspaceBytes)
		}
		return nil
	}
	if e.req.Counters {
		fmt.Fprintf(w, "\nmemory traffic in the CPU emulator (32-byte sectors per warp request, no cache):\n")
		return cuda.WriteCountersTable(w, e.Code, e.Counters)
	}
	return nil
}

func fileNames(res *cuda.Result, dir string) []string {
	var names []string
	for _, file := range res.Files {
		names = append(names, filepath.Join(dir, file.Name))
	}
	return names
}

// writeFiles writes res's files into dir as one set, the set of program
// name, with NAME.manifest.json last (atomicfile.Set), as superopt names
// its set: a set of another program whose name a C identifier reads alike
// is not overwritten, and the program's own set keeps what emit does not
// replace (superopt's document, beside the CUDA of another candidate).
func writeFiles(res *cuda.Result, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := caseTwin(dir, name); err != nil {
		return fmt.Errorf("-o %v", err)
	}
	var files []atomicfile.File
	for _, f := range res.Files {
		files = append(files, atomicfile.File{Name: f.Name, Data: f.Data})
	}
	err := atomicfile.Set{Dir: dir, Files: files, Manifest: name + atomicfile.ManifestSuffix, Owner: name, Keep: true}.Write()
	var c *atomicfile.ConflictError
	switch {
	case errors.As(err, &c) && olderRuntime(c):
		return fmt.Errorf("-o %s: %v", dir, olderRuntimeError(c, name))
	case errors.As(err, &c):
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

// writeSummary prints the files written and the kernels of res.
func writeSummary(w io.Writer, res *cuda.Result, dir string) {
	fmt.Fprintf(w, "wrote %s\n", strings.Join(fileNames(res, dir), ", "))
	fmt.Fprintf(w, "mirage_%s for %s: %d kernel(s), workspace %d bytes\n", res.Name, res.Arch, len(res.Kernels), res.WorkspaceBytes)
	for i, k := range res.Kernels {
		if k.Library != "" {
			fmt.Fprintf(w, "  kernel %d  %-14s a call into %s  %s\n", i, k.What, k.Library, k.Name)
			continue
		}
		dependent := ""
		if k.Dependent {
			dependent = ", dependent launch"
		}
		fmt.Fprintf(w, "  kernel %d  %-14s grid (%d, %d, %d) x %d threads, %d B shared%s  %s\n",
			i, k.What, k.Grid[0], k.Grid[1], k.Grid[2], k.Threads, k.SmemBytes, dependent, k.Name)
	}
	if len(res.Links) > 0 {
		fmt.Fprintf(w, "link with: -l%s\n", strings.Join(res.Links, " -l"))
	}
}

// Manifest is emit --json: what a harness needs to build and call the
// emitted code without reading the header.
type Manifest struct {
	Name           string           `json:"name"`    // the C identifier: mirage_NAME
	Program        string           `json:"program"` // the program's name, as profiles key it
	Source         string           `json:"source"`
	Candidate      int              `json:"candidate"`
	Hash           string           `json:"hash"` // cost.GraphHash, as profiles key it
	Arch           string           `json:"arch"`
	Dir            string           `json:"dir"`
	Files          []string         `json:"files"`
	WorkspaceBytes int              `json:"workspace_bytes"`
	Inputs         []ManifestTensor `json:"inputs"`
	Outputs        []ManifestTensor `json:"outputs"`
	Kernels        []ManifestKernel `json:"kernels"`
	// Links are the CUDA toolkit libraries to link with, as -l takes
	// them: ["cublasLt"]; empty when the CUDA runtime alone will do.
	Links []string `json:"links"`
}

// ManifestTensor is an input or output of the entry point in a Manifest.
type ManifestTensor struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"` // float16, bfloat16 or float32; dense row-major
}

// ManifestKernel is one kernel the entry point launches, in a Manifest.
type ManifestKernel struct {
	Name      string            `json:"name"`
	What      string            `json:"what"`
	Grid      [3]int            `json:"grid"`
	Threads   int               `json:"threads"`
	SmemBytes int               `json:"smem_bytes"`
	Library   string            `json:"library,omitempty"`   // a call into this library ("cublasLt"): grid and threads are its own
	Dependent bool              `json:"dependent,omitempty"` // a programmatic dependent launch (emit --dependent-launch)
	Counters  *ManifestCounters `json:"counters,omitempty"`  // --counters
}

// ManifestCounters is what the emulator counted of one kernel launch
// (cuda.Counters); bytes moved are whole 32-byte sectors.
type ManifestCounters struct {
	Name                   string            `json:"name"`
	Tensors                []ManifestTraffic `json:"tensors"`
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

// ManifestTraffic is what a kernel moved of one tensor, in
// ManifestCounters.
type ManifestTraffic struct {
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

func newManifestCounters(c *cuda.Counters) *ManifestCounters {
	load, store := c.Total()
	m := &ManifestCounters{Name: c.Name, Tensors: []ManifestTraffic{}, IdealBytes: c.IdealBytes, MovedBytes: c.MovedBytes(),
		DistinctBytes: c.DistinctBytes(),
		UsedBytes:     load.Used + store.Used, Coalescing: c.Coalescing(), SharedRequests: c.SharedRequests,
		BankConflicts: c.BankConflicts(), BankConflictsPerAccess: c.BankConflictsPerAccess(), CpAsyncBytes: c.CpAsyncBytes,
		WeightProblems: append([]string{}, c.WeightProblems()...)}
	for _, t := range c.Tensors {
		role := ""
		if t.Role >= 0 {
			role = t.Role.String()
		}
		m.Tensors = append(m.Tensors, ManifestTraffic{Tensor: t.Tensor, Role: role, Bytes: t.Bytes, RequestedBytes: t.Requested(), DistinctBytes: t.DistinctBytes(),
			Requests: t.Load.Requests + t.Store.Requests, SectorsPerReq: t.SectorsPerRequest(),
			LoadedBytes: t.Load.Bytes(), StoredBytes: t.Store.Bytes(), LoadCoalescing: t.LoadCoalescing()})
	}
	return m
}

func newManifest(res *cuda.Result, program, source string, candidate int, g *kernel.Graph, dir string) Manifest {
	m := Manifest{
		Name: res.Name, Program: program, Source: source, Candidate: candidate,
		Hash: cost.GraphHash(g), Arch: res.Arch, Dir: dir, WorkspaceBytes: res.WorkspaceBytes,
		Files: baseNames(res), Inputs: []ManifestTensor{}, Outputs: []ManifestTensor{}, Kernels: manifestKernels(res.Kernels),
		Links: append([]string{}, res.Links...),
	}
	tensor := func(t kernel.TensorID) ManifestTensor {
		dt := g.Tensors[t]
		return ManifestTensor{Shape: dt.Shape.Dims(), DType: dt.DType.String()}
	}
	for _, t := range g.Inputs() {
		m.Inputs = append(m.Inputs, tensor(t))
	}
	for _, t := range g.Outputs {
		m.Outputs = append(m.Outputs, tensor(t))
	}
	return m
}

// baseNames are the names of res's files, as a manifest lists them.
func baseNames(res *cuda.Result) []string {
	names := []string{}
	for _, file := range res.Files {
		names = append(names, file.Name)
	}
	return names
}

// manifestKernels are the kernels ks as a manifest lists them.
func manifestKernels(ks []cuda.Kernel) []ManifestKernel {
	out := []ManifestKernel{}
	for _, k := range ks {
		out = append(out, ManifestKernel{Name: k.Name, What: k.What, Grid: k.Grid, Threads: k.Threads, SmemBytes: k.SmemBytes, Library: k.Library, Dependent: k.Dependent})
	}
	return out
}

// fileName reports whether name can name a file in a directory: no path
// separator, not . or .., and no character that does not print (a newline
// in a file name breaks every script that lists the directory).
func fileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsFunc(name, func(r rune) bool {
		return r == '/' || r == filepath.Separator || !unicode.IsPrint(r)
	})
}

// rankedElsewhere says, where in is a document superopt ranked for another
// arch than opts.Arch, which of its graphs the cost model estimates fastest
// on opts.Arch (of those that lower to CUDA for it) when that is not
// candidate c, whose code was written: the document's order is its own
// arch's (an sm_90 search's best need not be an A100's).
func rankedElsewhere(in *Input, c int, opts cuda.Options) string {
	searched, ok := in.Arch()
	arch := opts.Arch
	if !ok || searched.Name == arch.Name || len(in.File.Graphs) < 2 {
		return ""
	}
	type ranked struct {
		i  int
		us float64
	}
	var all []ranked
	own := -1.0
	for i, e := range in.File.Graphs {
		if est, err := cost.EstimateGraph(e.Graph, arch); err == nil {
			all = append(all, ranked{i, est.Micros})
			if i == c {
				own = est.Micros
			}
		}
	}
	if own < 0 {
		return ""
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return cmp.Compare(a.us, b.us) })
	for _, r := range all {
		// Within 1% of the code written: the model cannot tell them apart.
		if r.i == c || r.us > own*0.99 {
			return ""
		}
		if _, err := cuda.Emit("x", in.File.Graphs[r.i].Graph, opts); err == nil {
			return fmt.Sprintf("%s ranks its candidates for %s; on %s the cost model estimates candidate %d at %.1f µs and candidate %d, written, at %.1f µs: --candidate %d writes the other",
				in.Path, searched.Name, arch.Name, r.i, r.us, c, own, r.i)
		}
	}
	return ""
}
