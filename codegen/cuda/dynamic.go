package cuda

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A bucket of a dynamic program (EmitDynamic) is a static graph at m =
// bucket; its kernels take the runtime m and leave the rows past it alone:
// the tensors with the dynamic dim (the entry point's inputs and outputs
// that have it) hold exactly m rows. Graph-defined kernels guard every
// access to them (zero-filled loads, no stores); pre-defined ops run on m
// rows, and so do the ops on the results that keep rows apart
// (kernel.Graph.RowDims): an rms_norm of X, a product of it with a weight.
// Every other tensor lives in the bucket's workspace at full size.

// rowDim returns the dynamic dim of tensor t in this bucket, or -1. A
// tensor with one has its rows below m as a prefix of its memory: the dim
// has the bucket's extent and every dim before it extent 1.
func (p *program) rowDim(t kernel.TensorID) (int, error) {
	d, ok := p.rows[t]
	if !ok {
		return -1, nil
	}
	s := p.g.Tensors[t].Shape
	if err := rowsPrefix(s, d, p.bucket); err != nil {
		return -1, fmt.Errorf("t%d: %v", t, err)
	}
	return d, nil
}

func rowsPrefix(s ugraph.Shape, d, bucket int) error {
	if err := s.CheckRowDim(d); err != nil {
		return err
	}
	if s.Dim(d) != bucket {
		return fmt.Errorf("%v: dim %d is %d, not the bucket's %d rows", s, d, s.Dim(d), bucket)
	}
	return nil
}

// rowStride is the stride of tensor t's dynamic dim, or 0 when it has
// none.
func (p *program) rowStride(t kernel.TensorID) (int, error) {
	d, err := p.rowDim(t)
	if d < 0 || err != nil {
		return 0, err
	}
	return p.g.Tensors[t].Shape.Strides()[d], nil
}

// count is the C expression of n, a count of elements or rows of an op
// whose tensors are ts (the result last): n itself, or, when one of them
// has the dynamic dim, n/bucket·m, the part in rows below m.
func (p *program) count(n int, ts ...kernel.TensorID) (string, error) {
	static := fmt.Sprintf("%dLL", n)
	d := -1
	for _, t := range ts {
		dt, err := p.rowDim(t)
		if err != nil {
			return "", err
		}
		if dt >= 0 {
			d = dt
		}
	}
	if d < 0 {
		return static, nil
	}
	out := p.g.Tensors[ts[len(ts)-1]].Shape
	if err := rowsPrefix(out, d, p.bucket); err != nil || n%p.bucket != 0 {
		return "", fmt.Errorf("cannot cut %v at row m: the op's result %v does not keep the dynamic rows", n, out)
	}
	return fmt.Sprintf("%dLL * m", n/p.bucket), nil
}

// Bucket is one bucket of a dynamic program: Graph is static at m = Size
// and serves m in Lo..Hi.
type Bucket struct {
	Size, Lo, Hi int
	Graph        *kernel.Graph
}

// Rows says which dim of each input and output (in order) is the dynamic
// dim m, or -1, and the range of m.
type Rows struct {
	Lo, Hi          int
	Inputs, Outputs []int
	// Padded says that a tensor of the program has m inside an outer dim
	// of extent above 1 (kernel.Graph.Padded): the entry point copies the
	// inputs and outputs with m through buffers of the bucket's rows in the
	// workspace, and each bucket runs as the static program at its size.
	Padded bool
}

// EmitDynamic lowers the buckets of a dynamic program to one NAME.cu and
// NAME.h with one entry point,
//
//	mirage_NAME(outputs, inputs, m, workspace, stream),
//
// that checks m against the range and runs the bucket that serves it;
// mirage_NAME_workspace_bytes(m) is the most any bucket needs, for every
// m in the range (an engine allocates once). Each bucket's
// kernels live in a namespace of their own (NAME_m8_kernel0, ...).
// Consecutive buckets that run the same graph (a bucket that adopted a
// larger one's) are emitted once, serving both ranges.
func EmitDynamic(name string, rows Rows, buckets []Bucket, opts Options) (*Result, error) {
	opts, err := checkArch(opts)
	if err != nil {
		return nil, err
	}
	if len(buckets) == 0 {
		return nil, errors.New("a dynamic program without buckets")
	}
	if rows.Lo < 1 || rows.Lo > rows.Hi {
		return nil, fmt.Errorf("the range %d..%d is not one of rows", rows.Lo, rows.Hi)
	}
	var merged []Bucket
	for _, b := range buckets {
		if n := len(merged); n > 0 && merged[n-1].Size == b.Size && b.Graph != nil && merged[n-1].Graph != nil &&
			merged[n-1].Hi+1 == b.Lo && kernel.Hash(merged[n-1].Graph) == kernel.Hash(b.Graph) {
			merged[n-1].Hi = b.Hi
			continue
		}
		merged = append(merged, b)
	}
	buckets = merged
	cname := Sanitize(name)
	res := &Result{Name: cname, Arch: opts.Arch.Name}
	var progs []*program
	var pads [][]paddedTensor // per bucket, with rows.Padded
	for i, b := range buckets {
		g := b.Graph
		if g == nil || len(g.Outputs) == 0 {
			return nil, ErrNoOutputs
		}
		ins := g.Inputs()
		if len(ins) != len(rows.Inputs) || len(g.Outputs) != len(rows.Outputs) {
			return nil, fmt.Errorf("bucket %d: %d inputs and %d outputs, the program %d and %d", b.Size, len(ins), len(g.Outputs), len(rows.Inputs), len(rows.Outputs))
		}
		if b.Lo > b.Hi || b.Hi > b.Size || i > 0 && b.Lo != buckets[i-1].Hi+1 || i == 0 && b.Lo != rows.Lo || i == len(buckets)-1 && b.Hi != rows.Hi {
			return nil, fmt.Errorf("bucket %d serves %d..%d: the buckets must cover %d..%d in order", b.Size, b.Lo, b.Hi, rows.Lo, rows.Hi)
		}
		var padded []paddedTensor
		for k, d := range append(append([]int(nil), rows.Inputs...), rows.Outputs...) {
			t := entryTensor(g, k)
			if d < -1 {
				return nil, fmt.Errorf("bucket %d: tensor %d's dynamic dim is %d", b.Size, k, d)
			}
			if i > 0 {
				// One entry point, one header: every bucket's tensors are
				// the first's but in m (found by review: a weight of
				// another width was read past the buffer the header asks for).
				first := buckets[0].Graph
				if err := sameButM(g.Tensors[t], first.Tensors[entryTensor(first, k)], d); err != nil {
					return nil, fmt.Errorf("bucket %d: %s: %v, bucket %d's: the buckets of one entry point differ only in m", b.Size, tensorRole(k, len(ins)), err, buckets[0].Size)
				}
			}
			if d < 0 {
				continue
			}
			s := g.Tensors[t].Shape
			if rows.Padded {
				if d >= s.Rank()-1 || s.Dim(d) != b.Size {
					return nil, fmt.Errorf("bucket %d: t%d: %v has no row dim %d of the bucket's %d rows", b.Size, t, s, d, b.Size)
				}
				pt := paddedTensor{tensor: t, index: k, dim: d}
				if k >= len(ins) {
					pt.output, pt.index = true, k-len(ins)
				}
				padded = append(padded, pt)
			} else if err := rowsPrefix(s, d, b.Size); err != nil {
				return nil, fmt.Errorf("bucket %d: t%d: %v", b.Size, t, err)
			}
		}
		p := &program{name: fmt.Sprintf("%s_m%d", cname, b.Size), g: g, opts: opts, res: &Result{Name: cname, Arch: opts.Arch.Name},
			rows: map[kernel.TensorID]int{}, bucket: b.Size}
		if !rows.Padded { // a padded bucket's kernels run all its rows: nothing to guard
			for k, d := range rows.Inputs {
				if d >= 0 {
					p.rows[ins[k]] = d
				}
			}
			for j, d := range rows.Outputs {
				if d >= 0 {
					p.rows[g.Outputs[j]] = d
				}
			}
			// And the results of pre-defined ops that keep the rows
			// (the program's rms_norm of X, its product with a weight):
			// their ops too run on m rows (the cost model's rows are these).
			p.rows = g.RowDims(p.rows)
		}
		for _, step := range programPasses[:len(programPasses)-1] { // all but files
			if err := step.run(p); err != nil {
				return nil, fmt.Errorf("bucket %d: %w", b.Size, err)
			}
		}
		ws := p.res.WorkspaceBytes
		if len(padded) > 0 {
			ws = roundUp(ws, workspaceAlign)
			for i := range padded {
				padded[i].offset = ws
				ws += roundUp(g.Tensors[padded[i].tensor].Bytes(), workspaceAlign)
			}
		}
		progs = append(progs, p)
		pads = append(pads, padded)
		res.Kernels = append(res.Kernels, p.res.Kernels...)
		res.WorkspaceBytes = max(res.WorkspaceBytes, ws)
		res.Links = MergeLinks(res.Links, p.res.Links...)
		res.Buffers = p.res.Buffers
		res.Buckets = append(res.Buckets, BucketCode{Size: b.Size, Lo: b.Lo, Hi: b.Hi, Kernels: p.res.Kernels, WorkspaceBytes: ws})
	}

	var gs []*kernel.Graph
	for _, p := range progs {
		gs = append(gs, p.g)
	}
	cu := preamble(cname, opts, res.Links, res.Kernels, lowersFor(opts, gs...))
	for i, p := range progs {
		ns := fmt.Sprintf("m%d", p.bucket)
		cu.line("")
		cu.line("namespace {")
		cu.line("namespace %s {  // m up to %d", ns, p.bucket)
		for _, k := range p.globals {
			cu.line("")
			cu.raw(k)
		}
		cu.line("")
		p.hostFunction(cu, "cudaError_t run(void* const* outputs, void const* const* inputs, long long m, void* workspace, cudaStream_t stream)", "")
		if rows.Padded {
			cu.line("")
			paddedCall(cu, p, pads[i], len(p.g.Inputs()), len(p.g.Outputs))
		}
		cu.line("")
		cu.line("}  // namespace %s", ns)
		cu.line("}  // namespace")
	}
	cu.line("")
	cu.open("extern \"C\" size_t mirage_%s_workspace_bytes(int64_t m)", cname)
	// The most any bucket needs, at every m: an engine allocates once (for
	// M_MAX) and a smaller bucket may need more than the largest (a
	// library call's scratch that a fused bucket does without).
	cu.line("if (m < %d || m > %d) return 0;", rows.Lo, rows.Hi)
	cu.line("return %d;", res.WorkspaceBytes)
	cu.close()
	cu.line("")
	cu.open("extern \"C\" cudaError_t mirage_%s(void* const* outputs, void const* const* inputs, int64_t m, void* workspace, cudaStream_t stream)", cname)
	cu.line("if (m < %d || m > %d) return cudaErrorInvalidValue;  // outside the range: no launch", rows.Lo, rows.Hi)
	cu.line("if (outputs == nullptr || inputs == nullptr) return cudaErrorInvalidValue;")
	cu.line("%s", alignmentCheck(len(gs[0].Inputs()), len(gs[0].Outputs), res.WorkspaceBytes > 0))
	call := "run"
	if rows.Padded {
		call = "call"
	}
	for _, b := range res.Buckets {
		cu.line("if (m <= %d) return m%d::%s(outputs, inputs, m, workspace, stream);", b.Hi, b.Size, call)
	}
	cu.line("return cudaErrorInvalidValue;")
	cu.close()

	res.addFiles(cname, cu.String(), dynamicHeader(cname, source(opts), rows, buckets, res), opts)
	return res, nil
}

// paddedTensor is an input or output with m of a padded bucket
// (Rows.Padded): the bucket's kernels read or write it, at the bucket's
// rows, in the workspace at offset, and its call copies the caller's m rows
// of each slice in or out.
type paddedTensor struct {
	tensor kernel.TensorID
	output bool
	index  int // k of inputs[k], j of outputs[j]
	dim    int
	offset int
}

// paddedCall writes a padded bucket's call: the inputs with m copied into
// the bucket's rows (each slice of the dims before m one row of a strided
// copy, m rows wide in the caller's tensor, the bucket's rows apart in the
// workspace), run, and the outputs with m copied out, the copies of each
// side in one launch of the runtime's copy_rows (up to MaxRowsCopies a
// launch). The rows past m hold what the workspace held: the bucket's rows
// are independent, so they reach only rows past m, which are not copied
// out.
func paddedCall(cu *writer, p *program, padded []paddedTensor, inputs, outputs int) {
	cu.open("cudaError_t call(void* const* outputs, void const* const* inputs, long long m, void* workspace, cudaStream_t stream)")
	cu.line("if (outputs == nullptr || inputs == nullptr || workspace == nullptr) return cudaErrorInvalidValue;")
	cu.line("unsigned char* const pad = static_cast<unsigned char*>(workspace);")
	in := make([]string, inputs)
	for k := range in {
		in[k] = fmt.Sprintf("inputs[%d]", k)
	}
	out := make([]string, outputs)
	for j := range out {
		out[j] = fmt.Sprintf("outputs[%d]", j)
	}
	var ins, outs []paddedTensor
	for _, t := range padded {
		if t.output {
			out[t.index] = fmt.Sprintf("pad + %d", t.offset)
			outs = append(outs, t)
		} else {
			in[t.index] = fmt.Sprintf("pad + %d", t.offset)
			ins = append(ins, t)
		}
	}
	cu.line("void const* const in[%d] = {%s};", max(inputs, 1), strings.Join(in, ", "))
	cu.line("void* const out[%d] = {%s};", outputs, strings.Join(out, ", "))
	cu.line("cudaError_t err = cudaSuccess;")
	copies := func(ts []paddedTensor) {
		for len(ts) > 0 {
			n := min(len(ts), MaxRowsCopies)
			cu.open("")
			cu.line("mirage::RowsCopies cs = {};")
			for i, t := range ts[:n] {
				shape := p.g.Tensors[t.tensor].Shape // at the bucket's rows
				slices, row := 1, p.g.Tensors[t.tensor].Bytes()/shape.Dim(t.dim)
				for d := range t.dim {
					slices *= shape.Dim(d)
				}
				row /= slices // bytes of one row of m in one slice
				what, src, spitch, dst, dpitch := "input", fmt.Sprintf("static_cast<const unsigned char*>(inputs[%d])", t.index), fmt.Sprintf("m * %d", row), fmt.Sprintf("pad + %d", t.offset), fmt.Sprint(row*p.bucket)
				if t.output {
					what, src, spitch, dst, dpitch = "output", fmt.Sprintf("pad + %d", t.offset), dpitch, fmt.Sprintf("static_cast<unsigned char*>(outputs[%d])", t.index), spitch
				}
				cu.line("cs.c[%d] = {%s, %s, %s, %s, m * %d, %d};  // %s %d %v: %d slice(s) of m rows of %d bytes", i, src, dst, spitch, dpitch, row, slices, what, t.index, shape.WithDynamic(t.dim), slices, row)
			}
			cu.line("cs.n = %d;", n)
			cu.line("err = mirage::copy_rows(cs, stream);")
			cu.line("if (err != cudaSuccess) return err;")
			cu.close()
			ts = ts[n:]
		}
	}
	copies(ins)
	cu.line("err = run(out, in, m, workspace, stream);")
	cu.line("if (err != cudaSuccess) return err;")
	copies(outs)
	cu.line("return err;")
	cu.close()
}

// MaxRowsCopies is the runtime's: the copies one launch of copy_rows
// makes, a padded entry point's inputs with m (or its outputs) in as few
// launches.
const MaxRowsCopies = 8

// dynamicHeader is NAME.h of a dynamic program: the entry points, the
// range and the buckets, and per tensor its shape with m and its bytes per
// row of m, as constants an engine can size its buffers with.
func dynamicHeader(name, src string, rows Rows, buckets []Bucket, res *Result) string {
	var w writer
	guard := "MIRAGE_" + strings.ToUpper(name) + "_H"
	upper := "MIRAGE_" + strings.ToUpper(name)
	g := buckets[len(buckets)-1].Graph
	var sizes []string
	for _, b := range buckets {
		sizes = append(sizes, fmt.Sprintf("%d (m %d..%d)", b.Size, b.Lo, b.Hi))
	}
	w.comment(fmt.Sprintf("%s.h: generated by mirage from %s. Do not edit.", name, src),
		"",
		fmt.Sprintf("mirage_%s(outputs, inputs, m, workspace, stream) runs the program for m rows", name),
		fmt.Sprintf("(tokens), %d <= m <= %d, on stream, asynchronously, and returns the first CUDA", rows.Lo, rows.Hi),
		"error (launch errors included; it prints nothing). m outside the range, or a",
		"tensor not 16-byte aligned (a workspace not 256-byte aligned), returns",
		"cudaErrorInvalidValue and launches nothing. inputs[k] and outputs[j] are device",
		"pointers to dense row-major tensors, 16-byte aligned, of exactly the shapes",
		"below at this m (no padding rows):",
		"")
	shape := func(t kernel.TensorID, d int) string {
		s := g.Tensors[t].Shape
		if d >= 0 {
			s = s.WithDynamic(d)
		}
		return s.String()
	}
	var table [][]string
	for k, t := range g.Inputs() {
		table = append(table, []string{fmt.Sprintf("inputs[%d]", k), g.Tensors[t].DType.String(), shape(t, rows.Inputs[k])})
	}
	for j, t := range g.Outputs {
		table = append(table, []string{fmt.Sprintf("outputs[%d]", j), g.Tensors[t].DType.String(), shape(t, rows.Outputs[j])})
	}
	w.comment(tensorTable(table, 12, 9)...)
	if rows.Padded {
		var copied []string
		for k, d := range rows.Inputs {
			if d >= 0 {
				copied = append(copied, fmt.Sprintf("inputs[%d]", k))
			}
		}
		for j, d := range rows.Outputs {
			if d >= 0 {
				copied = append(copied, fmt.Sprintf("outputs[%d]", j))
			}
		}
		w.comment("",
			"Each bucket is its own verified μGraph, searched at m = its size; the entry",
			"point runs the smallest bucket at or above m. A tensor of the program has m",
			"inside an outer dim, so that its rows below m are not the first of its",
			"memory: the entry point copies the m rows of each input with m into a",
			"buffer of the bucket's rows in the workspace, runs every row of the bucket",
			"(each computed from its own), and copies the m rows of each output with m",
			"back, a launch each way ("+strings.Join(copied, ", ")+"). Buckets: "+strings.Join(sizes, ", ")+".")
	} else {
		w.comment("",
			"Each bucket is its own verified μGraph, searched at m = its size; the entry",
			"point runs the smallest bucket at or above m, whose kernels neither read nor",
			"write rows past m. Buckets: "+strings.Join(sizes, ", ")+".")
	}
	holds := "for intermediate tensors; may be NULL when that is 0. It must not be shared"
	if rows.Padded {
		holds = "for intermediate tensors and the copies' buffers (never NULL). It must not be shared"
	}
	w.comment("",
		fmt.Sprintf("workspace: mirage_%s_workspace_bytes(m) bytes of device memory (the", name),
		"most any bucket needs, the same at every m in the range), 256-byte aligned,",
		holds,
		"by calls that run at the same time. An engine allocates once for",
		fmt.Sprintf("%s_M_MAX rows and passes the same buffers at every m.", upper))
	linksComment(&w, res.Links)
	openHeader(&w, guard, "cuda_runtime.h", "stddef.h", "stdint.h")
	w.line("#define %s_M_MIN %d", upper, rows.Lo)
	w.line("#define %s_M_MAX %d", upper, rows.Hi)
	w.line("#define %s_BUCKETS %d", upper, len(buckets))
	w.line("#define %s_INPUTS %d", upper, len(rows.Inputs))
	w.line("#define %s_OUTPUTS %d", upper, len(rows.Outputs))
	w.line("")
	w.comment("Element types of the table below (two bytes do not say which).")
	w.line("#ifndef MIRAGE_DTYPE_FLOAT16")
	for _, dt := range []ugraph.DType{ugraph.Float16, ugraph.BFloat16, ugraph.Float32} {
		w.line("#define %s %d", dtypeMacro(dt), int(dt))
	}
	w.line("#endif")
	w.comment("Per input, then per output: element size in bytes, elements per row of m",
		"(of the whole tensor, 0 when it has no dim m: [32, m, 128] has 4096), elements",
		"at any m (0 when it has m) and element type (MIRAGE_DTYPE_*).")
	var tensors []string
	add := func(t kernel.TensorID, d int) {
		tt := g.Tensors[t]
		perRow, fixed := 0, tt.Shape.NumElements()
		if d >= 0 { // [.., m, ..] holds m times the elements of one row of each slice
			perRow, fixed = tt.Shape.NumElements()/tt.Shape.Dim(d), 0
		}
		tensors = append(tensors, fmt.Sprintf("{%d, %d, %d, %s}", tt.DType.Size(), perRow, fixed, dtypeMacro(tt.DType)))
	}
	for k, t := range g.Inputs() {
		add(t, rows.Inputs[k])
	}
	for j, t := range g.Outputs {
		add(t, rows.Outputs[j])
	}
	w.line("static const long long mirage_%s_tensors[%d][4] = {%s};", name, len(tensors), strings.Join(tensors, ", "))
	w.line("static const long long mirage_%s_m_range[2] = {%d, %d};", name, rows.Lo, rows.Hi)
	w.line("static const int mirage_%s_inputs_outputs[2] = {%d, %d};", name, len(rows.Inputs), len(rows.Outputs))
	w.line("")
	closeHeader(&w, guard,
		fmt.Sprintf("size_t mirage_%s_workspace_bytes(int64_t m);", name),
		fmt.Sprintf("cudaError_t mirage_%s(void* const* outputs, void const* const* inputs, int64_t m, void* workspace, cudaStream_t stream);", name))
	return w.String()
}

// dtypeMacro names dt's code in a dynamic header's tensor table.
func dtypeMacro(dt ugraph.DType) string {
	return "MIRAGE_DTYPE_" + strings.ToUpper(dt.String())
}

// entryTensor is the k-th tensor of g's inputs then outputs, as an entry
// point passes them.
func entryTensor(g *kernel.Graph, k int) kernel.TensorID {
	if ins := g.Inputs(); k < len(ins) {
		return ins[k]
	}
	return g.Outputs[k-len(g.Inputs())]
}

// tensorRole names the k-th tensor of an entry point's inputs then outputs.
func tensorRole(k, inputs int) string {
	if k < inputs {
		return fmt.Sprintf("input %d", k)
	}
	return fmt.Sprintf("output %d", k-inputs)
}

// sameButM reports how a and b differ other than in dim d (m; -1: none).
func sameButM(a, b kernel.Tensor, d int) error {
	differ := a.DType != b.DType || a.Shape.Rank() != b.Shape.Rank()
	for i := 0; !differ && i < a.Shape.Rank(); i++ {
		differ = i != d && a.Shape.Dim(i) != b.Shape.Dim(i)
	}
	if differ {
		return fmt.Errorf("%v %v, not %v %v", a.Shape, a.DType, b.Shape, b.DType)
	}
	return nil
}
