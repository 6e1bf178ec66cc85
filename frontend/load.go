package frontend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/argparse"
	"github.com/mirage-go/mirage/frontend/pylex"
	"github.com/mirage-go/mirage/frontend/rewrite"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Options control a load.
type Options struct {
	// Strict refuses imports of modules other than mirage: each is an
	// error naming the module. By default such modules (torch, numpy, os,
	// time, ...) are inert stubs, with one warning for the load, and
	// argparse is a stub that parses Args.
	Strict bool
	// Args are the program's command-line arguments (mirage passes those
	// after --), which argparse's parse_args parses. An argument the
	// program does not define is an error, and so are arguments given to a
	// program that never calls parse_args.
	Args []string
	// Stdout receives what the program prints; nil means os.Stderr.
	Stdout io.Writer
	// Warn, when set, is called with each warning as it arises
	// ("prog.py:3: ..."); Program.Warnings keeps them all either way.
	Warn func(msg string)
	// MaxSteps bounds the Starlark execution steps, so that an endless loop
	// fails instead of hanging; 0 means DefaultMaxSteps.
	MaxSteps uint64
	// MaxAlloc bounds the bytes of the values the program builds, summed
	// over the run (see bounds.go), so that a value doubled in a loop fails
	// instead of exhausting memory; 0 means DefaultMaxAlloc.
	MaxAlloc int64
}

// DefaultMaxSteps is the step bound when Options.MaxSteps is 0: far more
// than a program that builds a graph needs (each example takes < 400).
const DefaultMaxSteps = 10_000_000

// maxCallDepth bounds nested calls, as Python's recursion limit does.
const maxCallDepth = 1000

// Program is a loaded tensor program.
type Program struct {
	Name     string        // the file's base name without ".py"
	Graph    *kernel.Graph // the program's kernel graph; Outputs is never empty
	Superopt *SuperoptArgs // the arguments of superoptimize; nil if not called
	Warnings []string      // "file:line: message", in the order they arose
	// Lines holds, per tensor of Graph, the line of the call that made it,
	// so that a later check of an op (a dynamic dim, DESIGN §9) can name
	// the program's line.
	Lines []int
	// Names maps the program's global variables that hold an input of
	// Graph to the input's position (0 for the first new_input), so that
	// inputs can be named on the command line (--dynamic X:0=1..64).
	Names map[string]int
	// Computed holds the global variables that hold a tensor Graph
	// computes when the program ends (one reassigned in a loop, H = f(H),
	// holds its last value): a name on the command line that is one is
	// told so, not just that no input has it.
	Computed map[string]bool
}

// SuperoptArgs are the arguments a program passed to superoptimize, for the
// search to honor.
type SuperoptArgs struct {
	Config string // "mlp", "attention", ...; "" when not given
	Lists  Lists
	Line   int // of the call, for errors in its arguments found later (an unknown config)
}

// Lists are superoptimize's candidate lists: griddims, blockdims, imaps,
// omaps, fmaps and franges. A nil slice means the argument was not given
// (None). search.Restrictions has the same fields, so the caller that
// configures a search converts: search.Restrictions(args.Lists).
type Lists struct {
	Grids, Threads []block.Dim3
	IMaps, OMaps   []block.Map
	FMaps, FRanges []int
}

// Error is an error in a program, at a position of its source. Line is 0
// when the error concerns the whole program; Col is 0 when it concerns a
// whole statement or call (the message then names the op or construct).
type Error struct {
	Filename  string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.Filename, e.Msg)
	case e.Col == 0:
		return fmt.Sprintf("%s:%d: %s", e.Filename, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Filename, e.Line, e.Col, e.Msg)
}

var tooLargeMsg = fmt.Sprintf("the program is larger than %s, the most the front-end reads", byteSize(MaxSourceSize))

// LoadFile loads the program in the file at path. It reads no more than
// MaxSourceSize bytes of it.
func LoadFile(path string, opts Options) (*Program, error) {
	src, err := boundedread.ReadFile(path, MaxSourceSize)
	var tooLarge *boundedread.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, &Error{Filename: path, Msg: tooLargeMsg}
	}
	if err != nil {
		return nil, err
	}
	return Load(path, src, opts)
}

// Load runs the program src (named filename in messages) and returns its
// kernel graph. Errors are *Error, positioned in src.
//
// The program is the kernel graph superoptimize was called on; otherwise
// the only kernel graph the program created. Its outputs are the tensors
// passed to mark_output; if none was, every op result that no op consumes
// (Mirage's demos do not always mark outputs), in creation order.
func Load(filename string, src []byte, opts Options) (*Program, error) {
	if len(src) > MaxSourceSize {
		return nil, &Error{Filename: filename, Msg: tooLargeMsg}
	}
	l := newLoader(filename, opts)
	text := strings.TrimPrefix(string(src), "\ufeff") // Python ignores a UTF-8 byte order mark
	toks, complete := pylex.Lex(text)
	rw, err := rewrite.Source(text, toks, l.rewriteOptions())
	if err != nil {
		return nil, l.rewriteError(err)
	}
	for _, w := range importWarnings(filename, rw.Imports) {
		l.warn(w)
	}
	l.columns = rw.Columns
	f, err := fileOptions.Parse(filename, rw.Code, 0)
	if err != nil {
		return nil, l.staticError(err, toks, complete)
	}
	if f.Stmts, err = rewrite.Desugar(f.Stmts); err != nil {
		return nil, l.rewriteError(err)
	}
	guardFile(f, rw.Identity)
	prog, err := starlark.FileProgram(f, l.predeclared.Has)
	if err != nil {
		return nil, l.staticError(err, toks, complete)
	}
	globals, err := prog.Init(l.newThread(), l.predeclared)
	if err != nil {
		return nil, l.runtimeError(err)
	}
	return l.program(globals)
}

// tensorNames maps the globals that hold an input of g, the program that
// kernel graph kg gave (kg's graph, or a copy of it as it was when
// superoptimize was called), to its position among g's inputs, and gives
// those that hold a tensor g computes.
func tensorNames(kg *kgraph, g *kernel.Graph, globals starlark.StringDict) (inputs map[string]int, computed map[string]bool) {
	pos := map[kernel.TensorID]int{}
	for k, t := range g.Inputs() {
		pos[t] = k
	}
	inputs, computed = map[string]int{}, map[string]bool{}
	for name, v := range globals {
		if t, ok := v.(dtensor); ok && t.kg == kg && int(t.id) < len(g.Tensors) {
			if k, ok := pos[t.id]; ok {
				inputs[name] = k
			} else {
				computed[name] = true
			}
		}
	}
	return inputs, computed
}

// fileOptions let programs use the Python they commonly do: top-level
// if/for/while, while loops, reassigned globals, set, recursion.
var fileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// loader holds the state of one load.
type loader struct {
	filename    string
	opts        Options
	module      *starlarkstruct.Module // mirage
	predeclared starlark.StringDict
	graphs      []*kgraph  // kernel graphs in creation order
	blocks      []*tbgraph // threadblock graphs in creation order
	super       *kgraph    // the graph superoptimize was called on
	warnings    []string
	columns     rewrite.Columns  // from the rewritten code's columns to the program's
	ignored     []string         // Mirage runtime names the program used
	ignoredPos  syntax.Position  // where it first did
	argparse    *argparse.Module // what `import argparse` gives; it reads Options.Args
	stopped     string           // why execution was cancelled
	alloc       int64            // bytes of values built, as bounds.go counts them
	maxAlloc    int64
}

func newLoader(filename string, opts Options) *loader {
	l := &loader{filename: filename, opts: opts, maxAlloc: opts.MaxAlloc}
	if l.maxAlloc <= 0 {
		l.maxAlloc = DefaultMaxAlloc
	}
	l.argparse = argparse.New(opts.Args, func(name string) argparse.Stub { return inert{name} })
	l.module = &starlarkstruct.Module{Name: mirageModule, Members: starlark.StringDict{
		"new_kernel_graph":      starlark.NewBuiltin("new_kernel_graph", l.newKernelGraph),
		"new_threadblock_graph": starlark.NewBuiltin("new_threadblock_graph", l.newThreadblockGraph),
		"float16":               dtypeValue(ugraph.Float16),
		"bfloat16":              dtypeValue(ugraph.BFloat16),
		"float32":               dtypeValue(ugraph.Float32),

		// Mirage's first API, which its LoRA demo uses (kernel.go).
		"new_graph": starlark.NewBuiltin("new_graph", l.newKernelGraph),
		"optimize":  starlark.NewBuiltin("optimize", l.optimize),
	}}
	l.addRuntime(l.module.Members)
	l.predeclared = starlark.StringDict{
		"__name__": starlark.String("__main__"),
		// The program's path as Load was given it, for scripts that find
		// their directory (os.path.dirname(os.path.realpath(__file__)),
		// inert here). Python 3.9+ makes a script's __file__ absolute;
		// this one is not, so that no load reads the working directory.
		"__file__":         starlark.String(filename),
		rewrite.ImportFunc: starlark.NewBuiltin(rewrite.ImportFunc, l.importModule),
		whileName:          starlark.True, // see guardStmt
	}
	l.guardPredeclared(l.predeclared)
	statementBuiltins(l.predeclared)
	orderBuiltins(l.predeclared)
	lenBuiltins(l.predeclared)
	equalityBuiltins(l.predeclared)
	typeBuiltin(l.predeclared)
	return l
}

func (l *loader) newThread() *starlark.Thread {
	stdout := l.opts.Stdout
	if stdout == nil {
		stdout = os.Stderr
	}
	maxSteps := l.opts.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	th := &starlark.Thread{
		Name:  l.filename,
		Print: func(_ *starlark.Thread, msg string) { fmt.Fprintln(stdout, msg) },
	}
	// Starlark checks its step budget before every instruction; we let it
	// stop every checkEvery steps to check the call depth as well.
	const checkEvery = 1000
	th.SetMaxExecutionSteps(min(checkEvery, maxSteps))
	th.OnMaxSteps = func(th *starlark.Thread) {
		switch {
		case th.ExecutionSteps() >= maxSteps:
			l.stop(th, fmt.Sprintf("the program ran for more than %d steps; an endless loop?", maxSteps))
		case th.CallStackDepth() > maxCallDepth:
			l.stop(th, fmt.Sprintf("calls nest more than %d deep; endless recursion?", maxCallDepth))
		default:
			th.SetMaxExecutionSteps(min(th.ExecutionSteps()+checkEvery, maxSteps))
		}
	}
	return th
}

func (l *loader) stop(th *starlark.Thread, reason string) {
	if l.stopped == "" {
		l.stopped = reason
	}
	th.Cancel(reason)
}

func (l *loader) warn(msg string) {
	l.warnings = append(l.warnings, msg)
	if l.opts.Warn != nil {
		l.opts.Warn(msg)
	}
}

func (l *loader) warnAt(pos syntax.Position, format string, args ...any) {
	l.warn(fmt.Sprintf("%s:%d: ", l.filename, pos.Line) + fmt.Sprintf(format, args...))
}

// where formats a position of the program for messages: "prog.py:12".
func (l *loader) where(pos syntax.Position) string {
	return fmt.Sprintf("%s:%d", l.filename, pos.Line)
}

// staticError converts a syntax or name-resolution error, naming the
// bracket or Python construct behind it when there is one; complete says
// whether toks reach the end of the source.
func (l *loader) staticError(err error, toks []pylex.Token, complete bool) error {
	var pos syntax.Position
	var msg string
	var serr syntax.Error
	var rerr resolve.ErrorList
	isSyntax := false
	switch {
	case errors.As(err, &serr):
		pos, msg, isSyntax = serr.Pos, serr.Msg, true
	case errors.As(err, &rerr):
		pos, msg = rerr[0].Pos, rerr[0].Msg
	default:
		return &Error{Filename: l.filename, Msg: err.Error()}
	}
	if pos.Col > 0 { // Starlark's position is in the rewritten code
		pos.Col = int32(l.columns.Source(int(pos.Line), int(pos.Col)))
	}
	before := func(line, col int) bool {
		return line < int(pos.Line) || line == int(pos.Line) && col <= int(pos.Col)
	}
	// A bracket left open, or closed by the wrong one, explains a syntax
	// error at or after it: the error Python would give.
	if b, bmsg := pylex.BracketError(toks, complete); isSyntax && bmsg != "" && before(b.Line, b.Col) {
		return &Error{Filename: l.filename, Line: b.Line, Col: b.Col, Msg: bmsg}
	}
	// The first unsupported construct explains the error if Starlark
	// stumbled on it or after it.
	if cs := rewrite.Constructs(toks); len(cs) > 0 {
		if c := cs[0]; before(c.Line, c.Col) {
			return &Error{Filename: l.filename, Line: c.Line, Msg: c.Msg}
		}
	}
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok {
		switch {
		case rewrite.PythonOnly(name):
			msg += " (a Python built-in that mirage programs, which run in Starlark, do not have)"
		case name == "mi" || name == mirageModule:
			msg += " (missing `import mirage as mi`?)"
		}
	}
	return &Error{Filename: l.filename, Line: int(pos.Line), Col: int(pos.Col), Msg: msg}
}

// runtimeError positions an execution error at the innermost call in the
// program: the offending call of a mirage method, or the statement Starlark
// failed in.
func (l *loader) runtimeError(err error) error {
	var ev *starlark.EvalError
	if !errors.As(err, &ev) {
		return &Error{Filename: l.filename, Msg: err.Error()}
	}
	msg := ev.Msg
	if l.stopped != "" {
		msg = l.stopped
	}
	for i := len(ev.CallStack) - 1; i >= 0; i-- {
		if pos := ev.CallStack[i].Pos; pos.Filename() == l.filename {
			return &Error{Filename: l.filename, Line: int(pos.Line), Msg: msg + callers(ev.CallStack[:i+1])}
		}
	}
	return &Error{Filename: l.filename, Msg: msg}
}

// callers says how the program reached the last of stack's frames where
// that is inside its own functions: " (in mlp, called at line 9)", each
// caller of a caller after it; "" at the top level. An error in a helper
// that builds a layer is the helper's line for every call of it: the
// call's line says which (found by a user's sweep).
func callers(stack starlark.CallStack) string {
	var b strings.Builder
	for j := len(stack) - 1; j > 0 && stack[j].Name != "<toplevel>"; j-- {
		if b.Len() == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "in %s, called at line %d", stack[j].Name, stack[j-1].Pos.Line)
	}
	if b.Len() > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// program picks the program's kernel graph and its outputs, and names its
// tensors by the globals (the program's variables) that hold them.
func (l *loader) program(globals starlark.StringDict) (*Program, error) {
	kg := l.super
	if kg == nil {
		switch len(l.graphs) {
		case 0:
			return nil, &Error{Filename: l.filename, Msg: "the program creates no kernel graph (mi.new_kernel_graph())"}
		case 1:
			kg = l.graphs[0]
		default:
			var at []string
			for _, g := range l.graphs[:min(len(l.graphs), 5)] {
				at = append(at, fmt.Sprint(g.pos.Line))
			}
			if len(l.graphs) > 5 {
				at = append(at, "...")
			}
			return nil, &Error{Filename: l.filename, Line: int(l.graphs[1].pos.Line), Msg: fmt.Sprintf(
				"the program creates %d kernel graphs (lines %s) and calls superoptimize on none; call superoptimize on the one to optimize",
				len(l.graphs), strings.Join(at, ", "))}
		}
	}
	g := kg.g
	if kg.called != nil {
		// The graph only grows: more ops or outputs than at the call are
		// what the program added after it.
		if len(g.Ops) != len(kg.called.Ops) || len(g.Outputs) != len(kg.called.Outputs) {
			l.warnAt(kg.superoptPos, "the program adds ops or outputs to the graph after superoptimize; they are not part of the program optimized (the graph as it was at this call, as in Mirage)")
		}
		g = kg.called
	}
	marked := len(g.Outputs) > 0
	if !marked {
		outs := sinks(g)
		if len(outs) == 0 {
			return nil, &Error{Filename: l.filename, Line: int(kg.pos.Line), Msg: "the kernel graph has no outputs: it computes nothing from its inputs"}
		}
		for _, t := range outs {
			if err := g.MarkOutput(t); err != nil {
				panic(err) // sinks are distinct tensors of the graph
			}
		}
	}
	if len(l.opts.Args) > 0 && !l.argparse.Read() {
		return nil, &Error{Filename: l.filename, Msg: fmt.Sprintf(
			"the program was given arguments (%s) but never parses them: it calls no argparse parse_args()", strings.Join(l.opts.Args, " "))}
	}
	for _, tb := range l.blocks {
		if !tb.attached() {
			l.warnAt(tb.pos, "this threadblock graph is never used by customized")
		}
	}
	for _, t := range unread(g) {
		line := int32(0)
		if int(t) < len(kg.lines) {
			line = kg.lines[t]
		}
		l.warnAt(syntax.Position{Line: line}, "input %v %v is read by no op: it stays a parameter of the entry point, unused",
			g.Tensors[t].DType, g.Tensors[t].Shape)
	}
	if marked {
		// A result computed and then forgotten is most likely an output
		// the program meant to mark (found by a user's sweep: a layer's
		// K projection, computed, never marked, silently dropped).
		for _, t := range sinks(g) {
			if slices.Contains(g.Outputs, t) {
				continue
			}
			line := int32(0)
			if int(t) < len(kg.lines) {
				line = kg.lines[t]
			}
			op, _ := g.Producer(t)
			l.warnAt(syntax.Position{Line: line}, "the result of %v (%v %v) is read by no op and not marked as an output (mark_output): no kernel computes it",
				g.Ops[op].Kind, g.Tensors[t].DType, g.Tensors[t].Shape)
		}
	}
	if note := l.ignoredNote(); note != "" {
		l.warn(note)
	}
	lines := make([]int, len(g.Tensors))
	for i := range lines {
		if i < len(kg.lines) {
			lines[i] = int(kg.lines[i])
		}
	}
	p := &Program{
		Name:     strings.TrimSuffix(filepath.Base(l.filename), ".py"),
		Graph:    g,
		Warnings: l.warnings,
		Lines:    lines,
	}
	if kg.superopt != nil {
		sa := *kg.superopt
		sa.Line = int(kg.superoptPos.Line)
		p.Superopt = &sa
	}
	p.Names, p.Computed = tensorNames(kg, g, globals)
	return p, nil
}

// unread returns g's inputs that no op reads and that are no output.
func unread(g *kernel.Graph) []kernel.TensorID {
	read := map[kernel.TensorID]bool{}
	for _, op := range g.Ops {
		for _, t := range op.In {
			read[t] = true
		}
	}
	for _, t := range g.Outputs {
		read[t] = true
	}
	var ts []kernel.TensorID
	for _, t := range g.Inputs() {
		if !read[t] {
			ts = append(ts, t)
		}
	}
	return ts
}

// sinks returns the op results no op consumes, in creation order.
func sinks(g *kernel.Graph) []kernel.TensorID {
	used := make([]bool, len(g.Tensors))
	for _, op := range g.Ops {
		for _, t := range op.In {
			used[t] = true
		}
	}
	var out []kernel.TensorID
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpInput {
			continue
		}
		for _, t := range op.Out {
			if !used[t] {
				out = append(out, t)
			}
		}
	}
	return out
}

// callPos is the position of the innermost call in the program: that of
// the running built-in, unless a built-in such as sorted called it.
func (l *loader) callPos(th *starlark.Thread) syntax.Position {
	for d := 1; d < th.CallStackDepth(); d++ {
		if pos := th.CallFrame(d).Pos; pos.Filename() == l.filename {
			return pos
		}
	}
	return th.CallFrame(1).Pos
}
