package rewrite

import (
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend/pylex"
)

// checkColumns checks that every name of the rewritten code that the
// program wrote (not one a rewrite put in) maps back to the same name in
// the program, at the column where the program has it. Lines holding an
// import are left out: the assignment an import becomes names what the
// statement binds, elsewhere. The names in made are left out too: the
// rewrite may put them in (None, for a slice's missing bound).
func checkColumns(t *testing.T, src string, res Result, made ...string) {
	t.Helper()
	type at struct{ line, col int }
	names := map[at]string{}
	imports := map[int]bool{}
	for _, s := range lex(src) {
		if s.Kind == pylex.Name {
			names[at{s.Line, s.Col}] = s.Text
			if s.Text == "import" {
				imports[s.Line] = true
			}
		}
	}
	for _, c := range lex(res.Code) {
		if c.Kind != pylex.Name || strings.HasPrefix(c.Text, "__mirage_") || imports[c.Line] || slices.Contains(made, c.Text) {
			continue
		}
		col := res.Columns.Source(c.Line, c.Col)
		// An import's assignment maps to where its statement starts, which
		// is "from" on a line of its own where the statement continues
		// ("from m \\\n import x").
		if got := names[at{c.Line, col}]; got != c.Text && got != "from" && got != "import" {
			t.Fatalf("%q became %q: %s at %d:%d maps to column %d, where the program has %q", src, res.Code, c.Text, c.Line, c.Col, col, got)
		}
	}
}

// A position in the rewritten code names the column the user wrote:
// decorators and asserts became calls, @ a multiplication and imports
// assignments, all longer than what they replaced.
func TestColumns(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int // of a position in the code
		want      int // its column in the program
	}{
		{"@some_decorator(1, 2)\ndef f():\n  pass\n", 1, 22, 2},
		{"@  d\ndef f():\n  pass\n", 1, 22, 4},
		{"@d(\n  1,\n  qq)\ndef f():\n  pass\n", 3, 3, 3},
		{"y = X @ X @ Z\n", 1, 5, 5},
		{"y = X @ X @ Z\n", 1, 53, 13},
		{"y = X @ X @ Z\n", 1, 45, 11},
		{"assert  q == 1, 'm'\n", 1, 19, 9},
		{"import mirage as mi; x = zz\n", 1, 41, 26},
		{"x = 1\n", 1, 5, 5},
		// A column inside the text a rewrite put in stands for the start
		// of what it replaced.
		{"y = X @ Z\n", 1, 10, 7},
		{"@d\ndef f():\n  pass\n", 1, 5, 1},
	} {
		res, err := Source(tt.src, lex(tt.src), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if got := res.Columns.Source(tt.line, tt.col); got != tt.want {
			t.Errorf("%q (code %q): %d:%d maps to column %d, want %d", tt.src, res.Code, tt.line, tt.col, got, tt.want)
		}
		checkColumns(t, tt.src, res)
	}
}
