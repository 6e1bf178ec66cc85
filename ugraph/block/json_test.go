package block_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

func need[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// rmsnormMatmul is the block graph of examples/rmsnorm_matmul_mugraph.py.
func rmsnormMatmul() *block.Graph {
	fp16 := ugraph.Float16
	b := need(block.New(block.Dim3{96, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := need(b.AddInput(ugraph.MustShape(16, 4096), fp16, block.Map{-1, -1, -1}, 1))
	tw := need(b.AddInput(ugraph.MustShape(4096, 6144), fp16, block.Map{1, -1, -1}, 0))
	acc := need(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, need(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))))
	rms := need(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, tx))
	need(0, b.AddOutput(need(b.Add(ugraph.OpDiv, ugraph.Attr{}, acc, rms)), block.Map{1, -1, -1}))
	return b
}

const want = `{"grid":[96,1,1],"block_dim":[128,1,1],"forloop_range":64,"reduction_dimx":64,"ops":[` +
	`{"op":"input","shape":[16,4096],"dtype":"float16","imap":[-1,-1,-1],"fmap":1,"tile":[16,64]},` +
	`{"op":"input","shape":[4096,6144],"dtype":"float16","imap":[1,-1,-1],"fmap":0,"tile":[64,64]},` +
	`{"op":"matmul","in":[0,1],"shape":[16,64]},` +
	`{"op":"forloop_accum","in":[2],"accum":"none","shape":[16,64]},` +
	`{"op":"forloop_accum","in":[0],"accum":"rms","shape":[16,1]},` +
	`{"op":"div","in":[3,4],"shape":[16,64]},` +
	`{"op":"output","in":[5],"shape":[16,6144],"omap":[1,-1,-1]}]}`

// A block graph goes through encoding/json like any value: alone, or as a
// member of a larger document.
func TestJSONRoundTrip(t *testing.T) {
	b := rmsnormMatmul()
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != want {
		t.Fatalf("json.Marshal:\n%s\nwant:\n%s", data, want)
	}
	var got block.Graph
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, b) {
		t.Fatalf("decoded %+v\nwant %+v", got, *b)
	}

	// A pipeline depth, written only when set, round-trips too.
	if err := b.SetStages(2); err != nil {
		t.Fatal(err)
	}
	staged := strings.Replace(want, `"reduction_dimx":64,`, `"reduction_dimx":64,"stages":2,`, 1)
	if data, err := json.Marshal(b); err != nil || string(data) != staged {
		t.Fatalf("json.Marshal with 2 stages: %s, %v\nwant:\n%s", data, err, staged)
	}
	got = block.Graph{}
	if err := json.Unmarshal([]byte(staged), &got); err != nil || !reflect.DeepEqual(&got, b) {
		t.Fatalf("decoded %+v, %v\nwant %+v", got, err, *b)
	}
	b.Stages = 0

	var doc struct {
		Kernel *block.Graph `json:"kernel"`
	}
	if err := json.Unmarshal([]byte(`{"kernel": `+want+`}`), &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Kernel, b) {
		t.Fatalf("decoded member %+v", doc.Kernel)
	}
}

func TestUnmarshalJSONErrors(t *testing.T) {
	tests := []struct {
		doc, err string
	}{
		{`[]`, "want an object, got an array"},
		{strings.Replace(want, `"accum":"rms"`, `"accum":"RMS"`, 1), `op 4 (forloop_accum): field "accum": unknown accumulator "RMS"`},
		{strings.Replace(want, `"in":[3,4]`, `"in":[3,4,5]`, 1), `op 5 (div): field "in": div takes 2 operands, got 3`},
		{strings.Replace(want, `"in":[3,4]`, `"in":[3,6]`, 1), `op 5 (div): field "in": element 1: tile 6 is not defined by an earlier op (5 tiles so far)`},
		{strings.Replace(want, `"tile":[64,64]`, `"tile":[64,64],"tile":[64,64]`, 1), `op 1: duplicate field "tile"`},
		{strings.Replace(want, `"forloop_range":64`, `"forloop_range":0`, 1), "forloop_range 0, want 1 to 1073741824"},
		{strings.Replace(want, `"reduction_dimx":64,`, ``, 1), `missing field "reduction_dimx"`},
		{strings.Replace(want, `"reduction_dimx":64,`, `"reduction_dimx":64,"stages":9,`, 1), `field "stages": stages 9, want 0 (the default) to 8`},
		{strings.Replace(want, `"reduction_dimx":64,`, `"reduction_dimx":64,"stages":-1,`, 1), `field "stages": stages -1`},
		{strings.Replace(want, `"reduction_dimx":64,`, `"reduction_dimx":64,"stages":2.5,`, 1), `field "stages"`},
		{strings.Replace(want, `{"op":"matmul"`, `{"op":"customized"`, 1), `op 2: op "customized" is not allowed in a threadblock graph`},
		{strings.Replace(want, `"fmap":0`, `"fmap":0,"omap":[1,-1,-1]`, 1), `op 1 (input): unknown field "omap"`},
	}
	for _, tt := range tests {
		var g block.Graph
		err := json.Unmarshal([]byte(tt.doc), &g)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Unmarshal: err = %v, want it to contain %q", err, tt.err)
		}
	}
}

// MarshalJSON reports a graph assembled inconsistently by hand instead of
// panicking.
func TestMarshalJSONErrors(t *testing.T) {
	dangling := rmsnormMatmul()
	dangling.Ops[2].Out = 40
	forward := rmsnormMatmul()
	forward.Ops[3].In[0] = 5
	nan := rmsnormMatmul()
	nan.Ops[2] = block.Op{Kind: ugraph.OpClamp, In: [2]block.TensorID{0, -1}, Out: 2, Attr: ugraph.Attr{Scalars: [2]float64{0, math.NaN()}}}
	kernelOnly := rmsnormMatmul()
	kernelOnly.Ops[2].Kind = ugraph.OpCustomized
	for _, tt := range []struct {
		g   *block.Graph
		err string
	}{
		{dangling, "op 2 (matmul): result is tile 40, want 2"},
		{forward, "op 3 (forloop_accum): operand 5 is not a tile defined by an earlier op"},
		{nan, "op 2 (clamp): max is NaN"},
		{kernelOnly, "op 2 (customized): not a threadblock op"},
	} {
		if _, err := tt.g.MarshalJSON(); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("MarshalJSON: err = %v, want it to contain %q", err, tt.err)
		}
	}
}

// UnmarshalJSON may be called directly, on bytes that encoding/json has not
// checked: it must reject malformed JSON without panicking.
func TestUnmarshalJSONMalformed(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"grid"`, `{"grid": [1, 1, 1]`, `{"grid": [1, 1, 1],}`, want[:len(want)-3], want + `}`} {
		var g block.Graph
		if err := g.UnmarshalJSON([]byte(doc)); err == nil {
			t.Errorf("UnmarshalJSON(%q) succeeded", doc)
		}
	}
}

// FuzzUnmarshalJSON: UnmarshalJSON never panics, and a graph it accepts
// survives MarshalJSON and UnmarshalJSON unchanged.
func FuzzUnmarshalJSON(f *testing.F) {
	f.Add([]byte(want))
	f.Add([]byte(`{"grid": [2, 1, 1], "block_dim": [32, 1, 1], "forloop_range": 2, "reduction_dimx": 4, "stages": 3, "ops": [` +
		`{"op": "input", "shape": [4, 8], "dtype": "bfloat16", "imap": [0, -1, -1], "fmap": 1},` +
		`{"op": "clamp", "in": [0], "min": -1, "max": 0.5}, {"op": "forloop_accum", "in": [1], "accum": "sum_todimx"},` +
		`{"op": "output", "in": [2], "omap": [0, -1, -1]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var g block.Graph
		if err := g.UnmarshalJSON(data); err != nil {
			return
		}
		enc, err := g.MarshalJSON()
		if err != nil {
			t.Fatalf("a decoded graph does not encode: %v", err)
		}
		var again block.Graph
		if err := again.UnmarshalJSON(enc); err != nil {
			t.Fatalf("an encoded graph does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(&again, &g) {
			t.Fatalf("round trip changed the graph:\n%+v\n%+v", again, g)
		}
	})
}
