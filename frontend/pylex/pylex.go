// Package pylex splits Python source into tokens: names, numbers, string
// literals, operators and the ends of logical lines, each with its line,
// column, bracket depth and whether it starts a statement. It is just
// enough of Python's lexer for the front-end to find and rewrite what
// Starlark lacks (package rewrite) and to name it in errors, without being
// fooled by strings, comments or statements continued over several lines;
// and it gives Python's message for brackets that do not pair up.
//
// It is a package of its own because it knows nothing of mirage or of
// Starlark: it is Python's lexical structure alone, tested alone. It never
// fails hard: on an unterminated string it stops, and Starlark, which
// parses the program later, reports the real syntax error.
package pylex

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind uint8

// The kinds of tokens.
const (
	Name Kind = iota + 1 // an identifier or keyword
	Number
	String  // a string or bytes literal, with its prefix
	Op      // an operator or delimiter
	Newline // the end of a logical line
)

// Token is one token of the source.
type Token struct {
	Kind      Kind
	Text      string // the source text; for strings the whole literal
	Off, End  int    // byte range in the source
	Line, Col int    // 1-based; Col counts runes, as Starlark's positions do
	Depth     int    // bracket nesting before the token
	StmtStart bool   // first token of a simple statement
	LineStart bool   // first token of a logical line (implies StmtStart)
}

// Is reports whether t is the operator or name s.
func (t Token) Is(s string) bool { return (t.Kind == Op || t.Kind == Name) && t.Text == s }

// StringPrefix returns the letters before a string literal's quote.
func (t Token) StringPrefix() string {
	return t.Text[:strings.IndexAny(t.Text, `"'`)]
}

// EndsStmt reports whether t ends a simple statement: a newline, or a
// semicolon outside brackets.
func (t Token) EndsStmt() bool {
	return t.Kind == Newline || t.Is(";") && t.Depth == 0
}

type lexer struct {
	src      string
	pos      int // next byte to read
	depth    int
	toks     []Token
	complete bool // the source lexed to its end
	// A cursor that converts byte offsets into lines and columns; tokens
	// arrive in source order, so it only moves forward.
	curOff, curLine, curCol int
}

// Lex splits src into tokens. It stops at the first unterminated string;
// the tokens before it are still returned, and complete is false.
func Lex(src string) (toks []Token, complete bool) {
	lx := &lexer{src: src, curLine: 1, curCol: 1}
	lx.run()
	return lx.toks, lx.complete
}

func (lx *lexer) run() {
	src := lx.src
	for lx.pos < len(src) {
		c := src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			lx.pos++
		case c == '\n' || c == '\r':
			lx.endLine(lx.pos)
			lx.pos++
		case c == '#':
			for lx.pos < len(src) && src[lx.pos] != '\n' && src[lx.pos] != '\r' {
				lx.pos++
			}
		case c == '\\' && lx.pos+1 < len(src) && (src[lx.pos+1] == '\n' || src[lx.pos+1] == '\r'):
			lx.pos += 2 // line continuation (a "\r\n" leaves a '\n', which we must skip too)
			if src[lx.pos-1] == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
				lx.pos++
			}
		case c == '"' || c == '\'':
			if !lx.scanString(lx.pos, lx.pos) {
				return
			}
		case isIdentByte(c) && !isDigit(c):
			end := lx.pos
			for end < len(src) && isIdentByte(src[end]) {
				end++
			}
			if end < len(src) && (src[end] == '"' || src[end] == '\'') && isStringPrefix(src[lx.pos:end]) {
				if !lx.scanString(lx.pos, end) {
					return
				}
				continue
			}
			lx.emit(Name, end)
		case isDigit(c) || c == '.' && lx.pos+1 < len(src) && isDigit(src[lx.pos+1]):
			lx.emit(Number, lx.numberEnd())
		default:
			lx.emit(Op, lx.pos+opLen(src[lx.pos:]))
		}
	}
	lx.endLine(len(src))
	lx.complete = true
}

// endLine ends the logical line at offset off, unless brackets are open or
// the line holds no token.
func (lx *lexer) endLine(off int) {
	if lx.depth > 0 || len(lx.toks) == 0 || lx.toks[len(lx.toks)-1].Kind == Newline {
		return
	}
	lx.add(Token{Kind: Newline, Off: off, End: off})
}

func (lx *lexer) emit(kind Kind, end int) {
	t := Token{Kind: kind, Text: lx.src[lx.pos:end], Off: lx.pos, End: end}
	lx.pos = end
	lx.add(t)
}

func (lx *lexer) add(t Token) {
	t.Line, t.Col = lx.position(t.Off)
	t.Depth = lx.depth
	if n := len(lx.toks); n == 0 || lx.toks[n-1].Kind == Newline {
		t.LineStart, t.StmtStart = true, true
	} else if p := lx.toks[n-1]; p.Is(";") && p.Depth == 0 {
		t.StmtStart = true
	}
	if t.Kind == Op {
		switch t.Text {
		case "(", "[", "{":
			lx.depth++
		case ")", "]", "}":
			lx.depth = max(lx.depth-1, 0)
		}
	}
	lx.toks = append(lx.toks, t)
}

// position returns the line and column of byte offset off (>= any offset
// asked before). Like Starlark, it counts "\r\n" and a lone '\r' as one
// newline and columns in runes, a byte that is not valid UTF-8 being one.
func (lx *lexer) position(off int) (line, col int) {
	for lx.curOff < off {
		switch b := lx.src[lx.curOff]; {
		case b == '\n':
			lx.curLine, lx.curCol = lx.curLine+1, 1
		case b == '\r':
			if lx.curOff+1 >= len(lx.src) || lx.src[lx.curOff+1] != '\n' {
				lx.curLine, lx.curCol = lx.curLine+1, 1
			}
		case b >= utf8.RuneSelf:
			_, size := utf8.DecodeRuneInString(lx.src[lx.curOff:])
			lx.curOff += size
			lx.curCol++
			continue
		default:
			lx.curCol++
		}
		lx.curOff++
	}
	return lx.curLine, lx.curCol
}

// scanString scans the literal whose prefix starts at start and whose
// opening quote is at quote. It reports false if the string is unterminated.
func (lx *lexer) scanString(start, quote int) bool {
	src := lx.src
	q := src[quote]
	delim := string(q)
	if strings.HasPrefix(src[quote:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	for i := quote + len(delim); i < len(src); {
		switch c := src[i]; {
		case c == '\\':
			i += 2 // an escape; a backslash before "\r\n" continues the line
			if i < len(src) && src[i-1] == '\r' && src[i] == '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], delim):
			lx.pos = start
			lx.emit(String, i+len(delim))
			return true
		case len(delim) == 1 && (c == '\n' || c == '\r'):
			return false
		default:
			i++
		}
	}
	return false
}

func (lx *lexer) numberEnd() int {
	src := lx.src
	hex := strings.HasPrefix(src[lx.pos:], "0x") || strings.HasPrefix(src[lx.pos:], "0X")
	i := lx.pos
	for i < len(src) && (isIdentByte(src[i]) || src[i] == '.') {
		if !hex && (src[i] == 'e' || src[i] == 'E') && i+1 < len(src) && (src[i+1] == '+' || src[i+1] == '-') {
			i++
		}
		i++
	}
	return i
}

// Python's operators and delimiters longer than one byte, longest first.
var longOps = []string{
	"**=", "//=", ">>=", "<<=", "...",
	"**", "//", "->", ":=", "==", "!=", "<=", ">=", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=",
}

func opLen(s string) int {
	for _, op := range longOps {
		if strings.HasPrefix(s, op) {
			return len(op)
		}
	}
	return 1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdentByte reports whether c may appear in an identifier. Bytes of
// non-ASCII characters count, as Python and Starlark allow Unicode letters.
func isIdentByte(c byte) bool {
	return c == '_' || isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// isStringPrefix reports whether p is a Python string prefix (r, b, u, f
// and their two-letter combinations, in any case).
func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

// BracketError returns Python's error for the first closing bracket that
// matches no opening one, or else, in a source that lexed to its end
// (complete, as Lex reports it), for the innermost bracket never closed,
// and the bracket it is at; msg is "" if the brackets pair up. Starlark
// stumbles on such mistakes later ("got identifier, want ','" at the next
// statement, for a call left open) and names neither bracket.
func BracketError(toks []Token, complete bool) (at Token, msg string) {
	var open []Token
	for _, t := range toks {
		if t.Kind != Op {
			continue
		}
		switch t.Text {
		case "(", "[", "{":
			open = append(open, t)
		case ")", "]", "}":
			if len(open) == 0 {
				return t, fmt.Sprintf("unmatched '%s'", t.Text)
			}
			o := open[len(open)-1]
			open = open[:len(open)-1]
			if closing[o.Text] != t.Text {
				msg := fmt.Sprintf("closing parenthesis '%s' does not match opening parenthesis '%s'", t.Text, o.Text)
				if o.Line != t.Line {
					msg += fmt.Sprintf(" on line %d", o.Line)
				}
				return t, msg
			}
		}
	}
	if !complete || len(open) == 0 {
		return Token{}, ""
	}
	o := open[len(open)-1]
	return o, fmt.Sprintf("'%s' was never closed", o.Text)
}

var closing = map[string]string{"(": ")", "[": "]", "{": "}"}
