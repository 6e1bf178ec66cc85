package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/internal/ujson"
)

// FileFormat and FileVersion identify a .ugraph.json document. Version 2
// added a block graph's "stages" (its pipeline depth); a document is
// written as version 1 when none of its block graphs sets one, so that a
// build that reads only version 1 reads it, and those that cannot get a
// clear error instead of an unknown field.
const (
	FileFormat  = "mirage-ugraph"
	FileVersion = 2
)

// stagesVersion is the first version whose block graphs may set "stages".
const stagesVersion = 2

// MaxFileSize bounds what Decode reads, so that a huge input fails cleanly.
const MaxFileSize = 64 << 20

// File is one .ugraph.json document: one or more kernel graphs. A program
// is one graph; the search writes its verified candidates, best first.
//
//	{
//	  "format": "mirage-ugraph",
//	  "version": 1,                    2 where a block graph sets "stages"
//	  "name": "rmsnorm_matmul",
//	  "meta": {...},                   optional, any object
//	  "graphs": [
//	    {
//	      "meta": {...},               optional, any object
//	      "ops": [
//	        {"op": "input", "shape": [16, 4096], "dtype": "float16"},
//	        {"op": "input", "shape": [4096, 6144], "dtype": "float16"},
//	        {"op": "rms_norm", "in": [0], "dim": 1, "shape": [16, 4096]},
//	        {"op": "matmul", "in": [2, 1], "shape": [16, 6144]}
//	      ],
//	      "outputs": [3]
//	    }
//	  ]
//	}
//
// Ops are listed in order, and each op's results get the next tensor ids
// (one per result; a customized op has one per output op of its block
// graph); "in" and "outputs" name tensors by id. An input op gives its
// "shape" and "dtype"; any other op its attributes by name ("dim", "min",
// "max", "scalar", "accum"; exactly those its kind uses, all required) and
// its result's "shape" (a customized op: "shapes", one per result, and its
// block graph as "block", see package block). Result shapes are written for
// readers; on reading they are optional, and must equal the shapes the
// builders derive when present.
//
// Members are matched exactly and may appear once; a member the schema
// does not have at that place is an error, at every level. Extensions go in
// "meta", which a reader keeps (compacted) and a writer writes back; other
// changes bump "version".
type File struct {
	Name   string
	Meta   json.RawMessage // the document's "meta" object, or nil
	Graphs []Entry         // at least one
}

// Entry is one kernel graph of a File with its optional metadata.
type Entry struct {
	Graph *Graph
	Meta  json.RawMessage // the graph's "meta" object (cost figures, ...), or nil
}

// NewFile returns a File holding the given graphs and no metadata.
func NewFile(name string, graphs ...*Graph) *File {
	f := &File{Name: name}
	for _, g := range graphs {
		f.Graphs = append(f.Graphs, Entry{Graph: g})
	}
	return f
}

type fileJSON struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Name    string          `json:"name"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	Graphs  []graphJSON     `json:"graphs"`
}

type graphJSON struct {
	Meta    json.RawMessage `json:"meta,omitempty"`
	Ops     []opJSON        `json:"ops"`
	Outputs []TensorID      `json:"outputs"`
}

type opJSON struct {
	Op string     `json:"op"`
	In []TensorID `json:"in,omitempty"`
	ujson.Attrs
	Shape  []int           `json:"shape,omitempty"`
	Shapes [][]int         `json:"shapes,omitempty"`
	DType  string          `json:"dtype,omitempty"`
	Block  json.RawMessage `json:"block,omitempty"`
}

// Encode writes f as an indented JSON document ending in a newline. The
// bytes depend only on f's contents: Decode followed by Encode reproduces
// them exactly. The graphs must have been built by the builders; Encode
// checks only what it needs to write them faithfully (results numbered in
// order, operands defined before use, scalars that JSON can hold).
func (f *File) Encode(w io.Writer) error {
	data, err := f.marshal()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (f *File) marshal() ([]byte, error) {
	if len(f.Graphs) == 0 {
		return nil, errors.New("ugraph file: no graphs")
	}
	doc := fileJSON{Format: FileFormat, Version: f.version(), Name: f.Name, Meta: f.Meta}
	if err := checkMeta(f.Meta); err != nil {
		return nil, fmt.Errorf("ugraph file: %w", err)
	}
	for i, e := range f.Graphs {
		gj, err := encodeGraph(e)
		if err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
		doc.Graphs = append(doc.Graphs, gj)
	}
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := ujson.Indent(&out, compact.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// checkMeta accepts an absent (empty) meta member or a JSON object.
func checkMeta(m json.RawMessage) error {
	if len(m) == 0 {
		return nil
	}
	if !json.Valid(m) {
		return errors.New("meta is not valid JSON")
	}
	if _, err := ujson.ParseObject(m); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

func encodeGraph(e Entry) (graphJSON, error) {
	g := e.Graph
	if g == nil {
		return graphJSON{}, errors.New("nil graph")
	}
	if err := checkMeta(e.Meta); err != nil {
		return graphJSON{}, err
	}
	j := graphJSON{Meta: e.Meta, Ops: make([]opJSON, len(g.Ops)), Outputs: []TensorID{}}
	next := 0 // the id the next result gets when the file is read
	for i := range g.Ops {
		op := &g.Ops[i]
		oj, err := g.encodeOp(op, next)
		if err != nil {
			return j, ujson.AtOp(i, op.Kind, err)
		}
		j.Ops[i] = oj
		next += len(op.Out)
	}
	for _, t := range g.Outputs {
		if t < 0 || int(t) >= next {
			return j, fmt.Errorf("output %d is not a tensor of the graph", t)
		}
		j.Outputs = append(j.Outputs, t)
	}
	return j, nil
}

// encodeOp encodes op, whose results must be numbered from next on: the
// file does not store result ids, so a graph numbered otherwise (assembled
// by hand, not by the builders) would read back as a different graph.
func (g *Graph) encodeOp(op *Op, next int) (opJSON, error) {
	k := op.Kind
	j := opJSON{Op: k.String()}
	if !k.AllowedAt(ugraph.LevelKernel) {
		return j, errors.New("not a kernel op")
	}
	if n := len(op.Out); n == 0 || (k != ugraph.OpCustomized && n != 1) {
		return j, fmt.Errorf("%d results", n)
	}
	results := make([]Tensor, len(op.Out))
	for r, t := range op.Out {
		if int(t) != next+r || int(t) >= len(g.Tensors) {
			return j, fmt.Errorf("result %d is tensor %d, want %d", r, t, next+r)
		}
		results[r] = g.Tensors[t]
	}
	for _, t := range op.In {
		if t < 0 || int(t) >= next {
			return j, fmt.Errorf("operand %d is not a tensor defined by an earlier op", t)
		}
	}
	switch k {
	case ugraph.OpInput:
		j.Shape, j.DType = results[0].Shape.Dims(), results[0].DType.String()
	case ugraph.OpCustomized:
		if op.Block == nil {
			return j, errors.New("no block graph")
		}
		body, err := op.Block.MarshalJSON()
		if err != nil {
			return j, fmt.Errorf("block: %w", err)
		}
		j.In, j.Block = op.In, body
		for _, t := range results {
			j.Shapes = append(j.Shapes, t.Shape.Dims())
		}
	default:
		var err error
		if j.Attrs, err = ujson.EncodeAttr(k, op.Attr); err != nil {
			return j, err
		}
		j.In, j.Shape = op.In, results[0].Shape.Dims()
	}
	return j, nil
}

// Decode reads a document and rebuilds its graphs with the builders (New,
// AddInput, Add, Customized, MarkOutput), re-deriving and checking every
// shape. A malformed document is an error that names the place: the graph
// and op index, the op's kind and the field.
func Decode(r io.Reader) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("document larger than %d bytes", MaxFileSize)
	}
	return DecodeBytes(data)
}

// DecodeBytes is Decode of a document already read, whose size the caller
// has bounded (a document inside a larger one: a shard file's candidates).
func DecodeBytes(data []byte) (*File, error) {
	raw, err := wellFormed(data)
	if err != nil {
		return nil, err
	}
	return decodeFile(raw)
}

// ReadFile decodes the document in the named file; errors name the path.
func ReadFile(path string) (*File, error) {
	r, err := boundedread.Open(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := Decode(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// WriteFile writes f to the named file atomically: readers see the old
// file or the whole new one, never a part.
func WriteFile(path string, f *File) error {
	data, err := f.marshal()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, 0o644)
}

// wellFormed returns the one JSON value in data, rejecting syntax errors,
// truncation and trailing data with their line and column.
func wellFormed(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty document")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s: truncated document", position(data, len(data)))
		case errors.As(err, &syn):
			return nil, fmt.Errorf("%s: %v", position(data, int(syn.Offset)-1), err)
		}
		return nil, err
	}
	off := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[off:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("%s: data after the end of the document", position(data, len(data)-len(rest)))
	}
	return raw, nil
}

// position describes byte offset off of data as "line L, column C"
// (1-based; columns count bytes).
func position(data []byte, off int) string {
	off = max(0, min(off, len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

func decodeFile(raw json.RawMessage) (*File, error) {
	o, err := ujson.ParseObject(raw)
	if err != nil {
		return nil, err
	}
	// Format and version first: a newer file should say so, not fail on
	// the first member this version does not know.
	format, err := o.String("format")
	if err != nil {
		return nil, err
	}
	if format != FileFormat {
		return nil, fmt.Errorf("field \"format\": %q, want %q", format, FileFormat)
	}
	version, err := o.Int("version")
	if err != nil {
		return nil, err
	}
	if version < 1 || version > FileVersion {
		return nil, fmt.Errorf("field \"version\": version %d is not supported (this build reads versions 1 to %d)", version, FileVersion)
	}
	f := &File{}
	if f.Name, err = o.String("name"); err != nil {
		return nil, err
	}
	if f.Meta, err = meta(o); err != nil {
		return nil, err
	}
	graphs, err := o.Array("graphs")
	if err != nil {
		return nil, err
	}
	if len(graphs) == 0 {
		return nil, errors.New("field \"graphs\": no graphs")
	}
	if err := o.Unread(); err != nil {
		return nil, err
	}
	for i, raw := range graphs {
		e, err := decodeGraph(raw)
		if err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
		if op := stagedOp(e.Graph); version < stagesVersion && op >= 0 {
			return nil, fmt.Errorf("graph %d: op %d (customized): field \"stages\" needs version %d, the document is version %d", i, op, stagesVersion, version)
		}
		f.Graphs = append(f.Graphs, e)
	}
	return f, nil
}

// version is the oldest version that can hold f.
func (f *File) version() int {
	for _, e := range f.Graphs {
		if stagedOp(e.Graph) >= 0 {
			return stagesVersion
		}
	}
	return 1
}

// stagedOp is the first op of g whose block graph sets its pipeline
// depth, or -1.
func stagedOp(g *Graph) int {
	if g == nil {
		return -1
	}
	for i, op := range g.Ops {
		if op.Block != nil && op.Block.Stages != 0 {
			return i
		}
	}
	return -1
}

// meta reads the optional "meta" member: any object, kept compacted.
func meta(o *ujson.Object) (json.RawMessage, error) {
	if !o.Has("meta") {
		return nil, nil
	}
	raw, err := o.Raw("meta")
	if err != nil {
		return nil, err
	}
	// Only the top of meta is checked: what lies inside is not ours.
	if _, err := ujson.ParseObject(raw); err != nil {
		return nil, fmt.Errorf("field \"meta\": %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("field \"meta\": %w", err)
	}
	return buf.Bytes(), nil
}

func decodeGraph(raw json.RawMessage) (Entry, error) {
	var e Entry
	o, err := ujson.ParseObject(raw)
	if err != nil {
		return e, err
	}
	if e.Meta, err = meta(o); err != nil {
		return e, err
	}
	ops, err := o.Array("ops")
	if err != nil {
		return e, err
	}
	outputs, err := o.Ints("outputs")
	if err != nil {
		return e, err
	}
	if err := o.Unread(); err != nil {
		return e, err
	}
	g := New()
	for i, raw := range ops {
		if k, err := g.decodeOp(raw); err != nil {
			return e, ujson.AtOp(i, k, err)
		}
	}
	if len(outputs) == 0 { // as the front end refuses a program that marks none
		return e, errors.New("field \"outputs\": empty: the graph computes nothing")
	}
	for i, t := range outputs {
		if t < 0 || t >= len(g.Tensors) {
			return e, fmt.Errorf("field \"outputs\": element %d: tensor %d does not exist (%d tensors)", i, t, len(g.Tensors))
		}
		if err := g.MarkOutput(TensorID(t)); err != nil {
			return e, fmt.Errorf("field \"outputs\": element %d: %w", i, err)
		}
	}
	e.Graph = g
	return e, nil
}

// decodeOp appends the op that data describes and returns its kind
// (OpInvalid when the kind itself is at fault).
func (g *Graph) decodeOp(data json.RawMessage) (ugraph.OpKind, error) {
	o, err := ujson.ParseObject(data)
	if err != nil {
		return ugraph.OpInvalid, err
	}
	k, err := ujson.LookupOp(o, ugraph.LevelKernel, "kernel")
	if err != nil {
		return k, err
	}
	switch k {
	case ugraph.OpInput:
		return k, g.decodeInput(o)
	case ugraph.OpCustomized:
		return k, g.decodeCustomized(o)
	}
	return k, g.decodePredefined(k, o)
}

func (g *Graph) decodeInput(o *ujson.Object) error {
	shape, err := o.Shape("shape")
	if err != nil {
		return err
	}
	dt, err := o.DType("dtype")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	_, err = g.AddInput(shape, dt)
	return err
}

func (g *Graph) decodePredefined(k ugraph.OpKind, o *ujson.Object) error {
	in, err := g.operandsField(o)
	if err != nil {
		return err
	}
	if n := k.Info().Arity; len(in) != n {
		return fmt.Errorf("field \"in\": %v takes %d operands, got %d", k, n, len(in))
	}
	attr, err := ujson.DecodeAttr(k, o)
	if err != nil {
		return err
	}
	shape, err := o.Derived("shape")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	t, err := g.Add(k, attr, in...)
	if err != nil {
		return err
	}
	return shape.Check(g.Tensors[t].Shape)
}

func (g *Graph) decodeCustomized(o *ujson.Object) error {
	in, err := g.operandsField(o)
	if err != nil {
		return err
	}
	var want [][]int
	if o.Has("shapes") {
		if want, err = o.IntLists("shapes"); err != nil {
			return err
		}
	}
	raw, err := o.Raw("block")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	b := new(block.Graph)
	if err := b.UnmarshalJSON(raw); err != nil {
		return fmt.Errorf("field \"block\": %w", err)
	}
	outs, err := g.Customized(in, b)
	if err != nil {
		return err
	}
	if want == nil {
		return nil
	}
	ok := len(want) == len(outs)
	wants, gots := make([]string, len(want)), make([]string, len(outs))
	for i, dims := range want {
		wants[i] = ujson.FormatDims(dims)
	}
	for i, t := range outs {
		gots[i] = g.Tensors[t].Shape.String()
		ok = ok && ujson.EqualDims(g.Tensors[t].Shape, want[i])
	}
	if !ok {
		return fmt.Errorf("field \"shapes\": the file says [%s], the shape rules give [%s]", strings.Join(wants, ", "), strings.Join(gots, ", "))
	}
	return nil
}

// operandsField reads "in": ids of tensors that earlier ops defined.
func (g *Graph) operandsField(o *ujson.Object) ([]TensorID, error) {
	ids, err := o.Ints("in")
	if err != nil {
		return nil, err
	}
	in := make([]TensorID, len(ids))
	for i, id := range ids {
		// Checked before the conversion to TensorID, which could wrap.
		if id < 0 || id >= len(g.Tensors) {
			return nil, fmt.Errorf("field \"in\": element %d: tensor %d is not defined by an earlier op (%d tensors so far)", i, id, len(g.Tensors))
		}
		in[i] = TensorID(id)
	}
	return in, nil
}
