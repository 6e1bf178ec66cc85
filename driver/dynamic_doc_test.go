package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
)

// disagreeingBuckets is a dynamic document (meta.dynamic as superopt
// --dynamic writes it) of two buckets whose graphs disagree on a static tensor: bucket 2's
// weight is [64, 32], bucket 1's [64, 128] (and so its output [1, 128]).
const disagreeingBuckets = `{"format": "mirage-ugraph", "version": 1, "name": "dyn2",
 "meta": {"dynamic": {"inputs": [0, -1], "outputs": [0], "lo": 1, "hi": 2, "buckets": [1, 2]}},
 "graphs": [
  {"meta": {"bucket": 1, "rows": 1}, "ops": [
    {"op": "input", "shape": [1, 64], "dtype": "float16"},
    {"op": "input", "shape": [64, 128], "dtype": "float16"},
    {"op": "rms_norm", "in": [0], "dim": 1},
    {"op": "matmul", "in": [2, 1]}], "outputs": [3]},
  {"meta": {"bucket": 2, "rows": 2}, "ops": [
    {"op": "input", "shape": [2, 64], "dtype": "float16"},
    {"op": "input", "shape": [64, 32], "dtype": "float16"},
    {"op": "rms_norm", "in": [0], "dim": 1},
    {"op": "matmul", "in": [2, 1]}], "outputs": [3]}]}`

// TestEmitDynamicBucketsAgreeButInM: emit writes one entry point whose
// header gives each tensor one shape, so a document whose buckets give a
// static tensor different shapes is refused, naming the tensor (found by
// review: NAME.h asked for inputs[1] as [64, 32] and the code read it as
// [64, 128] for m = 1, and wrote outputs[0] as [1, 128]).
func TestEmitDynamicBucketsAgreeButInM(t *testing.T) {
	dir := t.TempDir()
	in, err := LoadSource("dyn2.ugraph.json", []byte(disagreeingBuckets), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	e, err := Emit(context.Background(), in, EmitRequest{Dir: out})
	if err == nil {
		h, _ := os.ReadFile(filepath.Join(out, e.Code.Name+".h"))
		cu, _ := os.ReadFile(filepath.Join(out, e.Code.Name+".cu"))
		var hdr, code []string
		for _, l := range strings.Split(string(h), "\n") {
			if strings.Contains(l, "inputs[1]") || strings.Contains(l, "outputs[0]") {
				hdr = append(hdr, strings.TrimSpace(l))
			}
		}
		for _, l := range strings.Split(string(cu), "\n") {
			if strings.Contains(l, "// input 1 [") || strings.Contains(l, "// output 0 [") {
				code = append(code, strings.TrimSpace(l))
			}
		}
		t.Fatalf("emit accepted buckets that disagree on a static tensor's shape; NAME.h says %q, the code %q", hdr, code)
	}
	if !strings.Contains(err.Error(), "bucket 2: input 1: [64, 32] float16, not [64, 128] float16") {
		t.Errorf("the error does not name the tensor: %v", err)
	}
}

// A document's own "name" names emit's files as --name does, so it must be
// a file name too (found by review: "sub/x" reached the file writer, whose
// error named neither the field nor the fault, and a newline made a file
// name with a newline in it).
func TestEmitDocumentNameIsAFileName(t *testing.T) {
	for _, name := range []string{"sub/x", "../../evil", "a\nb", ".."} {
		doc := fmt.Sprintf(`{"format": "mirage-ugraph", "version": 1, "name": %q, "graphs": [{"ops": [
		{"op": "input", "shape": [16, 64], "dtype": "float16"}, {"op": "exp", "in": [0]}], "outputs": [1]}]}`, name)
		dir := t.TempDir()
		in, err := LoadSource("d.ugraph.json", []byte(doc), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Emit(context.Background(), in, EmitRequest{Dir: filepath.Join(dir, "out")})
		if want := fmt.Sprintf("d.ugraph.json: the program's name %q is not a file name", name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("emit of a document named %q: %v, want %q", name, err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
			t.Errorf("emit of a document named %q left %s", name, filepath.Join(dir, "out"))
		}
		// --name names the files instead.
		if _, err := Emit(context.Background(), in, EmitRequest{Dir: filepath.Join(dir, "out"), Name: "x"}); err != nil {
			t.Errorf("emit --name x of a document named %q: %v", name, err)
		}
	}
}
