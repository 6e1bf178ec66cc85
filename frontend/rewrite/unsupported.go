package rewrite

import (
	"strings"

	"github.com/mirage-go/mirage/frontend/pylex"
)

// Mirage programs are Python, but they run as Starlark, which lacks much of
// Python. When Starlark rejects a program, the Python construct that caused
// it is usually obvious from the tokens; Constructs names those, so that
// the error says "`class` definitions are not supported" rather than
// "got class, want primary expression".

// Construct is a use of a Python construct that Starlark lacks.
type Construct struct {
	Line, Col int
	Msg       string // "`class` definitions are not supported in mirage programs ..."
}

// Unsupported is the message for a Python construct that mirage programs
// cannot use: what ("`class` definitions are") and how to do without it
// (hint, or "").
func Unsupported(what, hint string) string {
	msg := what + " not supported in mirage programs (Starlark subset of Python)"
	if hint != "" {
		msg += "; " + hint
	}
	return msg
}

// keywordConstructs maps Python keywords Starlark lacks to their message.
var keywordConstructs = map[string]string{
	"class":    Unsupported("`class` definitions are", ""),
	"try":      Unsupported("`try`/`except` statements are", ""),
	"except":   Unsupported("`try`/`except` statements are", ""),
	"finally":  Unsupported("`try`/`finally` statements are", ""),
	"with":     Unsupported("`with` statements are", ""),
	"raise":    Unsupported("`raise` statements are", "call fail(msg) to stop with an error"),
	"global":   Unsupported("`global` declarations are", "return values instead of assigning globals"),
	"nonlocal": Unsupported("`nonlocal` declarations are", ""),
	"del":      Unsupported("`del` statements are", ""),
	"yield":    Unsupported("generators (`yield`) are", "build and return a list"),
	"async":    Unsupported("`async` functions are", ""),
	"await":    Unsupported("`await` expressions are", ""),
}

var (
	msgPower      = Unsupported("the power operator `**` is", "multiply, or write the value out")
	msgWalrus     = Unsupported("assignment expressions (`:=`) are", "")
	msgAnnotation = Unsupported("type annotations are", "")
	msgLoopElse   = Unsupported("`else` clauses on `for`/`while` loops are", "")
	msgFString    = Unsupported("f-strings are", `use str(x), + or "%d" % x`)
	msgChained    = Unsupported("chained assignments (`a = b = x`) are", "assign each name on its own line")
	msgStarTarget = Unsupported("starred expressions outside calls (`a, *rest = x`) are", "index or slice the sequence")
	msgIs         = Unsupported("the `is` operator is",
		"only `x is None`, `x is not None` and the like with True or False are (as == and !=); compare other values with == or !=")
)

// Constructs returns the uses of Python constructs Starlark lacks in the
// tokens of a program, in source order.
func Constructs(toks []pylex.Token) []Construct {
	var out []Construct
	add := func(t pylex.Token, msg string) { out = append(out, Construct{t.Line, t.Col, msg}) }

	var lines []logicalLine
	pendingDef, defParams := false, -1 // defParams: nesting inside a def's "(...)"
	assigns, lambda := 0, false        // in the statement: "=" outside brackets, a lambda
	for i, t := range toks {
		var prev pylex.Token
		if i > 0 {
			prev = toks[i-1]
		}
		if t.StmtStart {
			assigns, lambda = 0, false
		}
		switch t.Kind {
		case pylex.Newline:
			pendingDef, defParams = false, -1
		case pylex.Name:
			if msg, ok := keywordConstructs[t.Text]; ok {
				add(t, msg)
			}
			if _, ok := identityTest(toks, i); t.Text == "is" && !ok {
				add(t, msgIs) // x is y; not x is None, which Source takes
			}
			if t.LineStart {
				if t.Text == "else" && elseOfLoop(lines, t.Col-1) {
					add(t, msgLoopElse)
				}
				lines = append(lines, logicalLine{t.Col - 1, t.Text})
			}
			if t.StmtStart && !pythonKeywords[t.Text] && i+1 < len(toks) && toks[i+1].Is(":") {
				add(toks[i+1], msgAnnotation) // x: int = 1
			}
			pendingDef = pendingDef || t.Text == "def"
			lambda = lambda || t.Text == "lambda"
		case pylex.String:
			switch p := t.StringPrefix(); {
			case strings.ContainsAny(p, "fF"):
				add(t, msgFString)
			case p != "" && p != "r" && p != "b" && p != "rb":
				add(t, Unsupported("the string prefix "+p+" is", "Starlark allows r, b and rb"))
			}
		case pylex.Op:
			switch t.Text {
			case "**":
				if endsOperand(prev) {
					add(t, msgPower)
				}
			case "**=":
				add(t, msgPower)
			case ":=":
				add(t, msgWalrus)
			case "=":
				// a = b = x; not f = lambda x=1: x, whose default is a second "=".
				if t.Depth == 0 {
					if assigns++; assigns == 2 && !lambda && endsOperand(prev) {
						add(t, msgChained)
					}
				}
			case "*":
				// *rest, a = x or a, *rest = x: a star outside brackets
				// that starts an operand.
				if t.Depth == 0 && (t.StmtStart || prev.Is(",") || prev.Is("=")) {
					add(t, msgStarTarget)
				}
			case "->":
				add(t, msgAnnotation)
			case "(":
				if pendingDef && defParams < 0 {
					defParams = t.Depth + 1
				}
			case ")":
				if t.Depth == defParams {
					pendingDef, defParams = false, -1
				}
			case ":":
				// def f(x: int): a parameter name followed by a colon.
				if t.Depth == defParams && defParams > 0 && i >= 2 && prev.Kind == pylex.Name {
					if b := toks[i-2]; b.Is("(") || b.Is(",") || b.Is("*") || b.Is("**") {
						add(t, msgAnnotation)
					}
				}
			}
		}
	}
	return out
}

// logicalLine is the indentation and first word of a logical line.
type logicalLine struct {
	indent int
	first  string
}

// elseOfLoop reports whether an "else" line at this indent belongs to a for
// or while statement: the nearest earlier line at the same indent, skipping
// deeper (body) lines.
func elseOfLoop(lines []logicalLine, indent int) bool {
	for i := len(lines) - 1; i >= 0; i-- {
		switch l := lines[i]; {
		case l.indent > indent:
			continue
		case l.indent < indent:
			return false
		default:
			return l.first == "for" || l.first == "while"
		}
	}
	return false
}

// endsOperand reports whether t can end an operand, so that a following
// "**" is the power operator rather than a **kwargs marker.
func endsOperand(t pylex.Token) bool {
	switch t.Kind {
	case pylex.Number, pylex.String:
		return true
	case pylex.Name:
		return !pythonKeywords[t.Text] || t.Text == "True" || t.Text == "False" || t.Text == "None"
	case pylex.Op:
		return t.Text == ")" || t.Text == "]" || t.Text == "}"
	}
	return false
}

// PythonOnly reports whether name is a Python built-in that Starlark does
// not have, so that an "undefined" error for it can say so.
func PythonOnly(name string) bool { return pythonOnlyBuiltins[name] }

// pythonOnlyBuiltins are Python built-ins that Starlark does not have.
var pythonOnlyBuiltins = map[string]bool{
	"open": true, "input": true, "exec": true, "eval": true, "compile": true,
	"__import__": true, "isinstance": true, "issubclass": true, "sum": true,
	"round": true, "pow": true, "map": true, "filter": true, "iter": true,
	"next": true, "object": true, "super": true, "globals": true, "locals": true,
	"vars": true, "id": true, "callable": true, "format": true, "exit": true,
	"quit": true, "divmod": true, "frozenset": true, "bytearray": true,
	"property": true, "staticmethod": true, "classmethod": true,
}
