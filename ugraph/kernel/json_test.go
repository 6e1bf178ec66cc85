package kernel_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (review the diff before committing)")

// need unwraps a builder result while building a test graph, where an
// error is a bug in the test.
func need[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var (
	fp16 = ugraph.Float16
	sh   = ugraph.MustShape
)

// The programs of examples/*.py and their hand-written μGraphs
// (examples/*_mugraph.py), built exactly as the Python builds them.
var examples = []struct {
	name  string
	build func() *kernel.Graph
}{
	{"rmsnorm_matmul", rmsnormMatmul},
	{"rmsnorm_matmul_mugraph", rmsnormMatmulMugraph},
	{"gated_mlp", gatedMLP},
	{"gated_mlp_mugraph", gatedMLPMugraph},
	{"gqa", gqa},
	{"gqa_mugraph", gqaMugraph},
	{"every_op", everyOp},
}

func rmsnormMatmul() *kernel.Graph {
	g := kernel.New()
	x := need(g.AddInput(sh(16, 4096), fp16))
	w := need(g.AddInput(sh(4096, 6144), fp16))
	d := need(g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, x))
	o := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, d, w))
	need(0, g.MarkOutput(o))
	return g
}

func rmsnormMatmulMugraph() *kernel.Graph {
	g := kernel.New()
	x := need(g.AddInput(sh(16, 4096), fp16))
	w := need(g.AddInput(sh(4096, 6144), fp16))
	tb := need(block.New(block.Dim3{96, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := need(tb.AddInput(sh(16, 4096), fp16, block.Map{-1, -1, -1}, 1))
	tw := need(tb.AddInput(sh(4096, 6144), fp16, block.Map{1, -1, -1}, 0))
	tm := need(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))
	accM := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, tm))
	rms := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, tx))
	to := need(tb.Add(ugraph.OpDiv, ugraph.Attr{}, accM, rms))
	need(0, tb.AddOutput(to, block.Map{1, -1, -1}))
	o := need(g.Customized([]kernel.TensorID{x, w}, tb))
	need(0, g.MarkOutput(o[0]))
	return g
}

func gatedMLP() *kernel.Graph {
	g := kernel.New()
	x := need(g.AddInput(sh(8, 4096), fp16))
	w1 := need(g.AddInput(sh(4096, 4096), fp16))
	w2 := need(g.AddInput(sh(4096, 4096), fp16))
	o1 := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w1))
	o2 := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w2))
	s := need(g.Add(ugraph.OpSilu, ugraph.Attr{}, o1))
	o := need(g.Add(ugraph.OpMul, ugraph.Attr{}, s, o2))
	need(0, g.MarkOutput(o))
	return g
}

func gatedMLPMugraph() *kernel.Graph {
	g := kernel.New()
	x := need(g.AddInput(sh(8, 4096), fp16))
	w1 := need(g.AddInput(sh(4096, 4096), fp16))
	w2 := need(g.AddInput(sh(4096, 4096), fp16))
	tb := need(block.New(block.Dim3{64, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := need(tb.AddInput(sh(8, 4096), fp16, block.Map{-1, -1, -1}, 1))
	tw1 := need(tb.AddInput(sh(4096, 4096), fp16, block.Map{1, -1, -1}, 0))
	tw2 := need(tb.AddInput(sh(4096, 4096), fp16, block.Map{1, -1, -1}, 0))
	ta1 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, need(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw1))))
	ta2 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, need(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw2))))
	to := need(tb.Add(ugraph.OpMul, ugraph.Attr{}, need(tb.Add(ugraph.OpSilu, ugraph.Attr{}, ta1)), ta2))
	need(0, tb.AddOutput(to, block.Map{1, -1, -1}))
	o := need(g.Customized([]kernel.TensorID{x, w1, w2}, tb))
	need(0, g.MarkOutput(o[0]))
	return g
}

func gqa() *kernel.Graph {
	g := kernel.New()
	q := need(g.AddInput(sh(2, 256, 64), fp16))
	k := need(g.AddInput(sh(2, 64, 4096), fp16))
	v := need(g.AddInput(sh(2, 4096, 64), fp16))
	a := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, q, k))
	e := need(g.Add(ugraph.OpExp, ugraph.Attr{}, a))
	s := need(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 2}, e))
	d := need(g.Add(ugraph.OpDiv, ugraph.Attr{}, e, s))
	o := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, d, v))
	need(0, g.MarkOutput(o))
	return g
}

func gqaMugraph() *kernel.Graph {
	g := kernel.New()
	q := need(g.AddInput(sh(2, 256, 64), fp16))
	k := need(g.AddInput(sh(2, 64, 4096), fp16))
	v := need(g.AddInput(sh(2, 4096, 64), fp16))

	tb1 := need(block.New(block.Dim3{2, 16, 1}, block.Dim3{128, 1, 1}, 4, 64))
	tq := need(tb1.AddInput(sh(2, 256, 64), fp16, block.Map{0, -1, -1}, -1))
	tk := need(tb1.AddInput(sh(2, 64, 4096), fp16, block.Map{0, 2, -1}, 2))
	tv := need(tb1.AddInput(sh(2, 4096, 64), fp16, block.Map{0, 1, -1}, 1))
	te := need(tb1.Add(ugraph.OpExp, ugraph.Attr{}, need(tb1.Add(ugraph.OpMatmul, ugraph.Attr{}, tq, tk))))
	ts := need(tb1.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, te))
	to := need(tb1.Add(ugraph.OpForloopAccum, ugraph.Attr{}, need(tb1.Add(ugraph.OpMatmul, ugraph.Attr{}, te, tv))))
	need(0, tb1.AddOutput(to, block.Map{0, 2, -1}))
	need(0, tb1.AddOutput(ts, block.Map{0, 2, -1}))
	parts := need(g.Customized([]kernel.TensorID{q, k, v}, tb1))

	tb2 := need(block.New(block.Dim3{2, 4, 1}, block.Dim3{128, 1, 1}, 1, 64))
	top := need(tb2.AddInput(g.Tensors[parts[0]].Shape, fp16, block.Map{0, 1, -1}, -1))
	tsp := need(tb2.AddInput(g.Tensors[parts[1]].Shape, fp16, block.Map{0, 1, -1}, -1))
	tos := need(tb2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, top))
	tss := need(tb2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, tsp))
	need(0, tb2.AddOutput(need(tb2.Add(ugraph.OpDiv, ugraph.Attr{}, tos, tss)), block.Map{0, 1, -1}))
	o := need(g.Customized(parts, tb2))
	need(0, g.MarkOutput(o[0]))
	return g
}

// everyOp uses every operator of both levels, every accumulator and every
// dtype, with attributes that are not round numbers, so that the codec and
// the printers see each of them.
func everyOp() *kernel.Graph {
	g := kernel.New()
	a := need(g.AddInput(sh(8, 64), ugraph.Float32))
	b := need(g.AddInput(sh(64, 64), ugraph.Float32))
	c := need(g.AddInput(sh(8, 1), ugraph.Float32))
	h := need(g.AddInput(sh(2, 3, 4, 5), ugraph.BFloat16))
	x := a
	for _, k := range []ugraph.OpKind{ugraph.OpExp, ugraph.OpSquare, ugraph.OpSqrt, ugraph.OpSilu, ugraph.OpGelu, ugraph.OpRelu, ugraph.OpLog} {
		x = need(g.Add(k, ugraph.Attr{}, x))
	}
	x = need(g.Add(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{-1.5, 1e-7}}, x))
	x = need(g.Add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.125}}, x))
	for _, k := range []ugraph.OpKind{ugraph.OpAdd, ugraph.OpMul, ugraph.OpDiv, ugraph.OpPow} {
		x = need(g.Add(k, ugraph.Attr{}, x, c))
	}
	m := need(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, b))
	r := need(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 1}, m))
	n := need(g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 2}, h))
	need(0, g.MarkOutput(r))

	tb := need(block.New(block.Dim3{2, 1, 1}, block.Dim3{32, 4, 1}, 4, 8))
	s0 := need(tb.AddInput(sh(8, 64), ugraph.Float32, block.Map{0, -1, -1}, 1))
	s1 := need(tb.AddInput(sh(64, 64), ugraph.Float32, block.Map{-1, -1, -1}, 0))
	s2 := need(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, s0, s1))
	s3 := need(tb.Add(ugraph.OpSub, ugraph.Attr{}, s2, s2))
	s4 := need(tb.Add(ugraph.OpReductionToDimx, ugraph.Attr{Dim: 1}, s3))
	s5 := need(tb.Add(ugraph.OpConcat, ugraph.Attr{Dim: 1}, s4, s4))
	s6 := need(tb.Add(ugraph.OpRMSNorm, ugraph.Attr{}, s5))
	s7 := need(tb.Add(ugraph.OpReduction, ugraph.Attr{Dim: 1}, s6))
	s8 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, s2))
	s9 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, s5))
	s10 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, s6))
	s11 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, s3))
	s12 := need(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, s7))
	s13 := need(tb.Add(ugraph.OpAdd, ugraph.Attr{}, need(tb.Add(ugraph.OpAdd, ugraph.Attr{}, s9, s10)), s12))
	need(0, tb.AddOutput(need(tb.Add(ugraph.OpExp, ugraph.Attr{}, s8)), block.Map{0, -1, -1}))
	need(0, tb.AddOutput(s11, block.Map{0, -1, -1}))
	need(0, tb.AddOutput(s13, block.Map{0, -1, -1}))
	outs := need(g.Customized([]kernel.TensorID{a, b}, tb))
	need(0, g.MarkOutput(outs[2]))
	need(0, g.MarkOutput(outs[0]))
	need(0, g.MarkOutput(n))
	return g
}

func encode(t testing.TB, f *kernel.File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Encode(&buf); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return buf.Bytes()
}

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(run go test -update and review the diff)", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d (run go test -update and review the diff)", path, len(gl), len(wl))
	}
}

// sameGraph reports how two kernel graphs differ, or "" when they are equal
// (block graphs compared by value).
func sameGraph(got, want *kernel.Graph) string {
	switch {
	case !reflect.DeepEqual(got.Tensors, want.Tensors):
		return fmt.Sprintf("tensors %v, want %v", got.Tensors, want.Tensors)
	case !reflect.DeepEqual(got.Ops, want.Ops):
		return fmt.Sprintf("ops %+v, want %+v", got.Ops, want.Ops)
	case !reflect.DeepEqual(got.Outputs, want.Outputs):
		return fmt.Sprintf("outputs %v, want %v", got.Outputs, want.Outputs)
	}
	return ""
}

// TestExamplesJSON pins the encoding of every example (testdata/*.ugraph.json,
// which a human reviews) and checks the round trip: decoding rebuilds the
// same graph, and encoding it again gives the same bytes.
func TestExamplesJSON(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			g := ex.build()
			data := encode(t, kernel.NewFile(ex.name, g))
			golden(t, ex.name+".ugraph.json", data)

			f, err := kernel.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if f.Name != ex.name || len(f.Graphs) != 1 || f.Meta != nil || f.Graphs[0].Meta != nil {
				t.Fatalf("decoded file %+v", f)
			}
			if d := sameGraph(f.Graphs[0].Graph, g); d != "" {
				t.Fatal(d)
			}
			if again := encode(t, f); !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs:\n%s\nfirst:\n%s", again, data)
			}
		})
	}
}

// A document is written as version 1 unless a block graph sets its
// pipeline depth, which version 2 added; both read back.
func TestFileVersion(t *testing.T) {
	g := rmsnormMatmulMugraph()
	if data := encode(t, kernel.NewFile("v", g)); !bytes.Contains(data, []byte(`"version": 1,`)) {
		t.Errorf("a document without stages is not version 1:\n%s", data)
	}
	for _, op := range g.Ops {
		if op.Block != nil {
			if err := op.Block.SetStages(3); err != nil {
				t.Fatal(err)
			}
		}
	}
	data := encode(t, kernel.NewFile("v", g))
	if !bytes.Contains(data, []byte(`"version": 2,`)) || !bytes.Contains(data, []byte(`"stages": 3`)) {
		t.Fatalf("a document with stages is not version 2:\n%s", data)
	}
	f, err := kernel.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if kernel.Hash(f.Graphs[0].Graph) != kernel.Hash(g) {
		t.Error("the version 2 document reads back as another graph")
	}
}

func TestEncodeFormat(t *testing.T) {
	data := encode(t, kernel.NewFile("rmsnorm_matmul", rmsnormMatmulMugraph()))
	if !bytes.HasSuffix(data, []byte("}\n")) || bytes.HasSuffix(data, []byte("\n\n")) {
		t.Error("document does not end in exactly one newline")
	}
	for _, want := range []string{
		`"format": "mirage-ugraph"`,
		`{"op": "input", "shape": [16, 4096], "dtype": "float16"}`,
		`{"op": "input", "shape": [16, 4096], "dtype": "float16", "imap": [-1, -1, -1], "fmap": 1, "tile": [16, 64]}`,
		`{"op": "forloop_accum", "in": [0], "accum": "rms", "shape": [16, 1]}`,
		`{"op": "output", "in": [5], "shape": [16, 6144], "omap": [1, -1, -1]}`,
		`"shapes": [[16, 6144]]`,
		`"outputs": [2]`,
	} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("document lacks %s:\n%s", want, data)
		}
	}
}

// candidates is a file of several graphs with metadata at both levels, as
// the search writes its candidate list.
func candidates() *kernel.File {
	return &kernel.File{
		Name: "candidates <&>",
		Meta: []byte(`{"seed": 7, "search": {"config": "mlp", "budget_s": 1.50}}`),
		Graphs: []kernel.Entry{
			{Graph: rmsnormMatmulMugraph(), Meta: []byte(`{"cost_us": 12.5, "tags": ["best", "fused"]}`)},
			{Graph: rmsnormMatmul()},
			{Graph: rmsnormMatmul(), Meta: []byte(`{}`)},
		},
	}
}

// Metadata is kept as written, up to whitespace, and graphs keep their order.
func TestMultipleGraphsAndMeta(t *testing.T) {
	f := candidates()
	data := encode(t, f)
	got, err := kernel.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != f.Name || len(got.Graphs) != 3 {
		t.Fatalf("decoded %q with %d graphs", got.Name, len(got.Graphs))
	}
	for i, e := range got.Graphs {
		if d := sameGraph(e.Graph, f.Graphs[i].Graph); d != "" {
			t.Errorf("graph %d: %s", i, d)
		}
	}
	wantMeta := []string{`{"cost_us":12.5,"tags":["best","fused"]}`, "", `{}`}
	for i, want := range wantMeta {
		if string(got.Graphs[i].Meta) != want {
			t.Errorf("graph %d meta %s, want %s", i, got.Graphs[i].Meta, want)
		}
	}
	if string(got.Meta) != `{"seed":7,"search":{"config":"mlp","budget_s":1.50}}` {
		t.Errorf("meta %s", got.Meta)
	}
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Errorf("re-encoding differs:\n%s\nfirst:\n%s", again, data)
	}
	if !bytes.Contains(data, []byte(`"name": "candidates <&>"`)) {
		t.Errorf("name is escaped:\n%s", data)
	}
}

func TestEncodeErrors(t *testing.T) {
	// The builders reject non-finite scalars, so damage a valid graph.
	clamp := func(lo float64) *kernel.Graph {
		g := kernel.New()
		x := need(g.AddInput(sh(4), fp16))
		need(g.Add(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{0, 1}}, x))
		g.Ops[1].Attr.Scalars[0] = lo
		return g
	}
	misnumbered := rmsnormMatmul()
	misnumbered.Ops[2].Out[0] = 7
	dangling := rmsnormMatmul()
	dangling.Ops[3].In[0] = 3
	tests := []struct {
		name string
		f    *kernel.File
		err  string
	}{
		{"no graphs", &kernel.File{Name: "x"}, "no graphs"},
		{"nil graph", kernel.NewFile("x", nil), "graph 0: nil graph"},
		{"NaN scalar", kernel.NewFile("x", rmsnormMatmul(), clamp(math.NaN())), "graph 1: op 1 (clamp): min is NaN"},
		{"infinite scalar", kernel.NewFile("x", clamp(math.Inf(-1))), "graph 0: op 1 (clamp): min is -Inf"},
		{"meta not an object", &kernel.File{Name: "x", Meta: []byte(`[1]`), Graphs: []kernel.Entry{{Graph: gqa()}}}, "meta: want an object"},
		{"meta not JSON", &kernel.File{Name: "x", Graphs: []kernel.Entry{{Graph: gqa(), Meta: []byte(`{`)}}}, "graph 0: meta is not valid JSON"},
		{"results out of order", kernel.NewFile("x", misnumbered), "graph 0: op 2 (rms_norm): result 0 is tensor 7, want 2"},
		{"operand not yet defined", kernel.NewFile("x", dangling), "graph 0: op 3 (matmul): operand 3 is not a tensor defined by an earlier op"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Encode(io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Encode: err = %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

// Pieces of documents for the malformed cases.
const (
	inX  = `{"op": "input", "shape": [16, 4096], "dtype": "float16"}`
	inW  = `{"op": "input", "shape": [4096, 6144], "dtype": "float16"}`
	head = `"grid": [96, 1, 1], "block_dim": [128, 1, 1], "forloop_range": 64, "reduction_dimx": 64`
	tX   = `{"op": "input", "shape": [16, 4096], "dtype": "float16", "imap": [-1, -1, -1], "fmap": 1}`
	tW   = `{"op": "input", "shape": [4096, 6144], "dtype": "float16", "imap": [1, -1, -1], "fmap": 0}`
	// The rest of the rmsnorm_matmul μGraph after its two input tiles.
	tRest = `{"op": "matmul", "in": [0, 1]}, {"op": "forloop_accum", "in": [2], "accum": "none"},
		{"op": "forloop_accum", "in": [0], "accum": "rms"}, {"op": "div", "in": [3, 4]},
		{"op": "output", "in": [5], "omap": [1, -1, -1]}`
)

// kdoc is a one-graph document with the given ops and outputs.
func kdoc(ops, outputs string) string {
	return `{"format": "mirage-ugraph", "version": 1, "name": "t", "graphs": [{"ops": [` + ops + `], "outputs": [` + outputs + `]}]}`
}

// bdoc is a document whose one customized op reads X and W and has the
// given block graph members.
func bdoc(members string) string {
	return kdoc(inX+", "+inW+`, {"op": "customized", "in": [0, 1], "block": {`+members+`}}`, "2")
}

// tdoc is bdoc with the usual launch parameters and the given block ops.
func tdoc(ops string) string { return bdoc(head + `, "ops": [` + ops + `]`) }

// The minimal documents the malformed cases start from must decode.
func TestMinimalDocuments(t *testing.T) {
	for _, doc := range []string{
		kdoc(inX+", "+inW+`, {"op": "rms_norm", "in": [0], "dim": 1}, {"op": "matmul", "in": [2, 1]}`, "3"),
		tdoc(tX + ", " + tW + ", " + tRest),
		tdoc(strings.Replace(tX, `"fmap": 1`, `"fmap": 1, "tile": [16, 64]`, 1) + ", " + tW + ", " + tRest),
	} {
		f, err := kernel.Decode(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("Decode(%s): %v", doc, err)
		}
		if d := sameGraph(f.Graphs[0].Graph, rmsnormMatmul()); strings.Contains(doc, "customized") {
			if d := sameGraph(f.Graphs[0].Graph, rmsnormMatmulMugraph()); d != "" {
				t.Error(d)
			}
		} else if d != "" {
			t.Error(d)
		}
	}
}

// malformed lists documents that Decode must reject, and what the error must
// say: where (graph, op, kind, field), then why.
var malformed = []struct {
	name, doc string
	where     string
	why       string
}{
	// The document as a whole.
	{"empty", "", "", "empty document"},
	{"only spaces", " \n\t", "", "empty document"},
	{"truncated", `{"format": "mirage-ugraph", "version": 1, "na`, "line 1, column 46", "truncated document"},
	{"truncated after newline", "{\"format\": \"mirage-ugraph\",\n", "line 2, column 1", "truncated document"},
	{"syntax error", "{\"format\": \"mirage-ugraph\",\n  , }", "line 2, column 3", "invalid character ','"},
	{"NaN literal", kdoc(inX+`, {"op": "clamp", "in": [0], "min": NaN, "max": 1}`, "1"), "line 1", "invalid character 'N'"},
	{"trailing garbage", kdoc(inX, "0") + "\n}", "line 2, column 1", "data after the end of the document"},
	{"two documents", kdoc(inX, "0") + kdoc(inX, "0"), "line 1, column 152", "data after the end of the document"},
	{"not an object", `[1, 2]`, "", "want an object, got an array"},
	{"wrong format", `{"format": "onnx", "version": 1}`, `field "format"`, `"onnx", want "mirage-ugraph"`},
	{"format missing", `{"version": 1}`, "", `missing field "format"`},
	{"format differs in case", `{"Format": "mirage-ugraph", "version": 1}`, "", `missing field "format"`},
	{"newer version", `{"format": "mirage-ugraph", "version": 3, "future": true}`, `field "version"`, "version 3 is not supported (this build reads versions 1 to 2)"},
	{"version 0", `{"format": "mirage-ugraph", "version": 0}`, `field "version"`, "version 0 is not supported"},
	{"stages in version 1", bdoc(`"grid": [96, 1, 1], "block_dim": [128, 1, 1], "forloop_range": 64, "reduction_dimx": 64, "stages": 2, "ops": [` + tX + ", " + tW + ", " + tRest + `]`),
		"graph 0: ", `op 2 (customized): field "stages" needs version 2, the document is version 1`},
	{"version as string", `{"format": "mirage-ugraph", "version": "1"}`, `field "version"`, "want an integer, got a string"},
	{"version as float", `{"format": "mirage-ugraph", "version": 1.0}`, `field "version"`, "want an integer, got 1.0"},
	{"version null", `{"format": "mirage-ugraph", "version": null}`, `field "version"`, "want an integer, got null"},
	{"name missing", `{"format": "mirage-ugraph", "version": 1, "graphs": []}`, "", `missing field "name"`},
	{"no graphs", `{"format": "mirage-ugraph", "version": 1, "name": "x", "graphs": []}`, `field "graphs"`, "no graphs"},
	{"graphs not an array", `{"format": "mirage-ugraph", "version": 1, "name": "x", "graphs": {}}`, `field "graphs"`, "want an array, got an object"},
	{"unknown top-level field", strings.Replace(kdoc(inX, "0"), `"name"`, `"cost": 3, "name"`, 1), "", `unknown field "cost"`},
	{"duplicate field", strings.Replace(kdoc(inX, "0"), `"name": "t"`, `"name": "t", "name": "u"`, 1), "", `duplicate field "name"`},
	{"meta not an object", strings.Replace(kdoc(inX, "0"), `"name"`, `"meta": [1], "name"`, 1), `field "meta"`, "want an object, got an array"},

	// Graph level.
	{"graph not an object", `{"format": "mirage-ugraph", "version": 1, "name": "x", "graphs": [[]]}`, "graph 0: ", "want an object, got an array"},
	{"outputs missing", strings.Replace(kdoc(inX, "0"), `, "outputs": [0]`, "", 1), "graph 0: ", `missing field "outputs"`},
	{"output out of range", kdoc(inX, "1"), `graph 0: field "outputs": element 0`, "tensor 1 does not exist"},
	{"output marked twice", kdoc(inX, "0, 0"), `graph 0: field "outputs": element 1`, "already an output"},
	{"output null", kdoc(inX, "null"), `graph 0: field "outputs": element 0`, "want an integer, got null"},
	{"unknown graph field", strings.Replace(kdoc(inX, "0"), `"ops"`, `"cost": 1, "ops"`, 1), "graph 0: ", `unknown field "cost"`},
	{"graph meta not an object", strings.Replace(kdoc(inX, "0"), `"ops"`, `"meta": "fast", "ops"`, 1), `graph 0: field "meta"`, "want an object, got a string"},

	// A graph that marks no output computes nothing, as the front end
	// says of a program (show and eval took it, and printed nothing).
	{"no outputs", kdoc(inX, ""), `graph 0: field "outputs"`, "empty: the graph computes nothing"},

	// Kernel ops.
	{"op not an object", kdoc(`3`, ""), "graph 0: op 0: ", "want an object, got a number"},
	{"op kind missing", kdoc(`{"in": [0]}`, ""), "graph 0: op 0: ", `missing field "op"`},
	{"op kind not a string", kdoc(`{"op": 5}`, ""), `graph 0: op 0: field "op"`, "want a string, got a number"},
	{"unknown op", kdoc(inX+`, {"op": "softmax", "in": [0]}`, ""), "graph 0: op 1: ", `unknown op "softmax"`},
	{"block op at kernel level", kdoc(inX+`, {"op": "forloop_accum", "in": [0], "accum": "sum"}`, ""), "graph 0: op 1: ", `op "forloop_accum" is not allowed in a kernel graph`},
	{"output op at kernel level", kdoc(inX+`, {"op": "output", "in": [0]}`, ""), "graph 0: op 1: ", `op "output" is not allowed in a kernel graph`},
	{"input without dtype", kdoc(`{"op": "input", "shape": [4]}`, ""), "graph 0: op 0 (input): ", `missing field "dtype"`},
	{"unknown dtype", kdoc(`{"op": "input", "shape": [4], "dtype": "int8"}`, ""), `graph 0: op 0 (input): field "dtype"`, `unknown dtype "int8"`},
	{"zero dim", kdoc(`{"op": "input", "shape": [16, 0], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape"`, "dim 1 is 0"},
	{"huge dim", kdoc(`{"op": "input", "shape": [16, 4294967296], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape"`, "dim 1 is 4294967296, want 1 to 1073741824"},
	{"elements that wrap to 0", kdoc(`{"op": "input", "shape": [1073741824, 1073741824, 1073741824, 1073741824], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape"`, "has more than 2^48 elements, the limit of one tensor"},
	{"elements past int64", kdoc(`{"op": "input", "shape": [1073741824, 1073741824, 4], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape"`, "has more than 2^48 elements"},
	{"broadcast past the element limit", kdoc(`{"op": "input", "shape": [1073741824, 1], "dtype": "float16"}, {"op": "input", "shape": [1, 1073741824], "dtype": "float16"}, {"op": "add", "in": [0, 1]}`, ""), "graph 0: op 2 (add): ", "shape [1073741824, 1073741824] has more than 2^48 elements"},
	{"grid past the element limit", bdoc(`"grid": [65535, 65535, 1], "block_dim": [128, 1, 1], "forloop_range": 1, "reduction_dimx": 1, "ops": [{"op": "input", "shape": [4096, 6144], "dtype": "float16", "imap": [-1, -1, -1], "fmap": -1}, {"op": "forloop_accum", "in": [0], "accum": "none"}, {"op": "output", "in": [1], "omap": [0, 1, -1]}]`), `graph 0: op 2 (customized): field "block": op 2 (output): `, "more than 2^48 elements"},
	{"dim beyond int", kdoc(`{"op": "input", "shape": [123456789012345678901234567890], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape": element 0`, "out of range"},
	{"dim in exponent form", kdoc(`{"op": "input", "shape": [1e3], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape": element 0`, "want an integer, got 1e3"},
	{"dim null", kdoc(`{"op": "input", "shape": [16, null], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape": element 1`, "want an integer, got null"},
	{"rank 5", kdoc(`{"op": "input", "shape": [1, 2, 3, 4, 5], "dtype": "float16"}`, ""), `graph 0: op 0 (input): field "shape"`, "rank 5"},
	{"input with operands", kdoc(`{"op": "input", "in": [0], "shape": [4], "dtype": "float16"}`, ""), "graph 0: op 0 (input): ", `unknown field "in"`},
	{"field name in another case", kdoc(`{"op": "input", "Shape": [4], "shape": [4], "dtype": "float16"}`, ""), "graph 0: op 0 (input): ", `unknown field "Shape"`},
	{"operand out of range", kdoc(inX+", "+inW+`, {"op": "matmul", "in": [0, 7]}`, ""), `graph 0: op 2 (matmul): field "in": element 1`, "tensor 7 is not defined by an earlier op (2 tensors so far)"},
	{"operand that would wrap to 0", kdoc(inX+", "+inW+`, {"op": "matmul", "in": [4294967296, 1]}`, ""), `graph 0: op 2 (matmul): field "in": element 0`, "tensor 4294967296 is not defined"},
	{"negative operand", kdoc(inX+`, {"op": "exp", "in": [-1]}`, ""), `graph 0: op 1 (exp): field "in": element 0`, "tensor -1 is not defined"},
	{"operand is the op itself", kdoc(inX+`, {"op": "exp", "in": [1]}`, ""), `graph 0: op 1 (exp): field "in": element 0`, "tensor 1 is not defined"},
	{"too few operands", kdoc(inX+`, {"op": "matmul", "in": [0]}`, ""), `graph 0: op 1 (matmul): field "in"`, "matmul takes 2 operands, got 1"},
	{"operands missing", kdoc(inX+`, {"op": "exp"}`, ""), "graph 0: op 1 (exp): ", `missing field "in"`},
	{"shapes do not fit", kdoc(inX+", "+inW+`, {"op": "matmul", "in": [1, 0]}`, ""), "graph 0: op 2 (matmul): ", "inner dims differ (6144 vs 16)"},
	{"dtypes differ", kdoc(inX+`, {"op": "input", "shape": [16, 4096], "dtype": "float32"}, {"op": "add", "in": [0, 1]}`, ""), "graph 0: op 2 (add): ", "operand dtypes differ (float16 vs float32)"},
	{"wrong result shape", kdoc(inX+", "+inW+`, {"op": "matmul", "in": [0, 1], "shape": [16, 6143]}`, ""), `graph 0: op 2 (matmul): field "shape"`, "the file says [16, 6143], the shape rules give [16, 6144]"},
	{"result shape of wrong rank", kdoc(inX+`, {"op": "exp", "in": [0], "shape": []}`, ""), `graph 0: op 1 (exp): field "shape"`, "the file says [], the shape rules give [16, 4096]"},
	{"attribute the kind lacks", kdoc(inX+`, {"op": "exp", "in": [0], "dim": 1}`, ""), "graph 0: op 1 (exp): ", `unknown field "dim"`},
	{"dtype on a computed tensor", kdoc(inX+`, {"op": "exp", "in": [0], "dtype": "float16"}`, ""), "graph 0: op 1 (exp): ", `unknown field "dtype"`},
	{"clamp without max", kdoc(inX+`, {"op": "clamp", "in": [0], "min": -1}`, ""), "graph 0: op 1 (clamp): ", `missing field "max"`},
	{"scalar as string", kdoc(inX+`, {"op": "mul_scalar", "in": [0], "scalar": "0.5"}`, ""), `graph 0: op 1 (mul_scalar): field "scalar"`, "want a number, got a string"},
	{"scalar beyond float64", kdoc(inX+`, {"op": "mul_scalar", "in": [0], "scalar": 1e999}`, ""), `graph 0: op 1 (mul_scalar): field "scalar"`, "number 1e999 is out of range"},
	{"reduction dim out of range", kdoc(inX+`, {"op": "reduction", "in": [0], "dim": 2}`, ""), "graph 0: op 1 (reduction): ", "dim 2 out of range for rank 2"},
	{"reduction dim fractional", kdoc(inX+`, {"op": "reduction", "in": [0], "dim": 0.5}`, ""), `graph 0: op 1 (reduction): field "dim"`, "want an integer, got 0.5"},
	{"rms_norm without dim", kdoc(inX+`, {"op": "rms_norm", "in": [0]}`, ""), "graph 0: op 1 (rms_norm): ", `missing field "dim"`},

	// Customized ops and their block graphs.
	{"customized without block", kdoc(inX+`, {"op": "customized", "in": [0]}`, ""), "graph 0: op 1 (customized): ", `missing field "block"`},
	{"customized with shape", strings.Replace(tdoc(tX+", "+tW+", "+tRest), `"in": [0, 1], "block"`, `"in": [0, 1], "shape": [16, 6144], "block"`, 1), "graph 0: op 2 (customized): ", `unknown field "shape"`},
	{"customized with wrong shapes", strings.Replace(tdoc(tX+", "+tW+", "+tRest), `"in": [0, 1], "block"`, `"in": [0, 1], "shapes": [[16, 6144], [1]], "block"`, 1), `graph 0: op 2 (customized): field "shapes"`, "the file says [[16, 6144], [1]], the shape rules give [[16, 6144]]"},
	{"customized operands swapped", strings.Replace(tdoc(tX+", "+tW+", "+tRest), `"in": [0, 1], "block"`, `"in": [1, 0], "block"`, 1), "graph 0: op 2 (customized): ", "input 0 is [4096, 6144] float16, but the threadblock graph's input 0 reads [16, 4096] float16"},
	{"block not an object", kdoc(inX+`, {"op": "customized", "in": [0], "block": []}`, ""), `graph 0: op 1 (customized): field "block"`, "want an object, got an array"},
	{"grid of two axes", bdoc(`"grid": [96, 1], "block_dim": [128, 1, 1], "forloop_range": 64, "reduction_dimx": 64, "ops": []`), `graph 0: op 2 (customized): field "block": field "grid"`, "want 3 entries (x, y, z), got 2"},
	{"empty grid axis", bdoc(`"grid": [0, 1, 1], "block_dim": [128, 1, 1], "forloop_range": 64, "reduction_dimx": 64, "ops": []`), `graph 0: op 2 (customized): field "block": `, "grid_dim (0, 1, 1): axis 0 is 0"},
	{"block_dim whose product wraps", bdoc(`"grid": [1, 1, 1], "block_dim": [4294967296, 4294967296, 1], "forloop_range": 1, "reduction_dimx": 1, "ops": []`), `graph 0: op 2 (customized): field "block": field "block_dim"`, "axis 0 is 4294967296, at most 1024"},
	{"too many threads", bdoc(`"grid": [1, 1, 1], "block_dim": [1024, 2, 1], "forloop_range": 1, "reduction_dimx": 1, "ops": []`), `graph 0: op 2 (customized): field "block": `, "2048 threads, at most 1024"},
	{"forloop_range missing", bdoc(`"grid": [1, 1, 1], "block_dim": [128, 1, 1], "reduction_dimx": 1, "ops": []`), `graph 0: op 2 (customized): field "block": `, `missing field "forloop_range"`},
	{"unknown block field", bdoc(head + `, "smem": 1, "ops": []`), `graph 0: op 2 (customized): field "block": `, `unknown field "smem"`},
	{"block without outputs", tdoc(tX + ", " + tW), "graph 0: op 2 (customized): ", "the threadblock graph has no output op"},
	{"customized at block level", tdoc(`{"op": "customized", "in": [], "block": {}}`), `graph 0: op 2 (customized): field "block": op 0: `, `op "customized" is not allowed in a threadblock graph`},
	{"imap entry out of range", tdoc(strings.Replace(tX, `"imap": [-1, -1, -1]`, `"imap": [5, -1, -1]`, 1)), `graph 0: op 2 (customized): field "block": op 0 (input): `, "entry 0 is 5"},
	{"imap of four entries", tdoc(strings.Replace(tX, `"imap": [-1, -1, -1]`, `"imap": [-1, -1, -1, -1]`, 1)), `graph 0: op 2 (customized): field "block": op 0 (input): field "imap"`, "want 3 entries (x, y, z), got 4"},
	{"fmap out of range", tdoc(strings.Replace(tX, `"fmap": 1`, `"fmap": 2`, 1)), `graph 0: op 2 (customized): field "block": op 0 (input): `, "forloop_dim 2"},
	{"fmap missing", tdoc(strings.Replace(tX, `, "fmap": 1`, "", 1)), `graph 0: op 2 (customized): field "block": op 0 (input): `, `missing field "fmap"`},
	{"inexact tile", tdoc(strings.Replace(tX, `"shape": [16, 4096]`, `"shape": [16, 4000]`, 1)), `graph 0: op 2 (customized): field "block": op 0 (input): `, "not divisible by 64"},
	{"wrong tile", tdoc(strings.Replace(tX, `"fmap": 1`, `"fmap": 1, "tile": [16, 32]`, 1)), `graph 0: op 2 (customized): field "block": op 0 (input): field "tile"`, "the file says [16, 32], the shape rules give [16, 64]"},
	{"tile id out of range", tdoc(tX + ", " + tW + `, {"op": "matmul", "in": [0, 9]}`), `graph 0: op 2 (customized): field "block": op 2 (matmul): field "in": element 1`, "tile 9 is not defined by an earlier op (2 tiles so far)"},
	{"unknown accumulator", tdoc(tX + ", " + tW + `, {"op": "forloop_accum", "in": [0], "accum": "max"}`), `graph 0: op 2 (customized): field "block": op 2 (forloop_accum): field "accum"`, `unknown accumulator "max"`},
	{"accumulator missing", tdoc(tX + ", " + tW + `, {"op": "forloop_accum", "in": [0]}`), `graph 0: op 2 (customized): field "block": op 2 (forloop_accum): `, `missing field "accum"`},
	{"accumulator null", tdoc(tX + ", " + tW + `, {"op": "forloop_accum", "in": [0], "accum": null}`), `graph 0: op 2 (customized): field "block": op 2 (forloop_accum): field "accum"`, "want a string, got null"},
	{"output of an in-loop tile", tdoc(tX + ", " + tW + `, {"op": "output", "in": [0], "omap": [-1, -1, -1]}`), `graph 0: op 2 (customized): field "block": op 2 (output): `, "computed inside the for-loop"},
	{"output of two tiles", tdoc(tX + ", " + tW + `, {"op": "output", "in": [0, 1], "omap": [-1, -1, -1]}`), `graph 0: op 2 (customized): field "block": op 2 (output): field "in"`, "output takes 1 operands, got 2"},
	{"output with wrong device shape", tdoc(tX + ", " + tW + ", " + strings.Replace(tRest, `"omap": [1, -1, -1]`, `"omap": [1, -1, -1], "shape": [16, 64]`, 1)), `graph 0: op 2 (customized): field "block": op 6 (output): field "shape"`, "the file says [16, 64], the shape rules give [16, 6144]"},
	{"mixing loop and post-loop tiles", tdoc(tX + ", " + tW + `, {"op": "forloop_accum", "in": [0], "accum": "none"}, {"op": "add", "in": [0, 2]}`), `graph 0: op 2 (customized): field "block": op 3 (add): `, "combines a tile from inside the for-loop"},
	{"rms_norm off the last dim", tdoc(tX + ", " + tW + `, {"op": "rms_norm", "in": [0], "dim": 0}`), `graph 0: op 2 (customized): field "block": op 2 (rms_norm): field "dim"`, "0, but a threadblock rms_norm always works on the last dim (1)"},
	{"concat at kernel level", kdoc(inX+`, {"op": "concat", "in": [0, 0], "dim": 1}`, ""), "graph 0: op 1: ", `op "concat" is not allowed in a kernel graph`},
}

func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			f, err := kernel.Decode(strings.NewReader(tt.doc))
			if err == nil {
				t.Fatalf("Decode succeeded with %d graphs; want an error", len(f.Graphs))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.where) || !strings.Contains(msg, tt.why) {
				t.Fatalf("error %q\nwant it to start with %q and contain %q", msg, tt.where, tt.why)
			}
		})
	}
}

// Decode must never read without bound.
func TestDecodeSizeLimit(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"name": "`), neverEnding('x'))
	_, err := kernel.Decode(r)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestReadWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gqa_mugraph.ugraph.json")
	f := kernel.NewFile("gqa_mugraph", gqaMugraph())
	if err := kernel.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := kernel.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameGraph(got.Graphs[0].Graph, f.Graphs[0].Graph); d != "" {
		t.Fatal(d)
	}

	// Errors name the path.
	bad := filepath.Join(dir, "bad.ugraph.json")
	if err := os.WriteFile(bad, []byte(kdoc(inX, "3")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kernel.ReadFile(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": graph 0: ") {
		t.Errorf("ReadFile(bad) error = %v", err)
	}
	missing := filepath.Join(dir, "missing.ugraph.json")
	if _, err := kernel.ReadFile(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v", err)
	}

	// A graph that cannot be encoded leaves the old file alone and no
	// temporary file behind.
	before, _ := os.ReadFile(path)
	err = kernel.WriteFile(path, &kernel.File{Name: "empty"})
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("WriteFile(no graphs) error = %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("a failed WriteFile changed the file")
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("directory holds %d entries, want 2", len(es))
	}
}

// FuzzDecode feeds Decode arbitrary bytes. It must never panic, and a
// document it accepts must be a fixed point of Encode after one round:
// encoding, decoding and encoding again gives the same bytes and graphs.
func FuzzDecode(f *testing.F) {
	for _, ex := range examples {
		f.Add(encode(f, kernel.NewFile(ex.name, ex.build())))
	}
	for _, m := range malformed {
		f.Add([]byte(m.doc))
	}
	f.Add([]byte(tdoc(tX + ", " + tW + ", " + tRest)))
	f.Add(encode(f, candidates()))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := kernel.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := file.Encode(&first); err != nil {
			t.Fatalf("a decoded file does not encode: %v", err)
		}
		again, err := kernel.Decode(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("an encoded file does not decode: %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if err := again.Encode(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("encoding is not stable:\n%s\nthen:\n%s", first.Bytes(), second.Bytes())
		}
		if again.Name != file.Name || len(again.Graphs) != len(file.Graphs) {
			t.Fatalf("file %q with %d graphs became %q with %d", file.Name, len(file.Graphs), again.Name, len(again.Graphs))
		}
		for i := range file.Graphs {
			if d := sameGraph(again.Graphs[i].Graph, file.Graphs[i].Graph); d != "" {
				t.Fatalf("graph %d: %s", i, d)
			}
		}
	})
}
