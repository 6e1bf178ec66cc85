package frontend

import (
	"fmt"
	"slices"
	"strings"
)

// Starlark has no import statement. Before parsing, each Python import is
// rewritten into an assignment on the same lines (so every position in the
// program stays where the user wrote it):
//
//	import mirage as mi        ->  mi = __mirage_import__("mirage")
//	from mirage import float16 ->  float16 = __mirage_import__("mirage").float16
//	from __future__ import x   ->  None
//
// Any other module is an error, or, in lenient mode, an inert stub.

// importFunc is the predeclared built-in that the rewritten imports call.
const importFunc = "__mirage_import__"

// mirageModule is the only module a program may import.
const mirageModule = "mirage"

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

// rewriteImports returns src with every import statement replaced by
// assignments, the warnings for stubbed modules, and the first error.
func rewriteImports(filename, src string, toks []token, lenient bool, members []string) (string, []string, error) {
	var out strings.Builder
	var warnings []string
	copied := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tokName || t.text != "import" && t.text != "from" {
			continue
		}
		atStart := t.stmtStart || i > 0 && toks[i-1].is(":") && toks[i-1].depth == 0
		if t.text == "from" && !atStart {
			continue // "raise E from e", "yield from g": errors of their own
		}
		fail := func(format string, args ...any) (string, []string, error) {
			return "", nil, &Error{Filename: filename, Line: t.line, Msg: fmt.Sprintf(format, args...)}
		}
		if !atStart {
			return fail("invalid syntax: `import` must start a statement")
		}
		st, ok := parseImport(toks, i)
		if !ok {
			return fail("invalid import statement")
		}
		foreign, err := st.resolve(members)
		switch {
		case err != nil:
			return fail("%v", err)
		case foreign == "":
		case !lenient:
			return fail("%v", foreignImportError(foreign))
		case st.star:
			warnings = append(warnings, fmt.Sprintf("%s:%d: module %q is stubbed (lenient mode); `from %s import *` binds nothing", filename, t.line, foreign, foreign))
		default:
			warnings = append(warnings, fmt.Sprintf("%s:%d: module %q is stubbed (lenient mode): its attributes, calls and results are inert values", filename, t.line, foreign))
		}
		last := toks[st.next-1]
		out.WriteString(src[copied:t.off])
		out.WriteString(assignment(st.binds, last.line-t.line))
		copied = last.end
		i = st.next - 1
	}
	out.WriteString(src[copied:])
	return out.String(), warnings, nil
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

// resolve checks the statement's modules and names. It returns the first
// module other than mirage, for which binds holds the stubs of a lenient
// load, and a mistake that even a lenient load rejects.
func (st *importStmt) resolve(members []string) (foreign string, err error) {
	if st.module == "__future__" {
		st.binds = nil // compiler directives: nothing to bind
		return "", nil
	}
	if st.star {
		if st.module != mirageModule {
			return st.module, nil
		}
		for _, m := range members {
			st.binds = append(st.binds, importBind{name: m, imported: mirageModule, module: mirageModule, member: m})
		}
		return "", nil
	}
	for _, b := range st.binds {
		switch {
		case b.imported != mirageModule:
			if foreign == "" {
				foreign = b.imported
			}
		case b.member != "" && !slices.Contains(members, b.member):
			return "", fmt.Errorf("cannot import name %q from mirage (it has %s)", b.member, strings.Join(members, ", "))
		}
	}
	return foreign, nil
}

func foreignImportError(module string) error {
	return fmt.Errorf("import of module %q is not supported: programs run hermetically in Starlark; only `mirage` can be imported (use --lenient to stub other modules)", module)
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
	return !ok || t.kind == tokNewline || t.is(";") && t.depth == 0
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
