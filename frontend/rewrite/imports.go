package rewrite

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mirage-go/mirage/frontend/pylex"
)

// ImportFunc is the built-in that the rewritten imports call with a module's
// dotted name; the loader predeclares it.
const ImportFunc = "__mirage_import__"

// MatmulFunc is the predeclared value that stands for the matmul operator:
// x @ w is x * MatmulFunc * w, with the same precedence and grouping.
const MatmulFunc = "__mirage_matmul__"

// The calls that stand for decorators and assert statements until Desugar
// replaces them.
const (
	decoratorFunc = "__mirage_decorator__"
	assertFunc    = "__mirage_assert__"
)

// Mirage is the module that the program's mirage names come from: the only
// one a strict load lets a program import, and the one whose names
// `from mirage import ...` checks.
const Mirage = "mirage"

// Options say what Source needs to know of the loader.
type Options struct {
	// Members are the names of the mirage module, all of which `from
	// mirage import *` binds.
	Members []string
	// API are the members that the error for an import of a name mirage
	// lacks lists ("it has ...").
	API []string
	// Refuse, when set, gives the error for an import of a module other
	// than mirage (a strict load); otherwise such modules are for the
	// loader to stub, and Source returns them.
	Refuse func(module string) error
}

// Import is an import of a module other than mirage.
type Import struct {
	Module string // the dotted name imported
	Line   int
	Star   bool // from module import *
}

// Error is a mistake in the program that a rewrite found, at a position of
// its source. Col is 0 when it concerns the whole statement.
type Error struct {
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Col == 0 {
		return fmt.Sprintf("%d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// importBind is one name an import statement binds.
type importBind struct {
	name     string // the name bound
	imported string // the dotted module name the statement imports
	module   string // the module bound: "a" for "import a.b", else imported
	member   string // for "from module import member"; "" binds the module
}

func (b importBind) value() string {
	v := ImportFunc + `("` + b.module + `")` // names hold no quote or backslash
	if b.member != "" {
		v += "." + b.member
	}
	return v
}

// importStmt is an import statement, up to the token toks[next] that ends
// it (a newline or semicolon, if any).
type importStmt struct {
	next   int
	module string // the module of a "from" import; "" for "import a, b"
	binds  []importBind
	star   bool // from module import *
}

// Result is what Source made of a program.
type Result struct {
	Code    string   // the program as Starlark
	Imports []Import // of modules other than mirage
	Columns Columns  // from Code's positions back to the program's
	// Identity holds the positions in Code of the == and != that stand
	// for an identity test (`is`, `is not`; identity.go), which the loader
	// tells apart from the program's own == and !=.
	Identity map[Pos]bool
}

// Pos is a position in Code: its line, and its column as Starlark counts
// it (from 1, in characters).
type Pos struct{ Line, Col int32 }

// Source returns src, whose tokens are toks (pylex.Lex's), with every
// import statement replaced by assignments, every decorator and assert
// statement by a call and every identity test against None, True or False
// by a comparison; the imports of modules other than mirage; and the first
// error, an *Error. With opts.Refuse set, an import of such a module is an
// error.
func Source(src string, toks []pylex.Token, opts Options) (Result, error) {
	var out strings.Builder
	var res Result
	// replaced records that src[s0:s1] became what out gained since o0.
	replaced := func(line, s0, s1, o0 int) {
		res.Columns.record(line, src, s0, s1, out.String(), o0, out.Len())
	}
	copied := 0
	closeAt, closeLine := -1, 0  // where the call that a decorator or assert became ends
	edits := map[int]tokenEdit{} // by token index: several indices, unpacking (subscripts.go)
	closeCall := func() {
		out.WriteString(src[copied:closeAt])
		o0 := out.Len()
		out.WriteString(")")
		replaced(closeLine, closeAt, closeAt, o0)
		copied, closeAt = closeAt, -1
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if closeAt >= 0 && t.Off >= closeAt {
			closeCall()
		}
		if t.Is("[") && i > 0 && endsOperand(toks[i-1]) {
			subscriptEdits(toks, i, edits)
		}
		if t.StmtStart && t.Depth == 0 {
			unpackEdits(toks, i, edits)
		}
		if e, ok := edits[i]; ok {
			out.WriteString(src[copied:t.Off])
			o0, s1 := out.Len(), t.Off
			out.WriteString(e.before)
			if e.replace {
				out.WriteString(e.with)
				s1 = t.End
			}
			replaced(t.Line, t.Off, s1, o0)
			copied = s1
			if e.after != "" {
				// The token, then the text after it.
				out.WriteString(src[copied:t.End])
				o1 := out.Len()
				out.WriteString(e.after)
				replaced(t.Line+lineEnds(t.Text), t.End, t.End, o1)
				copied = t.End
			}
			if e.replace || e.after != "" {
				continue
			}
		}
		if negated, ok := identityTest(toks, i); ok {
			// x is None -> x == None; x is not None -> x !=     None
			// (identity.go), keeping every column.
			out.WriteString(src[copied:t.Off])
			copied = t.End
			if res.Identity == nil {
				res.Identity = map[Pos]bool{}
			}
			res.Identity[outPos(&out, t.Line)] = true
			if !negated {
				out.WriteString("==")
				continue
			}
			not := toks[i+1]
			out.WriteString("!=" + src[t.End:not.Off] + strings.Repeat(" ", len(not.Text)))
			copied = not.End
			i++
			continue
		}
		if t.Kind == pylex.Number && strings.Contains(t.Text, "_") {
			// 4_096 -> 4096: Python's digit separators, which Starlark lacks.
			out.WriteString(src[copied:t.Off])
			o0 := out.Len()
			out.WriteString(strings.ReplaceAll(t.Text, "_", ""))
			replaced(t.Line, t.Off, t.End, o0)
			copied = t.End
			continue
		}
		if !t.StmtStart && t.Is("@") || t.Is("@=") {
			// a @ b -> a * M * b: the same precedence and grouping as
			// a @ b, whatever surrounds it; M (matmulValue) gives an inert
			// value with an inert operand, and names graph.matmul otherwise.
			out.WriteString(src[copied:t.Off])
			op := "*"
			if t.Text == "@=" {
				op = "*="
			}
			o0 := out.Len()
			out.WriteString(op + " " + MatmulFunc + " *")
			replaced(t.Line, t.Off, t.End, o0)
			copied = t.End
			continue
		}
		// if c: assert x. Not within a statement already becoming a call
		// ("@d: assert x" is no Python): its closing parenthesis is pending.
		afterColon := closeAt < 0 && i > 0 && toks[i-1].Is(":") && toks[i-1].Depth == 0
		if t.StmtStart && t.Is("@") || (t.StmtStart || afterColon) && t.Kind == pylex.Name && t.Text == "assert" {
			// The statement, up to its end, becomes the argument list of a
			// call: "@d" -> "f(d)", "assert c, m" -> "f(c, m)".
			fn := assertFunc
			if t.Is("@") {
				fn = decoratorFunc
			}
			j := i + 1
			for j < len(toks) && !toks[j].EndsStmt() {
				j++
			}
			out.WriteString(src[copied:t.Off])
			o0 := out.Len()
			out.WriteString(fn + "(")
			copied = t.End
			for copied < len(src) && (src[copied] == ' ' || src[copied] == '\t') {
				copied++
			}
			if j == i+1 {
				out.WriteString(")")
			} else {
				// The tokens between are rewritten as any others.
				last := toks[j-1]
				closeAt, closeLine = last.End, last.Line+lineEnds(last.Text)
			}
			replaced(t.Line, t.Off, copied, o0)
			continue
		}
		if t.Kind != pylex.Name || t.Text != "import" && t.Text != "from" {
			continue
		}
		atStart := t.StmtStart || i > 0 && toks[i-1].Is(":") && toks[i-1].Depth == 0
		if t.Text == "from" && !atStart {
			continue // "raise E from e", "yield from g": errors of their own
		}
		fail := func(format string, args ...any) (Result, error) {
			return Result{}, &Error{Line: t.Line, Msg: fmt.Sprintf(format, args...)}
		}
		if !atStart {
			return fail("invalid syntax: `import` must start a statement")
		}
		st, ok := parseImport(toks, i)
		if !ok {
			return fail("invalid import statement")
		}
		modules, err := st.resolve(opts)
		switch {
		case err != nil:
			return fail("%v", err)
		case len(modules) == 0:
		case opts.Refuse != nil:
			return fail("%v", opts.Refuse(modules[0]))
		}
		for _, m := range modules {
			res.Imports = append(res.Imports, Import{Module: m, Line: t.Line, Star: st.star})
		}
		last := toks[st.next-1]
		out.WriteString(src[copied:t.Off])
		o0 := out.Len()
		a := assignment(st.binds, last.Line-t.Line)
		if last.Line == t.Line {
			out.WriteString(a)
			replaced(t.Line, t.Off, last.End, o0)
		} else {
			// The assignment's first line stands for the statement's first
			// line, its last (a parenthesis) for the statement's last.
			first, rest, _ := strings.Cut(a, "\n")
			out.WriteString(first)
			replaced(t.Line, t.Off, lineEnd(src, t.Off), o0)
			out.WriteString("\n" + rest)
			replaced(last.Line, lineStart(src, last.Off), last.End, lineStart(out.String(), out.Len()))
		}
		copied = last.End
		i = st.next - 1
	}
	if closeAt >= 0 {
		closeCall()
	}
	out.WriteString(src[copied:])
	res.Code = out.String()
	return res, nil
}

// assignment binds the names on one logical line spanning breaks+1 lines.
func assignment(binds []importBind, breaks int) string {
	pad := strings.Repeat("\n", breaks)
	switch len(binds) {
	case 0:
		return "(None" + pad + ")"
	case 1:
		return binds[0].name + " = (" + binds[0].value() + pad + ")"
	}
	names := make([]string, len(binds))
	values := make([]string, len(binds))
	for i, b := range binds {
		names[i], values[i] = b.name, b.value()
	}
	return "(" + strings.Join(names, ", ") + ") = (" + strings.Join(values, ", ") + pad + ")"
}

// resolve checks the statement's modules and names. It returns the
// modules other than mirage, for which binds holds the stubs of a load
// that is not strict, and a mistake that any load rejects.
func (st *importStmt) resolve(opts Options) (foreign []string, err error) {
	if st.module == "__future__" {
		st.binds = nil // compiler directives: nothing to bind
		return nil, nil
	}
	if st.star {
		if st.module != Mirage {
			return []string{st.module}, nil
		}
		for _, m := range opts.Members {
			st.binds = append(st.binds, importBind{name: m, imported: Mirage, module: Mirage, member: m})
		}
		return nil, nil
	}
	for _, b := range st.binds {
		switch {
		case b.imported != Mirage:
			if !slices.Contains(foreign, b.imported) {
				foreign = append(foreign, b.imported)
			}
		case b.member != "" && !slices.Contains(opts.Members, b.member):
			return nil, fmt.Errorf("cannot import name %q from mirage (it has %s)", b.member, strings.Join(opts.API, ", "))
		}
	}
	return foreign, nil
}

// parseImport parses the import statement that starts at toks[i]:
//
//	import dotted [as name] {, dotted [as name]}
//	from {.} dotted import (* | names | "(" names [,] ")")
func parseImport(toks []pylex.Token, i int) (importStmt, bool) {
	var st importStmt
	p := &tokParser{toks: toks, i: i + 1}
	if toks[i].Text == "import" {
		for {
			module, ok := p.dotted(false)
			if !ok {
				return st, false
			}
			name, _, _ := strings.Cut(module, ".") // "import a.b" binds a
			b := importBind{name: name, imported: module, module: name}
			if p.accept("as") {
				if b.name, ok = p.name(); !ok {
					return st, false
				}
				b.module = module
			}
			st.binds = append(st.binds, b)
			if !p.accept(",") {
				break
			}
		}
	} else {
		var ok bool
		if st.module, ok = p.dotted(true); !ok || !p.accept("import") {
			return st, false
		}
		switch {
		case p.accept("*"):
			st.star = true
		case p.accept("("):
			if !p.importNames(&st, true) || !p.accept(")") {
				return st, false
			}
		default:
			if !p.importNames(&st, false) {
				return st, false
			}
		}
	}
	st.next = p.i
	return st, p.atEnd()
}

// tokParser reads tokens of one statement.
type tokParser struct {
	toks []pylex.Token
	i    int
}

func (p *tokParser) peek() (pylex.Token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return pylex.Token{}, false
}

func (p *tokParser) accept(s string) bool {
	if t, ok := p.peek(); ok && t.Is(s) {
		p.i++
		return true
	}
	return false
}

func (p *tokParser) name() (string, bool) {
	t, ok := p.peek()
	if !ok || t.Kind != pylex.Name || pythonKeywords[t.Text] {
		return "", false
	}
	p.i++
	return t.Text, true
}

// dotted reads a dotted module name; relative ones (".a", "..") only when
// leading dots are allowed.
func (p *tokParser) dotted(relative bool) (string, bool) {
	var b strings.Builder
	for relative && (p.accept(".") || p.accept("...")) {
		b.WriteString(p.toks[p.i-1].Text)
	}
	if b.Len() > 0 {
		if t, ok := p.peek(); ok && t.Is("import") {
			return b.String(), true // from . import x
		}
	}
	for {
		n, ok := p.name()
		if !ok {
			return "", false
		}
		b.WriteString(n)
		if !p.accept(".") {
			return b.String(), true
		}
		b.WriteByte('.')
	}
}

// importNames reads "name [as name] {, name [as name]}" of a from-import;
// a trailing comma only inside parentheses.
func (p *tokParser) importNames(st *importStmt, parens bool) bool {
	for {
		member, ok := p.name()
		if !ok {
			return false
		}
		b := importBind{name: member, imported: st.module, module: st.module, member: member}
		if p.accept("as") {
			if b.name, ok = p.name(); !ok {
				return false
			}
		}
		st.binds = append(st.binds, b)
		if !p.accept(",") {
			return true
		}
		if t, ok := p.peek(); parens && ok && t.Is(")") {
			return true
		}
	}
}

// atEnd reports whether the statement ends here.
func (p *tokParser) atEnd() bool {
	t, ok := p.peek()
	return !ok || t.EndsStmt()
}

// pythonKeywords are Python's reserved words, none of which may name a
// module or a binding.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true,
	"def": true, "del": true, "elif": true, "else": true, "except": true,
	"finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true,
	"not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true,
}

// outPos is the position of the next character written to out, on line.
func outPos(out *strings.Builder, line int) Pos {
	text := out.String()
	start := strings.LastIndexByte(text, '\n') + 1
	return Pos{Line: int32(line), Col: int32(utf8.RuneCountInString(text[start:])) + 1}
}
