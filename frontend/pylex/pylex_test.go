package pylex

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLex(t *testing.T) {
	code := "x = f(a,\n      'μ)' ) # c (\ny = \"\"\"a\nb\"\"\"; z = r'\\'' \\\n  + 1.5e-3\r\nw = 0x1E+2\n"
	var got []string
	toks, complete := Lex(code)
	for _, tk := range toks {
		s := tk.Text
		if tk.Kind == Newline {
			s = "NL"
		}
		if tk.StmtStart {
			s = "^" + s
		}
		got = append(got, fmt.Sprintf("%d:%d:%s", tk.Line, tk.Col, s))
	}
	want := []string{
		"1:1:^x", "1:3:=", "1:5:f", "1:6:(", "1:7:a", "1:8:,", "2:7:'μ)'", "2:12:)", "2:19:NL",
		"3:1:^y", "3:3:=", `3:5:"""a` + "\n" + `b"""`, "4:5:;", `4:7:^z`, "4:9:=", `4:11:r'\''`,
		"5:3:+", "5:5:1.5e-3", "5:11:NL",
		"6:1:^w", "6:3:=", "6:5:0x1E", "6:9:+", "6:10:2", "6:11:NL",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lex:\n got %q\nwant %q", got, want)
	}
	if !complete {
		t.Error("the source did not lex to its end")
	}
}

func TestLexUnterminated(t *testing.T) {
	toks, complete := Lex("a = 1\nb = 'x\nc = 2\n")
	if n := len(toks); n != 6 || toks[n-1].Text != "=" || complete {
		t.Errorf("tokens %v (complete %v), want those before the unterminated string", toks, complete)
	}
}

func TestLexComplete(t *testing.T) {
	for _, tt := range []struct {
		src      string
		complete bool
	}{
		{"x = (1,\n", true},
		{"x = 'a", false},
		{"x = \"\"\"a\n", false},
		{"s = '''a\nb'''", true},
		{"", true},
	} {
		if _, got := Lex(tt.src); got != tt.complete {
			t.Errorf("Lex(%q) complete = %v", tt.src, got)
		}
	}
}

// Python's messages (python3 -c 'import ast; ast.parse(src)') for brackets
// that do not pair up; the front-end's tests check that a load reports
// them in place of Starlark's.
func TestBracketError(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"x = f(a,\n\ny = 1\n", 1, 6, "'(' was never closed"},
		{"x = f(a, (b, c\n", 1, 10, "'(' was never closed"},
		{"x = [f(a)\n", 1, 5, "'[' was never closed"},
		{"x = f(a, [b)\n", 1, 12, "closing parenthesis ')' does not match opening parenthesis '['"},
		{"x = f(a,\n b]\n", 2, 3, "closing parenthesis ']' does not match opening parenthesis '(' on line 1"},
		{"x = {a)}\n", 1, 7, "closing parenthesis ')' does not match opening parenthesis '{'"},
		{"x = a)\n", 1, 6, "unmatched ')'"},
		{"x = a) + (\n", 1, 6, "unmatched ')'"}, // the first mistake
		{"s = '(' + \"[\" # {\n", 0, 0, ""},
		{"x = f(a, [b, {c: d}])\n", 0, 0, ""},
		{"x = f('a\n", 0, 0, ""}, // unterminated: Starlark's error
		{"", 0, 0, ""},
	} {
		toks, complete := Lex(tt.src)
		at, msg := BracketError(toks, complete)
		if msg != tt.msg || msg != "" && (at.Line != tt.line || at.Col != tt.col) {
			t.Errorf("%q: %d:%d: %q, want %d:%d: %q", tt.src, at.Line, at.Col, msg, tt.line, tt.col, tt.msg)
		}
	}
}

// FuzzLex checks that no source makes the lexer panic, and that its tokens
// are the source's: in order, each its own text, positioned where Starlark
// would put it, and brackets nested as they open and close. Run it with
//
//	go test -fuzz=FuzzLex ./frontend/pylex
func FuzzLex(f *testing.F) {
	for _, s := range []string{
		"x = f(a,\n      'μ)' ) # c (\ny = \"\"\"a\nb\"\"\"; z = r'\\'' \\\n  + 1.5e-3\r\nw = 0x1E+2\n",
		"a = 1\nb = 'x\nc = 2\n", "x = f(a, [b)\n", "x = a)\n", "s = '''a\nb'''", "\r\r\n\\\r\nx\r",
		"import mirage as mi\nfrom mirage import (\n float16,\n)\n", "@d\ndef f(x: int) -> int: return x ** 2\n",
		"f'{x}' rb'\\'' u\"\" 1e+3 .5 0X1E+2 x@=y ... :=", "\x97\xb2@A μ\xffb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		toks, complete := Lex(src)
		line, start, off, depth := 1, 0, 0, 0 // where the previous token left the cursor; start: its line's offset
		for i, tk := range toks {
			if tk.Off < off || tk.End < tk.Off || tk.End > len(src) {
				t.Fatalf("token %d %q: range [%d, %d) out of order (previous ended at %d)", i, tk.Text, tk.Off, tk.End, off)
			}
			if tk.Kind != Newline && (tk.Text == "" || tk.Text != src[tk.Off:tk.End]) {
				t.Fatalf("token %d: text %q, source %q", i, tk.Text, src[tk.Off:tk.End])
			}
			// The position, as Starlark counts it: "\r\n" and a lone '\r'
			// are one newline, columns count runes (a byte that is not
			// valid UTF-8 being one).
			for ; off < tk.Off; off++ {
				if c := src[off]; c == '\n' || c == '\r' && (off+1 >= len(src) || src[off+1] != '\n') {
					line, start = line+1, off+1
				}
			}
			col := 1 + utf8.RuneCountInString(src[start:tk.Off])
			if tk.Line != line || tk.Col != col {
				t.Fatalf("token %d %q at %d:%d, want %d:%d", i, tk.Text, tk.Line, tk.Col, line, col)
			}
			if tk.Depth != depth {
				t.Fatalf("token %d %q: depth %d, want %d", i, tk.Text, tk.Depth, depth)
			}
			if tk.Kind == Op {
				switch tk.Text {
				case "(", "[", "{":
					depth++
				case ")", "]", "}":
					depth = max(depth-1, 0)
				}
			}
			if tk.LineStart && !tk.StmtStart || tk.LineStart != (i == 0 || toks[i-1].Kind == Newline) {
				t.Fatalf("token %d %q: LineStart %v, StmtStart %v", i, tk.Text, tk.LineStart, tk.StmtStart)
			}
			if tk.Kind == Newline && (i == 0 || toks[i-1].Kind == Newline || tk.Depth > 0) {
				t.Fatalf("token %d: a newline that ends no logical line", i)
			}
		}
		if complete && len(toks) > 0 && toks[len(toks)-1].Kind != Newline && depth == 0 {
			t.Fatalf("a complete source whose last logical line has no newline token")
		}
		if at, msg := BracketError(toks, complete); msg != "" && (at.Kind != Op || !strings.ContainsAny(at.Text, "()[]{}")) {
			t.Fatalf("bracket error %q at %q", msg, at.Text)
		}
	})
}
