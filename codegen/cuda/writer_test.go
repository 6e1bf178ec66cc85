package cuda

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A scalar is printed as the float32 literal the kernels compute with,
// and refused where float32 would make it another number: infinite, or
// zero where it is not.
func TestFloatLit(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string // "": refused
	}{
		{1, "1.0f"},
		{0.08838834764831845, "0.088388346f"},
		{-2.5e-3, "-0.0025f"},
		{0, "0.0f"},
		{1e-40, "1e-40f"}, // a float32 subnormal: kept
		{1e308, ""},
		{-1e39, ""},
		{1e-46, ""}, // zero in float32
		{math.NaN(), ""},
	} {
		got, err := floatLit(tt.v)
		if (err == nil) != (tt.want != "") || got != tt.want {
			t.Errorf("floatLit(%v) = %q, %v; want %q", tt.v, got, err, tt.want)
		}
	}
}

// TestHeaderTableAligns checks that the header's table of tensors keeps
// its columns in line past ten inputs and for shapes wider than a
// matrix's, and reads as before for a small program.
func TestHeaderTableAligns(t *testing.T) {
	small := loadSource(t, "small",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(8, 4096), dtype=mi.float16)",
		"W = g.new_input(dims=(4096, 11008), dtype=mi.float16)",
		"g.mark_output(g.matmul(X, W))")
	want := []string{
		"//   inputs[0]   float16  [8, 4096]        strides [4096 1]",
		"//   inputs[1]   float16  [4096, 11008]    strides [11008 1]",
		"//   outputs[0]  float16  [8, 11008]       strides [11008 1]",
	}
	if got := tableLines(t, small); !slices.Equal(got, want) {
		t.Errorf("small program's table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	src := []string{"g = mi.new_kernel_graph()", "x = g.new_input(dims=(8, 8, 128, 1024), dtype=mi.bfloat16)"}
	for k := range 11 {
		src = append(src, fmt.Sprintf("x = g.add(x, g.new_input(dims=(8, 8, 128, 1024), dtype=mi.bfloat16))  # %d", k))
	}
	src = append(src, "g.mark_output(x)")
	wide := tableLines(t, loadSource(t, "wide", src...))
	if len(wide) != 13 {
		t.Fatalf("the table has %d rows, want 13 (12 inputs, an output):\n%s", len(wide), strings.Join(wide, "\n"))
	}
	for _, l := range wide {
		if !strings.Contains(l, "[8, 8, 128, 1024] strides [1048576 131072 1024 1]") || strings.Index(l, "bfloat16") != strings.Index(wide[0], "bfloat16") ||
			strings.Index(l, "strides") != strings.Index(wide[0], "strides") {
			t.Errorf("row out of line:\n%s\nwith the first:\n%s", l, wide[0])
		}
	}
}

// tableLines is the lines of g's emitted header that describe a tensor.
func tableLines(t *testing.T, g *kernel.Graph) []string {
	t.Helper()
	res, err := Emit("table", g, Options{Arch: sm90})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range res.Files {
		if f.Name != "table.h" {
			continue
		}
		for _, l := range strings.Split(string(f.Data), "\n") {
			if strings.HasPrefix(l, "//   inputs[") || strings.HasPrefix(l, "//   outputs[") {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

func TestUsesIdent(t *testing.T) {
	for _, c := range []struct {
		text, name string
		want       bool
	}{
		{"x = i0 + 1;", "i0", true},
		{"i0", "i0", true},
		{"x = i01;", "i0", false},       // inside a longer identifier
		{"x = ai0;", "i0", false},       // and at its end
		{"x = _i0;", "i0", false},       // underscores are identifier bytes
		{"x = a[i0];", "i0", true},      // brackets are not
		{"x = 1; // i0\n", "i0", false}, // in a comment
		{"// i0\ny = i0;", "i0", true},  // a later line is code again
		{"y = i0; // i0", "i0", true},
		{"y = i01; // i0\nz = i0", "i0", true},
		{"y = 2;", "", false},
		{"it// x", "it", true}, // a comment right after it
	} {
		if got := usesIdent(c.text, c.name); got != c.want {
			t.Errorf("usesIdent(%q, %q) = %v, want %v", c.text, c.name, got, c.want)
		}
	}
}

// The path emit was given goes into // comments of NAME.cu and NAME.h; one
// with a newline or a trailing backslash (legal file names) stays in its
// comment, quoted, and the files hold no line of it outside a comment
// (found by review: `mirage emit $'a\n#error injected\n.ugraph.json'`).
func TestSourcePathStaysInComment(t *testing.T) {
	f, err := kernel.Decode(strings.NewReader(`{"format": "mirage-ugraph", "version": 1, "name": "s", "graphs": [{"ops": [
		{"op": "input", "shape": [16, 64], "dtype": "float16"}, {"op": "exp", "in": [0]}], "outputs": [1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"docs/a\n#error injected\n.ugraph.json", "docs/a\r#error injected.ugraph.json", `docs\`} {
		res, err := Emit("s", f.Graphs[0].Graph, Options{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range res.Files {
			text := string(file.Data)
			if named := strings.HasSuffix(file.Name, ".cu") || strings.HasSuffix(file.Name, ".h"); named && !strings.Contains(text, strconv.Quote(src)) {
				t.Errorf("%s names the source %q otherwise than as %s", file.Name, src, strconv.Quote(src))
			}
			for i, line := range strings.Split(text, "\n") {
				if strings.Contains(line, "#error injected") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					t.Errorf("%s line %d: the source path left its comment: %q", file.Name, i+1, line)
				}
			}
		}
	}
}
