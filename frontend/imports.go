package frontend

import (
	"fmt"
	"slices"
	"strings"
)

// Starlark has no import statement, no decorators and no assert. Before
// parsing, each is rewritten on the same lines (so every position in the
// program stays where the user wrote it):
//
//	import mirage as mi        ->  mi = __mirage_import__("mirage")
//	from mirage import float16 ->  float16 = __mirage_import__("mirage").float16
//	from __future__ import x   ->  None
//	@decorator                 ->  __mirage_decorator__(decorator)
//	assert cond, msg           ->  __mirage_assert__(cond, msg)
//	x @ w                      ->  x * __mirage_matmul__ * w
//	x is None, x is not None   ->  x == None, x !=     None (identity.go)
//
// A module other than mirage is an inert stub (argparse a working one, see
// argparse.go), or an error when the load is strict. The decorator and
// assert calls are statements that desugar (statements.go) turns into what
// they mean once the program is parsed.

// importFunc is the predeclared built-in that the rewritten imports call.
const importFunc = "__mirage_import__"

// The calls that stand for decorators and assert statements until desugar
// replaces them, and the value that stands for the matmul operator @.
const (
	decoratorFunc = "__mirage_decorator__"
	assertFunc    = "__mirage_assert__"
	matmulFunc    = "__mirage_matmul__"
)

// mirageModule is the only module a strict load lets a program import.
const mirageModule = "mirage"

// foreignImport is an import of a module other than mirage.
type foreignImport struct {
	module string // the dotted name imported
	line   int
	star   bool // from module import *
}

// importBind is one name an import statement binds.
type importBind struct {
	name     string // the name bound
	imported string // the dotted module name the statement imports
	module   string // the module bound: "a" for "import a.b", else imported
	member   string // for "from module import member"; "" binds the module
}

func (b importBind) value() string {
	v := importFunc + `("` + b.module + `")` // names hold no quote or backslash
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

// rewritePython returns src with every import statement replaced by
// assignments, every decorator and assert statement by a call and every
// identity test against None, True or False by a comparison, the
// imports of modules other than mirage, and the first error. A strict
// rewrite refuses those imports.
func rewritePython(filename, src string, toks []token, strict bool, members []string) (string, []foreignImport, error) {
	var out strings.Builder
	var foreign []foreignImport
	copied := 0
	closeAt := -1 // where the call that a decorator or assert became ends
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if closeAt >= 0 && t.off >= closeAt {
			out.WriteString(src[copied:closeAt] + ")")
			copied, closeAt = closeAt, -1
		}
		if negated, ok := identityTest(toks, i); ok {
			// x is None -> x == None; x is not None -> x !=     None
			// (identity.go), keeping every column.
			out.WriteString(src[copied:t.off])
			copied = t.end
			if !negated {
				out.WriteString("==")
				continue
			}
			not := toks[i+1]
			out.WriteString("!=" + src[t.end:not.off] + strings.Repeat(" ", len(not.text)))
			copied = not.end
			i++
			continue
		}
		if !t.stmtStart && t.is("@") || t.is("@=") {
			// a @ b -> a * M * b: the same precedence and grouping as
			// a @ b, whatever surrounds it; M (matmulValue) gives an inert
			// value with an inert operand, and names graph.matmul otherwise.
			out.WriteString(src[copied:t.off])
			op := "*"
			if t.text == "@=" {
				op = "*="
			}
			out.WriteString(op + " " + matmulFunc + " *")
			copied = t.end
			continue
		}
		afterColon := i > 0 && toks[i-1].is(":") && toks[i-1].depth == 0 // if c: assert x
		if t.stmtStart && t.is("@") || (t.stmtStart || afterColon) && t.kind == tokName && t.text == "assert" {
			// The statement, up to its end, becomes the argument list of a
			// call: "@d" -> "f(d)", "assert c, m" -> "f(c, m)".
			fn := assertFunc
			if t.is("@") {
				fn = decoratorFunc
			}
			j := i + 1
			for j < len(toks) && !toks[j].endsStmt() {
				j++
			}
			out.WriteString(src[copied:t.off])
			out.WriteString(fn + "(")
			copied = t.end
			for copied < len(src) && (src[copied] == ' ' || src[copied] == '\t') {
				copied++
			}
			if j == i+1 {
				out.WriteString(")")
			} else {
				closeAt = toks[j-1].end // the tokens between are rewritten as any others
			}
			continue
		}
		if t.kind != tokName || t.text != "import" && t.text != "from" {
			continue
		}
		atStart := t.stmtStart || i > 0 && toks[i-1].is(":") && toks[i-1].depth == 0
		if t.text == "from" && !atStart {
			continue // "raise E from e", "yield from g": errors of their own
		}
		fail := func(format string, args ...any) (string, []foreignImport, error) {
			return "", nil, &Error{Filename: filename, Line: t.line, Msg: fmt.Sprintf(format, args...)}
		}
		if !atStart {
			return fail("invalid syntax: `import` must start a statement")
		}
		st, ok := parseImport(toks, i)
		if !ok {
			return fail("invalid import statement")
		}
		modules, err := st.resolve(members)
		switch {
		case err != nil:
			return fail("%v", err)
		case len(modules) == 0:
		case strict:
			return fail("%v", foreignImportError(modules[0]))
		}
		for _, m := range modules {
			foreign = append(foreign, foreignImport{module: m, line: t.line, star: st.star})
		}
		last := toks[st.next-1]
		out.WriteString(src[copied:t.off])
		out.WriteString(assignment(st.binds, last.line-t.line))
		copied = last.end
		i = st.next - 1
	}
	if closeAt >= 0 {
		out.WriteString(src[copied:closeAt] + ")")
		copied = closeAt
	}
	out.WriteString(src[copied:])
	return out.String(), foreign, nil
}

// stubWarning is the one warning of a load that stubbed modules: where the
// first import is, and what every stub does.
func stubWarning(filename string, imports []foreignImport) string {
	var names, stars []string
	for _, imp := range imports {
		if !slices.Contains(names, imp.module) {
			names = append(names, imp.module)
		}
		if imp.star {
			stars = append(stars, "`from "+imp.module+" import *` binds nothing")
		}
	}
	what, its := "module "+names[0]+" is a stub", "its"
	if len(names) > 1 {
		what, its = "modules "+strings.Join(names[:len(names)-1], ", ")+" and "+names[len(names)-1]+" are stubs", "their"
	}
	msg := fmt.Sprintf("%s:%d: %s, with no file, network or process access: %s attributes, calls and results are inert values",
		filename, imports[0].line, what, its)
	if slices.Contains(names, argparseModule) {
		msg += ", but argparse reads the program's arguments (those after --)"
	}
	for _, s := range stars {
		msg += "; " + s
	}
	return msg + " (--strict refuses such imports)"
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
func (st *importStmt) resolve(members []string) (foreign []string, err error) {
	if st.module == "__future__" {
		st.binds = nil // compiler directives: nothing to bind
		return nil, nil
	}
	if st.star {
		if st.module != mirageModule {
			return []string{st.module}, nil
		}
		for _, m := range members {
			st.binds = append(st.binds, importBind{name: m, imported: mirageModule, module: mirageModule, member: m})
		}
		return nil, nil
	}
	for _, b := range st.binds {
		switch {
		case b.imported != mirageModule:
			if !slices.Contains(foreign, b.imported) {
				foreign = append(foreign, b.imported)
			}
		case b.member != "" && !slices.Contains(members, b.member):
			var api []string // the graph API, not the runtime names
			for _, m := range members {
				if !slices.Contains(mirageRuntimeNames, m) && !slices.Contains(mirageOtherDTypes, m) {
					api = append(api, m)
				}
			}
			return nil, fmt.Errorf("cannot import name %q from mirage (it has %s)", b.member, strings.Join(api, ", "))
		}
	}
	return foreign, nil
}

func foreignImportError(module string) error {
	return fmt.Errorf("import of module %q is refused by a strict load (--strict): only `mirage` can be imported (without --strict, other modules are inert stubs)", module)
}

// parseImport parses the import statement that starts at toks[i]:
//
//	import dotted [as name] {, dotted [as name]}
//	from {.} dotted import (* | names | "(" names [,] ")")
func parseImport(toks []token, i int) (importStmt, bool) {
	var st importStmt
	p := &tokParser{toks: toks, i: i + 1}
	if toks[i].text == "import" {
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
	toks []token
	i    int
}

func (p *tokParser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *tokParser) accept(s string) bool {
	if t, ok := p.peek(); ok && t.is(s) {
		p.i++
		return true
	}
	return false
}

func (p *tokParser) name() (string, bool) {
	t, ok := p.peek()
	if !ok || t.kind != tokName || pythonKeywords[t.text] {
		return "", false
	}
	p.i++
	return t.text, true
}

// dotted reads a dotted module name; relative ones (".a", "..") only when
// leading dots are allowed.
func (p *tokParser) dotted(relative bool) (string, bool) {
	var b strings.Builder
	for relative && (p.accept(".") || p.accept("...")) {
		b.WriteString(p.toks[p.i-1].text)
	}
	if b.Len() > 0 {
		if t, ok := p.peek(); ok && t.is("import") {
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
		if t, ok := p.peek(); parens && ok && t.is(")") {
			return true
		}
	}
}

// atEnd reports whether the statement ends here.
func (p *tokParser) atEnd() bool {
	t, ok := p.peek()
	return !ok || t.endsStmt()
}

// endsStmt reports whether t ends a simple statement: a newline, or a
// semicolon outside brackets.
func (t token) endsStmt() bool {
	return t.kind == tokNewline || t.is(";") && t.depth == 0
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
