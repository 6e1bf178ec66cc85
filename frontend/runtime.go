package frontend

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/pyformat"
	"github.com/mirage-go/mirage/ugraph"
)

// Mirage's Python API has more than the graph: functions that set up its
// GPU runtime, generate or compile code, draw or save graphs, and
// arguments of superoptimize that steer its profiling. A program may use
// all of them, as Mirage's own scripts do; here they do nothing, and the
// load ends with one note that names those the program used.

// mirageRuntimeNames are the names of Mirage's published module (python/
// mirage: __init__.py, core.pyx, kernel.py, threadblock.py, utils.py, ...)
// other than the graph builders and the dtypes of new_input. Each is an
// inert value: calls, attributes and results do nothing.
var mirageRuntimeNames = []string{
	// __init__.py
	"set_gpu_device_id", "bypass_compile_errors", "global_config", "graph_dataset",
	"InputNotFoundError", "PersistentKernel", "__version__",
	// core.pyx
	"search", "generate_cuda_program", "generate_triton_program", "generate_nki_program",
	"convert_dtype_to_torch_type", "convert_torch_type_to_dtype", "convert_dtype_to_ctype", "convert_ctype_to_dtype",
	"get_kn_operator_type_string", "get_tb_operator_type_string",
	"string_to_tbepilogue", "string_to_accum_optype", "string_to_accum_rescale_optype",
	"cy_to_json", "cy_from_json", "dtype", "DTensor", "STensor", "CyKNGraph", "CyTBGraph",
	"CyKNOperator", "CyKNCustomizedOp", "CyTBOperator",
	// kernel.py, threadblock.py, utils.py, visualizer.py
	"KNGraph", "TBGraph", "Handle", "get_key_paths", "get_cc_cmd", "check_stride",
	"gen_empty_tensor", "get_shared_memory_capacity", "get_configurations_from_gpu",
	"get_scheduler", "visualizer", "HARD_CODE", "MAX_THREADS",
}

// mirageOtherDTypes are Mirage's dtypes that device tensors here cannot
// have; new_input names them in its error.
var mirageOtherDTypes = []string{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float64", "float8", "float8_e4m3", "float8_e5m2"}

// superoptRuntimeParams are superoptimize's parameters that steer Mirage's
// profiling, code generation and caching rather than the search.
var superoptRuntimeParams = []string{
	"verbose", "backend", "warmup_iters", "profile_iters", "previous_checkpoint",
	"save_codes", "use_graph_dataset", "use_cached_graphs", "is_formal_verified",
}

// kgraphRuntimeMethods are methods of Mirage's KNGraph that run, compile,
// draw or save the graph: inert here.
var kgraphRuntimeMethods = []string{
	"visualize", "to_json", "compile", "cuda_call", "triton_call", "valid_kernels",
	"get_error_message", "get_owner_independent_hash", "get_input_dtensors",
	"get_input_dtensor_shape_and_stride", "get_num_inputs",
	"generate_triton_program", // the graphs of Mirage's first API (mirage.optimize)
}

// kgraphRuntimeAttrs are attributes of Mirage's KNGraph: the Cython graph
// that generate_cuda_program takes, and the runtime's state.
var kgraphRuntimeAttrs = []string{"cygraph", "backend", "run", "visualizer"}

// addRuntime adds the runtime names to the mirage module's members.
func (l *loader) addRuntime(members starlark.StringDict) {
	for _, name := range mirageRuntimeNames {
		members[name] = runtimeStub{l: l, name: "mirage." + name}
	}
	for _, name := range mirageOtherDTypes {
		members[name] = otherDType(name)
	}
}

// ignore records that the program used name, which does nothing here;
// pos is where, if known.
func (l *loader) ignore(name string, pos syntax.Position) {
	if !slices.Contains(l.ignored, name) {
		l.ignored = append(l.ignored, name)
	}
	if l.ignoredPos.Line == 0 && pos.Line > 0 {
		l.ignoredPos = pos
	}
}

// ignoredNote is the load's one note on what it ignored, or "".
func (l *loader) ignoredNote() string {
	if len(l.ignored) == 0 {
		return ""
	}
	where := l.filename
	if l.ignoredPos.Line > 0 {
		where = l.where(l.ignoredPos)
	}
	return fmt.Sprintf("%s: ignored, as they concern Mirage's GPU runtime, not the search: %s", where, strings.Join(l.ignored, ", "))
}

// runtimeStub is one of Mirage's runtime functions or objects: it records
// its first use and otherwise acts as an inert value.
type runtimeStub struct {
	l    *loader
	name string
}

var (
	_ starlark.HasAttrs    = runtimeStub{}
	_ starlark.HasSetField = runtimeStub{}
	_ starlark.Callable    = runtimeStub{}
	_ pyformat.Inert       = runtimeStub{}
)

func (s runtimeStub) String() string        { return "<" + s.name + " (ignored)>" }
func (s runtimeStub) Type() string          { return "inert" }
func (s runtimeStub) Freeze()               {}
func (s runtimeStub) Truth() starlark.Bool  { return false }
func (s runtimeStub) Hash() (uint32, error) { return inert{s.name}.Hash() }
func (s runtimeStub) Name() string          { return s.name }
func (s runtimeStub) AttrNames() []string   { return nil }
func (s runtimeStub) Inert()                {}

func (s runtimeStub) Attr(name string) (starlark.Value, error) {
	s.l.ignore(s.name, syntax.Position{})
	return inert{s.name}.derive("." + name), nil
}

func (s runtimeStub) SetField(string, starlark.Value) error {
	s.l.ignore(s.name, syntax.Position{})
	return nil
}

func (s runtimeStub) CallInternal(th *starlark.Thread, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	s.l.ignore(s.name, s.l.callPos(th))
	return inert{s.name + "()"}, nil
}

// otherDType is a Mirage dtype that device tensors here cannot have.
type otherDType string

func (d otherDType) String() string        { return "mirage." + string(d) }
func (d otherDType) Type() string          { return "dtype" }
func (d otherDType) Freeze()               {}
func (d otherDType) Truth() starlark.Bool  { return true }
func (d otherDType) Hash() (uint32, error) { return starlark.String(d).Hash() }

func (d otherDType) unsupported() error {
	return fmt.Errorf("mirage.%s is not supported: device tensors are %s, %s or %s",
		string(d), ugraph.Float16, ugraph.BFloat16, ugraph.Float32)
}
