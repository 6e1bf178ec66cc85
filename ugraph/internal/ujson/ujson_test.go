package ujson

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

func TestParseObject(t *testing.T) {
	o, err := ParseObject(json.RawMessage(`{"b": 1, "a": [1, 2], "c": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Has("a") || o.Has("A") {
		t.Error("Has matches names inexactly")
	}
	if n, err := o.Int("b"); err != nil || n != 1 {
		t.Errorf("Int(b) = %d, %v", n, err)
	}
	// Unread names the first unread member in document order.
	if err := o.Unread(); err == nil || err.Error() != `unknown field "a"` {
		t.Errorf("Unread = %v", err)
	}
	if _, err := o.Int("zz"); err == nil || err.Error() != `missing field "zz"` {
		t.Errorf("Int(zz) = %v", err)
	}

	for _, tt := range []struct{ doc, err string }{
		{`[1]`, "want an object, got an array"},
		{`null`, "want an object, got null"},
		{`{"a": 1, "a": 2}`, `duplicate field "a"`},
		{`{"a": 1, "A": 2}`, ""},
	} {
		_, err := ParseObject(json.RawMessage(tt.doc))
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseObject(%s) = %v, want %q", tt.doc, err, tt.err)
		}
	}
}

func TestScalars(t *testing.T) {
	ints := []struct {
		in   string
		want int
		err  string
	}{
		{`0`, 0, ""},
		{`-1`, -1, ""},
		{`1073741824`, 1 << 30, ""},
		{`1.0`, 0, "want an integer, got 1.0"},
		{`1e3`, 0, "want an integer, got 1e3"},
		{`"1"`, 0, "want an integer, got a string"},
		{`null`, 0, "got null"},
		{`true`, 0, "got a boolean"},
		{`99999999999999999999`, 0, "out of range"},
	}
	for _, tt := range ints {
		got, err := Int(json.RawMessage(tt.in))
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) || got != tt.want {
			t.Errorf("Int(%s) = %d, %v; want %d, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
	floats := []struct {
		in   string
		want float64
		err  string
	}{
		{`-1.5`, -1.5, ""},
		{`1e-7`, 1e-7, ""},
		{`-0`, math.Copysign(0, -1), ""},
		{`1e999`, 0, "out of range"},
		{`"NaN"`, 0, "want a number, got a string"},
	}
	for _, tt := range floats {
		got, err := Float(json.RawMessage(tt.in))
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) || got != tt.want {
			t.Errorf("Float(%s) = %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
	if _, err := Ints(json.RawMessage(`[1, null]`)); err == nil || err.Error() != "element 1: want an integer, got null" {
		t.Errorf("Ints([1, null]) = %v", err)
	}
	if _, err := IntLists(json.RawMessage(`[[1], 2]`)); err == nil || err.Error() != "element 1: want an array of integers, got a number" {
		t.Errorf("IntLists([[1], 2]) = %v", err)
	}
	if s, err := String(json.RawMessage(`"a\u00e9\n"`)); err != nil || s != "aé\n" {
		t.Errorf("String = %q, %v", s, err)
	}
}

func TestIndent(t *testing.T) {
	in := `{"format":"x","n":[1,2],"nested":[[1,2],[3]],"empty":{},"none":[],"ops":[{"op":"a","in":[0]},{"op":"b","block":{"k":1e-7,"s":"<&>\u00e9"}}],"meta":{"z":null,"t":true}}`
	want := `{
  "format": "x",
  "n": [1, 2],
  "nested": [[1, 2], [3]],
  "empty": {},
  "none": [],
  "ops": [
    {"op": "a", "in": [0]},
    {
      "op": "b",
      "block": {"k": 1e-7, "s": "<&>é"}
    }
  ],
  "meta": {"z": null, "t": true}
}
`
	var buf bytes.Buffer
	if err := Indent(&buf, []byte(in)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Fatalf("Indent:\n%s\nwant:\n%s", buf.String(), want)
	}
	var again bytes.Buffer
	if err := Indent(&again, buf.Bytes()); err != nil || again.String() != want {
		t.Fatalf("Indent is not idempotent: %v\n%s", err, again.String())
	}
	if err := Indent(&again, []byte(`{} {}`)); err == nil {
		t.Error("Indent accepted two values")
	}
}

// Every kind that uses scalars needs names for them; a kind added to the op
// table without them fails here rather than in a user's file.
func TestAttrNamesCoverEveryKind(t *testing.T) {
	noisy := ugraph.Attr{Dim: 3, Scalars: [2]float64{-0.5, 2.25}, Accum: ugraph.AccumSumToDimx}
	for _, l := range []ugraph.Level{ugraph.LevelKernel, ugraph.LevelBlock} {
		for _, k := range ugraph.OpKinds(l) {
			if got, want := len(scalarNames[k]), k.Info().Scalars; got != want {
				t.Errorf("%v: %d scalar names, want %d", k, got, want)
			}
			j, err := EncodeAttr(k, noisy)
			if err != nil {
				t.Errorf("EncodeAttr(%v): %v", k, err)
				continue
			}
			data, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			o, err := ParseObject(data)
			if err != nil {
				t.Fatal(err)
			}
			a, err := DecodeAttr(k, o)
			if err != nil {
				t.Errorf("DecodeAttr(%v, %s): %v", k, data, err)
			}
			if err := o.Unread(); err != nil {
				t.Errorf("%v: %s has members DecodeAttr does not read: %v", k, data, err)
			}
			if want := ugraph.Canonical(k, noisy); a != want {
				t.Errorf("%v: decoded %+v, want %+v", k, a, want)
			}
			if n := len(AttrText(k, noisy)); n != len(o.names) {
				t.Errorf("%v: AttrText has %d entries, JSON %d members", k, n, len(o.names))
			}
		}
	}
	if _, err := EncodeAttr(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{math.Inf(1)}}); err == nil || !strings.Contains(err.Error(), "scalar is +Inf") {
		t.Errorf("EncodeAttr(+Inf) = %v", err)
	}
	if got := strings.Join(AttrText(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{-1, 1e-7}}), ", "); got != "min=-1, max=1e-07" {
		t.Errorf("AttrText(clamp) = %q", got)
	}
}

func TestDerived(t *testing.T) {
	o, err := ParseObject(json.RawMessage(`{"shape": [16, 64], "empty": []}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.Derived("shape")
	if err != nil || d.Check(ugraph.MustShape(16, 64)) != nil {
		t.Errorf("Derived(shape) = %v; check %v", err, d.Check(ugraph.MustShape(16, 64)))
	}
	if err := d.Check(ugraph.MustShape(16, 64, 1)); err == nil || err.Error() != `field "shape": the file says [16, 64], the shape rules give [16, 64, 1]` {
		t.Errorf("Check = %v", err)
	}
	if d, _ := o.Derived("empty"); d.Check(ugraph.MustShape(1)) == nil {
		t.Error("an empty shape matched")
	}
	if d, _ := o.Derived("absent"); d.Check(ugraph.MustShape(1)) != nil {
		t.Error("an absent shape did not match")
	}
}
