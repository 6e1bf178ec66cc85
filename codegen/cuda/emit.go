package cuda

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/layout"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// runtimeMMA is the tensor-core instruction that mirage_runtime.cuh's
// fragments and GEMM are written for; an arch that plans matmuls with
// another one cannot be emitted for.
var runtimeMMA = target.MMA{M: 16, N: 8, K: 16, PTX: "mma.sync.aligned.m16n8k16"}

// Options control Emit.
type Options struct {
	// Arch is the target (the zero Arch: target.Default): its shared memory
	// per block, and the instruction paths the runtime must have.
	Arch target.Arch
	// SingleFile inlines the device runtime into NAME.cu instead of writing
	// it beside it.
	SingleFile bool
	// Launch tunes the launch plan (package launch) the kernels are
	// emitted from; the cost model must plan with the same options to
	// describe the emitted code.
	Launch launch.Options
	// Source names where the program came from, for the files' comments.
	Source string
	// DependentLaunch launches every graph-defined kernel as a
	// programmatic dependent launch (sm_90, mirage::launch_dependent):
	// it may start while the kernel before it finishes, waits for that
	// kernel's results before it touches memory, and lets the kernel after
	// it start at once (Launch.Dependent = launch.AllDependent; by
	// default, on sm_90, only the kernels that follow a cuBLASLt call
	// launch so). The cost model prices only the default's: bench/gpu
	// measures the rest beside it.
	DependentLaunch bool
}

// File is one emitted file.
type File struct {
	Name string
	Data []byte
}

// Kernel describes one kernel launch of the emitted program.
type Kernel struct {
	Name      string // the __global__ function
	Op        int    // the kernel op it runs
	What      string // "graph-defined", or the pre-defined op ("matmul", "exp", ...)
	Grid      [3]int
	Threads   int
	SmemBytes int // dynamic shared memory per block
	Stages    int // cp.async pipeline depth; 1 without one
	// Dependent says the kernel is a programmatic dependent launch
	// (Options.DependentLaunch).
	Dependent bool
	// Plan is the thread-level plan of a graph-defined kernel.
	Plan *thread.Graph
	// Library is the toolkit library a call into a vendor library (no
	// __global__ of ours, Grid zero) links with: "cublasLt".
	Library string
	// Barriers counts the __syncthreads() the hazard tracking placed in a
	// graph-defined kernel's parts (the pipeline's own are not counted).
	Barriers int
	// Schedule lists, in order, the parts of a graph-defined kernel and the
	// barriers between them: "loop: g0: ..." or "post: __syncthreads()".
	Schedule []string
	// Notes says which fast paths and fallbacks a kernel takes.
	Notes []string
}

// Result is what Emit produces.
type Result struct {
	Name           string // the C identifier in mirage_NAME
	Files          []File // NAME.cu, NAME.h, and the runtime unless SingleFile
	Kernels        []Kernel
	WorkspaceBytes int
	Arch           string // the target's name (target.Arch.Name): "sm_90", "h200"
	// Buffers are the device tensors the entry point touches: its inputs,
	// its outputs, then the intermediates in the workspace (of the largest
	// bucket, for a dynamic program).
	Buffers []Buffer
	// Buckets, for a dynamic program (EmitDynamic), are its buckets in
	// order, with their kernels (also in Kernels, in the same order).
	Buckets []BucketCode
	// Links are the CUDA toolkit's libraries the code calls, as nvcc's -l
	// takes them ("cublasLt"); none when it needs the CUDA runtime alone.
	Links []string
}

// BucketCode is what EmitDynamic wrote for one bucket.
type BucketCode struct {
	Size, Lo, Hi   int
	Kernels        []Kernel
	WorkspaceBytes int
}

// Buffer is where a device tensor of the emitted program lives.
type Buffer struct {
	Tensor kernel.TensorID
	Role   Role
	// Index is k for inputs[k], j for outputs[j], and the byte offset in
	// the workspace for an intermediate.
	Index int
	Bytes int
}

// Role says which of the entry point's arguments holds a tensor.
type Role int

const (
	RoleInput Role = iota
	RoleOutput
	RoleIntermediate
)

func (r Role) String() string {
	switch r {
	case RoleInput:
		return "input"
	case RoleOutput:
		return "output"
	}
	return "intermediate"
}

// Name is the tensor's C name in the emitted code: "t3".
func (b Buffer) Name() string { return fmt.Sprintf("t%d", b.Tensor) }

// ErrNoOutputs is returned for a graph with nothing to compute.
var ErrNoOutputs = errors.New("the graph has no outputs")

// workspaceAlign is the alignment of each intermediate tensor in the
// workspace.
const workspaceAlign = 256

// Emit lowers kernel graph g to CUDA: NAME.cu with one __global__ per
// graph-defined kernel and the host entry point mirage_NAME, NAME.h
// declaring it, and the device runtime. name is sanitized into a C
// identifier. Emit fails when a kernel needs more shared memory than the
// architecture allows, even without pipelining.
func Emit(name string, g *kernel.Graph, opts Options) (*Result, error) {
	opts, err := checkArch(opts)
	if err != nil {
		return nil, err
	}
	if g == nil || len(g.Outputs) == 0 {
		return nil, ErrNoOutputs
	}
	p := &program{name: Sanitize(name), g: g, opts: opts, res: &Result{Name: Sanitize(name), Arch: opts.Arch.Name}}
	for _, step := range programPasses {
		if err := step.run(p); err != nil {
			return nil, err
		}
	}
	return p.res, nil
}

// checkArch defaults opts.Arch and checks that the runtime can target it.
func checkArch(opts Options) (Options, error) {
	if opts.Arch.Name == "" {
		opts.Arch = target.MustLookup(target.Default)
	}
	if a := opts.Arch; a.MMA != runtimeMMA || !a.AsyncCopy || !a.LdMatrix {
		return opts, fmt.Errorf("%s: the CUDA runtime is written for %s with cp.async and ldmatrix", a.Name, runtimeMMA.PTX)
	}
	if cc, ok := opts.Arch.ComputeCapability(); opts.DependentLaunch && (!ok || cc < 90) {
		a := opts.Arch.Name
		if opts.Arch.CUDA != a {
			a += " (" + opts.Arch.CUDA + ")"
		}
		return opts, fmt.Errorf("%s: programmatic dependent launches need sm_90 or newer", a)
	}
	if opts.DependentLaunch {
		opts.Launch.Dependent = launch.AllDependent
	}
	return opts, nil
}

// programPasses are the steps of Emit, in order.
var programPasses = [...]struct {
	name string
	run  func(*program) error
}{
	{"plan", (*program).planLaunches}, // the ops the outputs need, and every launch
	{"storage", (*program).storage},   // inputs, outputs, workspace offsets
	{"kernels", (*program).kernels},   // a __global__ per graph-defined kernel, launches for all
	{"files", (*program).files},       // NAME.cu, NAME.h, the runtime
}

// program is the state of one Emit.
type program struct {
	name string
	g    *kernel.Graph
	opts Options
	res  *Result

	// rows, in a bucket of a dynamic program (EmitDynamic), holds the
	// tensors with the dynamic dim m, by their dim; nil otherwise. bucket
	// is the m the graph's shapes are written for.
	rows   map[kernel.TensorID]int
	bucket int

	plan    *launch.Plan
	live    []bool   // per op, the plan's
	cname   []string // per tensor: its C pointer in the host function
	decls   []string // host declarations of the tensor pointers
	globals []string // source of the __global__ functions
	host    writer   // body of the host function after the declarations
}

// planLaunches plans every kernel the program launches (package launch):
// the code below emits what the plan says, as the cost model costs it.
func (p *program) planLaunches() error {
	plan, err := launch.Graph(p.g, p.opts.Arch, p.opts.Launch)
	if err != nil {
		return err
	}
	p.plan, p.live = plan, plan.Live
	for _, k := range plan.Kernels {
		if l := k.Code.Links(); l != "" {
			p.res.Links = MergeLinks(p.res.Links, l)
		}
	}
	return nil
}

// storage names every tensor the host function touches: inputs[k],
// outputs[j], or a slice of the workspace.
func (p *program) storage() error {
	g := p.g
	p.cname = make([]string, len(g.Tensors))
	outOf := map[kernel.TensorID]int{}
	for j, t := range g.Outputs {
		outOf[t] = j
	}
	// An input that only ops no output depends on read is still an
	// argument, but declaring it would be an unused variable (nvcc #177).
	read := map[kernel.TensorID]bool{}
	for i := range g.Ops {
		if g.Ops[i].Kind != ugraph.OpInput && p.live[i] {
			for _, t := range g.Ops[i].In {
				read[t] = true
			}
		}
	}
	for k, t := range g.Inputs() {
		p.res.Buffers = append(p.res.Buffers, Buffer{Tensor: t, Role: RoleInput, Index: k, Bytes: g.Tensors[t].Bytes()})
		p.cname[t] = fmt.Sprintf("t%d", t)
		if _, isOut := outOf[t]; !read[t] && !isOut {
			p.decls = append(p.decls, fmt.Sprintf("// input %d %v (inputs[%d]) is read by no op an output depends on", k, g.Tensors[t].Shape, k))
			continue
		}
		p.decls = append(p.decls, fmt.Sprintf("const %s* const t%d = static_cast<const %s*>(inputs[%d]);  // input %d %v",
			ctype(g.Tensors[t].DType), t, ctype(g.Tensors[t].DType), k, k, g.Tensors[t].Shape))
	}
	ws := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpInput || !p.live[i] {
			continue
		}
		if lk := p.plan.Kernel(i); lk != nil && lk.Fold != nil {
			continue // the product the call adds to, never stored
		}
		for _, t := range op.Out {
			ct := ctype(g.Tensors[t].DType)
			p.cname[t] = fmt.Sprintf("t%d", t)
			if j, ok := outOf[t]; ok {
				p.res.Buffers = append(p.res.Buffers, Buffer{Tensor: t, Role: RoleOutput, Index: j, Bytes: g.Tensors[t].Bytes()})
				p.decls = append(p.decls, fmt.Sprintf("%s* const t%d = static_cast<%s*>(outputs[%d]);  // output %d %v", ct, t, ct, j, j, g.Tensors[t].Shape))
				continue
			}
			p.res.Buffers = append(p.res.Buffers, Buffer{Tensor: t, Role: RoleIntermediate, Index: ws, Bytes: g.Tensors[t].Bytes()})
			p.decls = append(p.decls, fmt.Sprintf("%s* const t%d = reinterpret_cast<%s*>(ws + %d);  // intermediate %v", ct, t, ct, ws, g.Tensors[t].Shape))
			ws += roundUp(g.Tensors[t].Bytes(), workspaceAlign)
		}
	}
	// A vendor library's scratch comes last: one region, which its calls
	// (one after another on the stream) share.
	scratch := 0
	for _, k := range p.plan.Kernels {
		scratch = max(scratch, k.Workspace)
	}
	if scratch > 0 {
		p.decls = append(p.decls, fmt.Sprintf("void* const lib_ws = ws + %d;  // the libraries' scratch, %d bytes", ws, scratch))
		ws += scratch
	}
	p.res.WorkspaceBytes = ws
	return nil
}

func roundUp(a, b int) int { return (a + b - 1) / b * b }

// kernels writes a __global__ per graph-defined kernel and the host code
// that launches every op.
func (p *program) kernels() error {
	g := p.g
	h := &p.host
	h.indent = 1
	outOf := map[kernel.TensorID]int{}
	for j, t := range g.Outputs {
		outOf[t] = j
	}
	// Outputs that are inputs are copies.
	for j, t := range g.Outputs {
		if op, _ := g.Producer(t); op >= 0 && g.Ops[op].Kind == ugraph.OpInput {
			h.comment(fmt.Sprintf("Output %d is input t%d: copy it.", j, t))
			n, err := p.count(g.Tensors[t].Bytes(), t)
			if err != nil {
				return err
			}
			h.line("err = cudaMemcpyAsync(outputs[%d], t%d, %s, cudaMemcpyDeviceToDevice, stream);", j, t, n)
			h.line("if (err != cudaSuccess) return err;")
		}
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpInput || !p.live[i] || p.plan.FoldedInto(i) >= 0 {
			continue
		}
		var err error
		if op.Kind == ugraph.OpCustomized {
			err = p.graphDefined(i)
		} else {
			err = p.predefined(i)
		}
		if err != nil {
			return fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
		}
	}
	return nil
}

// graphDefined plans and writes the kernel of customized op i.
func (p *program) graphDefined(i int) error {
	g := p.g
	op := &g.Ops[i]
	lk := p.plan.Kernel(i)
	tg := lk.Thread
	name := fmt.Sprintf("%s_kernel%d", p.name, countGraphDefined(p.res.Kernels))
	var ins, outs []string
	var strides []int
	for _, t := range op.In {
		ins = append(ins, p.cname[t])
	}
	for _, t := range op.Out {
		outs = append(outs, p.cname[t])
	}
	for _, t := range append(append([]kernel.TensorID(nil), op.In...), op.Out...) {
		st, err := p.rowStride(t)
		if err != nil {
			return err
		}
		strides = append(strides, st)
	}
	bk := newBlockKernel(name, tg, lk.MinBlocksPerSM(p.opts.Arch), ins, outs, strides)
	bk.dependent = lk.Dependent
	src, err := bk.emit()
	if err != nil {
		return err
	}
	p.globals = append(p.globals, src)
	kinfo := Kernel{Name: name, Op: i, What: "graph-defined", Grid: lk.Grid, Threads: lk.Threads, SmemBytes: lk.SmemBytes,
		Stages: lk.Stages, Dependent: bk.dependent, Plan: tg, Barriers: bk.barriers, Schedule: bk.trace, Notes: planNotes(tg)}
	p.res.Kernels = append(p.res.Kernels, kinfo)

	h := &p.host
	h.line("")
	h.comment(fmt.Sprintf("op %d: graph-defined kernel -> %s", i, strings.Join(outs, ", ")))
	if lk.SmemBytes > target.StaticSmemPerBlock {
		h.line("err = cudaFuncSetAttribute(%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %d);", name, lk.SmemBytes)
		h.line("if (err != cudaSuccess) return err;")
	}
	args := append(append([]string(nil), ins...), outs...)
	if bk.dynamic() {
		args = append(args, "m")
	}
	launcher := "launch"
	if bk.dependent {
		launcher = "launch_dependent"
	}
	h.line("err = mirage::%s(%s, dim3(%d, %d, %d), dim3(%d), %d, stream, %s);", launcher, name, lk.Grid[0], lk.Grid[1], lk.Grid[2], lk.Threads, lk.SmemBytes, strings.Join(args, ", "))
	h.line("if (err != cudaSuccess) return err;")
	return nil
}

func countGraphDefined(ks []Kernel) int {
	n := 0
	for _, k := range ks {
		if k.What == "graph-defined" {
			n++
		}
	}
	return n
}

// planNotes lists a graph-defined kernel's fast paths and fallbacks.
func planNotes(tg *thread.Graph) []string {
	var notes []string
	bg := tg.Block
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if tg.Ops[i].Role == thread.RoleDead {
			continue
		}
		switch {
		case op.Kind == ugraph.OpInput:
			t := &tg.Tiles[op.Out]
			switch t.Storage {
			case thread.Device:
				notes = append(notes, fmt.Sprintf("s%d: read in place from device memory", op.Out))
			case thread.Shared:
				n := copyNote(t.Vector)
				if t.Stages > 1 {
					n += fmt.Sprintf(", %d-stage pipeline", t.Stages)
				}
				notes = append(notes, fmt.Sprintf("s%d: %s", op.Out, n))
			}
		case op.Kind == ugraph.OpMatmul:
			if m := tg.Ops[i].MMA; m != nil {
				mode := fmt.Sprintf("streamed %dx%d tiles at a time", m.ChunkM, m.ChunkN)
				if m.Persistent {
					mode = "accumulated in registers across the for-loop"
				}
				if m.Base != 0 {
					mode += fmt.Sprintf(", from warp %d", m.Base)
				}
				if m.Slices() > 1 {
					mode += fmt.Sprintf(", K in %d slices", m.Slices())
				}
				notes = append(notes, fmt.Sprintf("s%d: mma.sync m16n8k16, %dx%d warps of %dx%d tiles, %s", op.Out, m.WarpsM, m.WarpsN, m.MPer, m.NPer, mode))
			} else {
				notes = append(notes, fmt.Sprintf("s%d: SIMT matmul (no tensor-core path for %v %v x %v)", op.Out, bg.Tensors[op.Out].DType, bg.Tensors[op.In[0]].Shape, bg.Tensors[op.In[1]].Shape))
			}
		}
	}
	return notes
}

// elementFunctor defines, among the .cu file's globals, the function
// object that the runtime's unary_kernel or binary_kernel applies for
// element-wise op i, and returns its name.
func (p *program) elementFunctor(i int) (string, error) {
	op := &p.g.Ops[i]
	params, call := "float x", ""
	var err error
	if op.Kind.Info().Class == ugraph.ClassBinary {
		params = "float x, float y"
		call, err = elementCall(op.Kind, op.Attr, "x", "y")
	} else {
		call, err = elementCall(op.Kind, op.Attr, "x", "")
	}
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("op%d_fn", i)
	p.globals = append(p.globals, fmt.Sprintf("// op %d: %v\nstruct %s {\n  __device__ __forceinline__ float operator()(%s) const { return %s; }\n};\n",
		i, op.Kind, name, params, call))
	return name, nil
}

// elementCall is the C expression of element-wise op k with attributes a
// on the float values x (and y, for a binary op): a call of the op's
// device function in the runtime (ugraph.Elementwise.Runtime), with the
// op's scalars after its operands.
func elementCall(k ugraph.OpKind, a ugraph.Attr, x, y string) (string, error) {
	info := k.Info()
	if info.Elem.Runtime == "" {
		return "", fmt.Errorf("%v is not element-wise", k)
	}
	args := []string{x}
	if info.Class == ugraph.ClassBinary {
		args = append(args, y)
	}
	for _, s := range a.Scalars[:info.Scalars] {
		lit, err := floatLit(s)
		if err != nil {
			return "", err
		}
		args = append(args, lit)
	}
	return "mirage::" + info.Elem.Runtime + "(" + strings.Join(args, ", ") + ")", nil
}

// predefined writes the launch of pre-defined op i: a kernel of the
// runtime, launched as the plan says.
func (p *program) predefined(i int) error {
	g := p.g
	op := &g.Ops[i]
	lk := p.plan.Kernel(i)
	out := g.Tensors[op.Out[0]]
	ct := ctype(out.DType)
	h := &p.host
	x := g.Tensors[op.In[0]]
	var kname string
	gridY := "" // a grid.y that depends on m, when not ""
	var args []string
	var notes []string
	var pre []string // host lines before the launch
	// count is a count of elements (or rows) of the op's tensors that
	// scales with m in a dynamic bucket; every tensor of the op is cut at
	// row m, as the guards of graph-defined kernels cut them.
	ts := append(append([]kernel.TensorID(nil), op.In...), op.Out...)
	count := func(n int) (string, error) { return p.count(n, ts...) }
	switch lk.Code {
	case launch.Unary, launch.Binary:
		n := out.Shape.NumElements()
		fn, err := p.elementFunctor(i)
		if err != nil {
			return err
		}
		cn, err := count(n)
		if err != nil {
			return err
		}
		if lk.Code == launch.Unary {
			kname = fmt.Sprintf("mirage::unary_kernel<%s, %s>", ct, fn)
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], cn, fn + "{}"}
			break
		}
		y := g.Tensors[op.In[1]]
		kname = fmt.Sprintf("mirage::binary_kernel<%s, %s>", ct, fn)
		args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], p.cname[op.In[1]], cn,
			dims4(layout.Pad(out.Shape)), dims4(layout.BroadcastStrides(x.Shape, layout.Pad(out.Shape))), dims4(layout.BroadcastStrides(y.Shape, layout.Pad(out.Shape))),
			fn + "{}"}
	case launch.ReduceRows, launch.ReduceRowsBlock, launch.ReduceRowsSplit, launch.ReduceMid, launch.ReduceMidSplit:
		outer, n, inner := layout.Split(x.Shape, op.Attr.Dim)
		// The rows below m are a prefix of x: of the outer count when
		// the dynamic dim comes before the summed one, else of the inner
		// count (every dim before the dynamic one, the summed one among
		// them, has extent 1). A sum over the dynamic dim itself does
		// not keep it, and count refuses it.
		co, ci := fmt.Sprintf("%dLL", outer), fmt.Sprintf("%dLL", inner)
		d, err := p.rowDim(op.In[0])
		if err != nil {
			return err
		}
		if d > op.Attr.Dim {
			ci, err = count(inner)
		} else {
			co, err = count(outer)
		}
		if err != nil {
			return err
		}
		switch lk.Code {
		case launch.ReduceRows:
			kname = fmt.Sprintf("mirage::reduce_rows_kernel<%s>", ct)
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], co, fmt.Sprint(n)}
		case launch.ReduceRowsBlock:
			kname = fmt.Sprintf("mirage::reduce_rows_block_kernel<%s>", ct)
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], co, fmt.Sprint(n)}
		case launch.ReduceRowsSplit:
			// The blocks' partials, then the rows' counts, in the
			// libraries' scratch; the counts start at zero.
			kname = fmt.Sprintf("mirage::reduce_rows_split_kernel<%s>", ct)
			partial := "static_cast<float*>(lib_ws)"
			arrived := fmt.Sprintf("reinterpret_cast<unsigned*>(static_cast<float*>(lib_ws) + %d)", lk.SplitCounts())
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], fmt.Sprint(n), fmt.Sprint(lk.Chunk), partial, arrived}
			if co != fmt.Sprintf("%dLL", outer) {
				gridY = fmt.Sprintf("static_cast<unsigned>(%s)", co)
			}
			pre = append(pre, fmt.Sprintf("err = cudaMemsetAsync(%s, 0, %d, stream);", arrived, 4*lk.Grid[1]), "if (err != cudaSuccess) return err;")
			notes = append(notes, fmt.Sprintf("%d blocks a row, %d accesses each; %d bytes of scratch", lk.Split, lk.Chunk, lk.Workspace))
		case launch.ReduceMidSplit:
			kname = fmt.Sprintf("mirage::reduce_mid_split_kernel<%s>", ct)
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], co, fmt.Sprint(n), ci}
		default:
			kname = fmt.Sprintf("mirage::reduce_mid_kernel<%s>", ct)
			args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], co, fmt.Sprint(n), ci}
		}
	case launch.RMSNorm, launch.RMSNormWarp:
		rows, n, inner := layout.Split(x.Shape, op.Attr.Dim)
		n *= inner
		cr, err := count(rows)
		if err != nil {
			return err
		}
		kname = fmt.Sprintf("mirage::rms_norm_kernel<%s>", ct)
		if lk.Code == launch.RMSNormWarp {
			kname = fmt.Sprintf("mirage::rms_norm_warp_kernel<%s>", ct)
		}
		args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], cr, fmt.Sprint(n)}
	case launch.CuBLASLt:
		return p.libraryCall(i, lk)
	case launch.GEMM, launch.GEMMSIMT:
		mm, err := p.matmulDims(op)
		if err != nil {
			return err
		}
		m, kd, n, rowsM := mm.m, mm.k, mm.n, mm.rows
		args = []string{p.cname[op.Out[0]], p.cname[op.In[0]], p.cname[op.In[1]], rowsM, fmt.Sprint(n), fmt.Sprint(kd)}
		if rowsM != fmt.Sprint(m) {
			gridY = fmt.Sprintf("static_cast<unsigned>((%s + %d) / %d)", rowsM, lk.RowTile-1, lk.RowTile)
		}
		if lk.Code == launch.GEMM {
			t := lk.Tile
			kname = fmt.Sprintf("mirage::gemm_kernel<%s, %d, %d, %d, %d, %d>", ct, t.BM, t.BN, t.WM, t.WN, lk.Stages)
			notes = append(notes, fmt.Sprintf("tensor cores (mma.sync), %dx%d block tiles, %d-stage cp.async pipeline", t.BM, t.BN, lk.Stages))
		} else {
			kname = fmt.Sprintf("mirage::gemm_simt_kernel<%s>", ct)
			notes = append(notes, "SIMT fallback (16x16 tiles)")
		}
	default:
		return fmt.Errorf("no runtime kernel for %v", op.Kind)
	}
	grid, threads, smem := lk.Grid, lk.Threads, lk.SmemBytes
	p.res.Kernels = append(p.res.Kernels, Kernel{Name: kname, Op: i, What: op.Kind.String(), Grid: grid, Threads: threads, SmemBytes: smem, Stages: lk.Stages, Notes: notes})
	h.line("")
	h.comment(fmt.Sprintf("op %d: %s -> %s %v", i, kernelCall(g, i), p.cname[op.Out[0]], out.Shape))
	if smem > target.StaticSmemPerBlock {
		h.line("err = cudaFuncSetAttribute(%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %d);", kname, smem)
		h.line("if (err != cudaSuccess) return err;")
	}
	for _, l := range pre {
		h.line("%s", l)
	}
	gy := fmt.Sprint(grid[1])
	if gridY != "" {
		gy = gridY
	}
	h.line("err = mirage::launch(%s, dim3(%d, %s, %d), dim3(%d), %d, stream, %s);", kname, grid[0], gy, grid[2], threads, smem, strings.Join(args, ", "))
	h.line("if (err != cudaSuccess) return err;")
	return nil
}

// libraryCall writes pre-defined op i as a call into a vendor library
// (cuBLASLt), which launches its own kernels on the stream.
func (p *program) libraryCall(i int, lk *launch.Kernel) error {
	g := p.g
	op := &g.Ops[i]
	out := g.Tensors[op.Out[0]]
	// The rows m of a dynamic program: of the product, or, with an add in
	// the call, of what it reads and writes in the product's place.
	rowsOf := []kernel.TensorID{op.In[0], op.Out[0]}
	if f := lk.Fold; f != nil {
		rowsOf = []kernel.TensorID{op.In[0], f.Addend, g.Ops[f.Op].Out[0]}
	}
	mm, err := p.matmulDims(op, rowsOf...)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("mirage::lt_matmul<%s>", ctype(out.DType))
	notes := []string{fmt.Sprintf("cuBLASLt (links -l%s): the library picks the kernels, %d bytes of scratch", lk.Code.Links(), lk.Workspace)}
	what, dst, addend := op.Kind.String(), op.Out[0], "nullptr"
	comment := fmt.Sprintf("op %d: %s -> %s %v, through cuBLASLt", i, kernelCall(g, i), p.cname[dst], out.Shape)
	if f := lk.Fold; f != nil {
		what, dst, addend = what+"+"+g.Ops[f.Op].Kind.String(), g.Ops[f.Op].Out[0], p.cname[f.Addend]
		notes = append(notes, fmt.Sprintf("op %d's add of %s in the epilogue (beta 1)", f.Op, addend))
		comment = fmt.Sprintf("ops %d and %d: %s + %s -> %s %v, through cuBLASLt (the add in its epilogue)",
			i, f.Op, kernelCall(g, i), addend, p.cname[dst], out.Shape)
	}
	p.res.Kernels = append(p.res.Kernels, Kernel{Name: name, Op: i, What: what, Stages: lk.Stages, Library: lk.Code.Links(), Notes: notes})
	h := &p.host
	h.line("")
	h.comment(comment)
	h.line("err = %s(%s, %s, %s, %s, %s, %d, %d, %d, lib_ws, stream);", name, p.cname[dst], p.cname[op.In[0]], p.cname[op.In[1]], addend, mm.rows, mm.n, mm.k, mm.batch)
	h.line("if (err != cudaSuccess) return err;")
	return nil
}

// matmulShape is a pre-defined matmul's C[batch][m][n] = A[m][k] · B[k][n],
// and rows the C expression of its row count: m, or the dynamic m.
type matmulShape struct {
	m, k, n, batch int
	rows           string
}

// matmulDims reads matmul op's dims. With m dynamic the rows are m (the
// batch is then 1: m is the outermost dim of extent above 1): m when one
// of rowsOf (the matmul's input and output, when none is given) has it.
func (p *program) matmulDims(op *kernel.Op, rowsOf ...kernel.TensorID) (matmulShape, error) {
	if len(rowsOf) == 0 {
		rowsOf = []kernel.TensorID{op.In[0], op.Out[0]}
	}
	x, out := p.g.Tensors[op.In[0]], p.g.Tensors[op.Out[0]]
	r := x.Shape.Rank()
	s := matmulShape{m: x.Shape.Dim(r - 2), k: x.Shape.Dim(r - 1), n: out.Shape.Last()}
	s.batch = x.Shape.NumElements() / (s.m * s.k)
	s.rows = fmt.Sprint(s.m)
	cm, err := p.count(s.m, rowsOf...)
	if err != nil {
		return s, err
	}
	if cm != fmt.Sprintf("%dLL", s.m) {
		if s.batch != 1 {
			return s, fmt.Errorf("a batched matmul (%d) with the dynamic dim m", s.batch)
		}
		s.rows = fmt.Sprintf("static_cast<int>(%s)", cm)
	}
	return s, nil
}

// kernelCall prints kernel op i as "matmul(t2, t1)".
func kernelCall(g *kernel.Graph, i int) string {
	op := &g.Ops[i]
	var args []string
	for _, t := range op.In {
		args = append(args, fmt.Sprintf("t%d", t))
	}
	switch op.Kind.Info().Class {
	case ugraph.ClassReduction, ugraph.ClassNorm:
		args = append(args, fmt.Sprintf("dim=%d", op.Attr.Dim))
	}
	for k := range op.Kind.Info().Scalars {
		args = append(args, fmt.Sprint(op.Attr.Scalars[k]))
	}
	return fmt.Sprintf("%v(%s)", op.Kind, strings.Join(args, ", "))
}

// dims4 is d as the runtime's mirage::Dims4.
func dims4(d layout.Dims) string {
	return fmt.Sprintf("mirage::Dims4{{%d, %d, %d, %d}}", d[0], d[1], d[2], d[3])
}

// files assembles NAME.cu, NAME.h and the runtime.
func (p *program) files() error {
	name := p.name
	cu := preamble(name, p.opts, p.res.Links, p.res.Kernels, lowersFor(p.opts, p.g))
	if len(p.globals) > 0 {
		cu.line("")
		cu.line("namespace {")
		for _, k := range p.globals {
			cu.line("")
			cu.raw(k)
		}
		cu.line("")
		cu.line("}  // namespace")
	}
	cu.line("")
	cu.line("extern \"C\" size_t mirage_%s_workspace_bytes(void) { return %d; }", name, p.res.WorkspaceBytes)
	cu.line("")
	p.hostFunction(cu, fmt.Sprintf("extern \"C\" cudaError_t mirage_%s(void* const* outputs, void const* const* inputs, void* workspace, cudaStream_t stream)", name),
		alignmentCheck(len(p.g.Inputs()), len(p.g.Outputs), p.res.WorkspaceBytes > 0))
	p.res.addFiles(name, cu.String(), header(name, source(p.opts), p.g, p.res), p.opts)
	return nil
}

// addFiles adds NAME.cu, NAME.h and, unless opts.SingleFile, the runtime
// to res.Files.
func (res *Result) addFiles(name, cu, hdr string, opts Options) {
	res.Files = append(res.Files, File{Name: name + ".cu", Data: []byte(cu)}, File{Name: name + ".h", Data: []byte(hdr)})
	if !opts.SingleFile {
		res.Files = append(res.Files, File{Name: templates.RuntimeName, Data: []byte(templates.Runtime)})
	}
}

// openHeader starts NAME.h after its comment: the include guard and the
// includes.
func openHeader(w *writer, guard string, includes ...string) {
	w.line("#ifndef %s", guard)
	w.line("#define %s", guard)
	w.line("")
	for _, inc := range includes {
		w.line("#include <%s>", inc)
	}
	w.line("")
}

// closeHeader ends NAME.h: the declarations, C linkage, and the guard.
func closeHeader(w *writer, guard string, decls ...string) {
	w.line("#ifdef __cplusplus")
	w.line("extern \"C\" {")
	w.line("#endif")
	w.line("")
	for _, d := range decls {
		w.line("%s", d)
	}
	w.line("")
	w.line("#ifdef __cplusplus")
	w.line("}")
	w.line("#endif")
	w.line("")
	w.line("#endif  // %s", guard)
}

// source names what the code is generated from (Options.Source), for the
// files' comments. It goes into // comments: a path with a newline, another character that
// does not print, or a backslash (which splices the next line into the
// comment) is quoted with Go's escapes, so that it stays in its comment.
func source(opts Options) string {
	s := opts.Source
	switch {
	case s == "":
		return "a μGraph"
	case strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || !unicode.IsPrint(r) }):
		return strconv.Quote(s)
	}
	return s
}

// preamble starts NAME.cu: the comment, the runtime, the header, and the
// checks that stop it compiling for a GPU it cannot run on.
func preamble(name string, opts Options, links []string, kernels []Kernel, lowers func(target.Arch) bool) *writer {
	cu := &writer{}
	build := "Build: nvcc -arch=" + opts.Arch.CUDA + " -c " + name + ".cu (CUDA toolkit only). The API is in " + name + ".h."
	if len(links) > 0 {
		build = "Build: nvcc -arch=" + opts.Arch.CUDA + " -c " + name + ".cu, and link with " + linkFlags(links) +
			" (CUDA toolkit libraries). The API is in " + name + ".h."
	}
	target := opts.Arch.Name
	if opts.Arch.CUDA != opts.Arch.Name {
		target += " (" + opts.Arch.GPU + ", " + opts.Arch.CUDA + ")"
	}
	cu.comment(fmt.Sprintf("%s.cu: generated by mirage from %s for %s. Do not edit.", name, source(opts), target),
		"", build)
	dependent := slices.ContainsFunc(kernels, func(k Kernel) bool { return k.Dependent })
	switch {
	case opts.DependentLaunch:
		cu.comment("", "Graph-defined kernels are programmatic dependent launches (sm_90): each may start while",
			"the kernel before it finishes, and waits for that kernel's results before it reads memory.")
	case dependent:
		cu.comment("", "Graph-defined kernels that follow a cuBLASLt call are programmatic dependent launches",
			"(sm_90): each may start while the call's last kernel finishes, and waits for its results",
			"before it reads memory.")
	}
	cu.line("")
	for _, l := range links {
		if l == "cublasLt" {
			cu.line("#define MIRAGE_CUBLASLT 1  // the runtime's lt_matmul: pre-defined matmuls through cuBLASLt")
		}
	}
	if opts.SingleFile {
		cu.raw(templates.Runtime)
		cu.line("")
	} else {
		cu.line("#include %q", templates.RuntimeName)
	}
	cu.line("#include %q", name+".h")
	cu.line("")
	cu.line("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800")
	cu.line("#error \"mirage: this code needs an sm_80 or newer GPU (cp.async, ldmatrix, mma.sync)\"")
	cu.line("#endif")
	if dependent {
		// Built for sm_80, the waits would compile to nothing while the
		// launches still let kernels start early on a newer GPU.
		why := "launches kernels as programmatic dependent launches"
		if opts.DependentLaunch {
			why = "was emitted with --dependent-launch"
		}
		cu.line("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900")
		cu.line("#error \"mirage: this code %s and needs sm_90 or newer (griddepcontrol); emit it with --arch sm_80 for an A100\"", why)
		cu.line("#endif")
	}
	cu.raw(smemGuard(opts.Arch, kernels, lowers))
	return cu
}

// smemGuard is the check that stops code whose blocks take more shared
// memory than every older GPU allows from compiling for one ("" when
// none is needed): built for sm_80, code emitted for sm_90 would fail
// only at its first call, when the entry point asks for a kernel's
// shared memory (cudaErrorInvalidValue). Compiled for the arch it was
// emitted for, it is no code. Its message says what to do for the older
// GPU: emit the same μGraph for it where it lowers there (lowers: with
// fewer pipeline stages, say), else search for it.
func smemGuard(arch target.Arch, kernels []Kernel, lowers func(target.Arch) bool) string {
	smem := 0
	for _, k := range kernels {
		smem = max(smem, k.SmemBytes)
	}
	// No guard for "sm_90a" (no compute capability read): its code runs
	// on that GPU alone.
	cc, ok := arch.ComputeCapability()
	var older target.Arch // the older GPU that allows the most
	for _, a := range target.Archs() {
		if c, known := a.ComputeCapability(); known && c < cc && a.MaxSmemPerBlock > older.MaxSmemPerBlock {
			older = a
		}
	}
	if !ok || older.Name == "" || smem <= older.MaxSmemPerBlock {
		return ""
	}
	remedy := "emit it with --arch " + older.Name
	if lowers != nil && !lowers(older) {
		remedy = fmt.Sprintf("search for it (superopt --arch %s): this μGraph's tiles do not fit its shared memory", older.Name)
	}
	return fmt.Sprintf("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < %d\n", cc*10) +
		fmt.Sprintf("#error \"mirage: this code was emitted for %s: a kernel takes %d bytes of shared memory a block, more than GPUs before %s allow (%s: %d); for such a GPU, %s\"\n",
			arch.Name, smem, arch.CUDA, older.Name, older.MaxSmemPerBlock, remedy) +
		"#endif\n"
}

// lowersFor reports whether every graph of gs has a launch plan for an
// arch (its kernels fit the arch's shared memory), with opts otherwise:
// what smemGuard advises.
func lowersFor(opts Options, gs ...*kernel.Graph) func(target.Arch) bool {
	return func(arch target.Arch) bool {
		for _, g := range gs {
			if _, err := launch.Graph(g, arch, opts.Launch); err != nil {
				return false
			}
		}
		return true
	}
}

// MergeLinks adds to links (Result.Links) those of more it lacks, in order:
// what code calling several emitted programs links with.
func MergeLinks(links []string, more ...string) []string {
	for _, l := range more {
		if !slices.Contains(links, l) {
			links = append(links, l)
		}
	}
	return links
}

// linkFlags is links as nvcc's -l flags: "-lcublasLt".
func linkFlags(links []string) string {
	fs := make([]string, len(links))
	for i, l := range links {
		fs[i] = "-l" + l
	}
	return strings.Join(fs, " ")
}

// hostFunction writes the function that launches the program's kernels,
// with the given signature (which names outputs, inputs, workspace and
// stream, and m in a dynamic bucket).
func (p *program) hostFunction(cu *writer, signature, aligned string) {
	cu.open("%s", signature)
	check := "outputs == nullptr || inputs == nullptr"
	if p.res.WorkspaceBytes > 0 {
		check += " || workspace == nullptr"
	}
	cu.line("if (%s) return cudaErrorInvalidValue;", check)
	if aligned != "" {
		cu.line("%s", aligned)
	}
	if p.res.WorkspaceBytes > 0 {
		cu.line("unsigned char* const ws = static_cast<unsigned char*>(workspace);")
	} else {
		cu.line("(void)workspace;")
	}
	if p.rows != nil {
		cu.line("(void)m;")
	}
	for _, d := range p.decls {
		cu.line("%s", d)
	}
	cu.line("cudaError_t err = cudaSuccess;")
	cu.raw(p.host.String())
	cu.line("return err;")
	cu.close()
}

// alignmentCheck is the line of an entry point that refuses what its
// header does not allow: a tensor not 16-byte aligned, a workspace not
// 256-byte aligned (mirage::misaligned). Host work, a few instructions a
// call: no kernel's code changes with it.
func alignmentCheck(inputs, outputs int, workspace bool) string {
	check := fmt.Sprintf("mirage::misaligned(inputs, %d, 16) || mirage::misaligned(outputs, %d, 16)", inputs, outputs)
	if workspace {
		check += " || mirage::misaligned(&workspace, 1, 256)"
	}
	return fmt.Sprintf("if (%s) return cudaErrorInvalidValue;", check)
}

// linksComment says, in NAME.h, which toolkit libraries the code links.
func linksComment(w *writer, links []string) {
	if len(links) == 0 {
		return
	}
	w.comment("",
		"Link with "+linkFlags(links)+": the CUDA toolkit's cuBLASLt runs the pre-defined",
		"matmuls (a handle and each shape's plan are made at the first call, host",
		"work only; the workspace holds the library's scratch).")
}

// header is NAME.h: the entry points, with the tensors they take.
func header(name, src string, g *kernel.Graph, res *Result) string {
	var w writer
	guard := "MIRAGE_" + strings.ToUpper(name) + "_H"
	w.comment(fmt.Sprintf("%s.h: generated by mirage from %s. Do not edit.", name, src),
		"",
		fmt.Sprintf("mirage_%s(outputs, inputs, workspace, stream) runs the program on stream,", name),
		"asynchronously, and returns the first CUDA error (launch errors included; it",
		"prints nothing). inputs[k] and outputs[j] are device pointers to dense",
		"row-major tensors, 16-byte aligned (a pointer that is not, or a workspace",
		"not 256-byte aligned, returns cudaErrorInvalidValue and launches nothing);",
		"strides below are in elements:",
		"")
	var rows [][]string
	row := func(name string, t kernel.TensorID) {
		s := g.Tensors[t].Shape
		rows = append(rows, []string{name, g.Tensors[t].DType.String(), s.String(), fmt.Sprint("strides ", s.Strides())})
	}
	for k, t := range g.Inputs() {
		row(fmt.Sprintf("inputs[%d]", k), t)
	}
	for j, t := range g.Outputs {
		row(fmt.Sprintf("outputs[%d]", j), t)
	}
	w.comment(tensorTable(rows, 12, 9, 17)...)
	w.comment("",
		fmt.Sprintf("workspace: mirage_%s_workspace_bytes() bytes of device memory (%d),", name, res.WorkspaceBytes),
		"256-byte aligned, for intermediate tensors; may be NULL when that is 0. It",
		"must not be shared by calls that run at the same time.")
	linksComment(&w, res.Links)
	openHeader(&w, guard, "cuda_runtime.h", "stddef.h")
	closeHeader(&w, guard,
		fmt.Sprintf("size_t mirage_%s_workspace_bytes(void);", name),
		fmt.Sprintf("cudaError_t mirage_%s(void* const* outputs, void const* const* inputs, void* workspace, cudaStream_t stream);", name))
	return w.String()
}
