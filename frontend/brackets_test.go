package frontend

import (
	"io"
	"strings"
	"testing"
)

// bracketCases are sources whose brackets do not pair up, and the error
// Python gives (python3 -c 'import ast; ast.parse(src)'), which the load
// gives too; FuzzLoad seeds from them.
var bracketCases = []struct{ src, want string }{
	{"x = f(a,\n\ny = 1\n", "prog.py:1:6: '(' was never closed"},
	{"x = f(a, (b, c\n", "prog.py:1:10: '(' was never closed"},
	{"x = [f(a)\n", "prog.py:1:5: '[' was never closed"},
	{"x = f(a ** 2\n\ny = 1\n", "prog.py:1:6: '(' was never closed"},
	{"x = f(a is b\n\ny = 1\n", "prog.py:1:6: '(' was never closed"},
	{"x = f(a, [b)\n", "prog.py:1:12: closing parenthesis ')' does not match opening parenthesis '['"},
	{"x = f(a,\n b]\n", "prog.py:2:3: closing parenthesis ']' does not match opening parenthesis '(' on line 1"},
	{"x = {a)}\n", "prog.py:1:7: closing parenthesis ')' does not match opening parenthesis '{'"},
	{"x = a)\n", "prog.py:1:6: unmatched ')'"},
	// Another error first, or an unterminated string: Starlark's error.
	{"x = = 1\ny = f(\n", "prog.py:1:5: got '=', want primary expression"},
	{"x = f(\"abc\n", "prog.py:1:7: unexpected newline in string"},
	{"class A:\n  pass\ny = f(\n", "prog.py:1: `class` definitions are not supported"},
	{"x = a ** (b]\n", "prog.py:1: the power operator `**` is not supported"},
}

func TestBracketErrors(t *testing.T) {
	for _, tt := range bracketCases {
		_, err := Load("prog.py", []byte(tt.src), Options{Stdout: io.Discard})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %s", tt.src, err, tt.want)
		}
	}
}
