package frontend

import (
	"strings"
)

// Mirage programs are Python, but they run as Starlark, which lacks much of
// Python. When Starlark rejects a program, the Python construct that caused
// it is usually obvious from the tokens; findConstructs names those, so that
// the error says "`class` definitions are not supported" rather than
// "got class, want primary expression".

// construct is a use of a Python construct that Starlark lacks.
type construct struct {
	line, col int
	msg       string
}

func unsupported(what, hint string) string {
	msg := what + " not supported in mirage programs (Starlark subset of Python)"
	if hint != "" {
		msg += "; " + hint
	}
	return msg
}

// keywordConstructs maps Python keywords Starlark lacks to their message.
var keywordConstructs = map[string]string{
	"class":    unsupported("`class` definitions are", ""),
	"try":      unsupported("`try`/`except` statements are", ""),
	"except":   unsupported("`try`/`except` statements are", ""),
	"finally":  unsupported("`try`/`finally` statements are", ""),
	"with":     unsupported("`with` statements are", ""),
	"raise":    unsupported("`raise` statements are", "call fail(msg) to stop with an error"),
	"global":   unsupported("`global` declarations are", "return values instead of assigning globals"),
	"nonlocal": unsupported("`nonlocal` declarations are", ""),
	"del":      unsupported("`del` statements are", ""),
	"yield":    unsupported("generators (`yield`) are", "build and return a list"),
	"async":    unsupported("`async` functions are", ""),
	"await":    unsupported("`await` expressions are", ""),
}

var (
	msgPower      = unsupported("the power operator `**` is", "multiply, or write the value out")
	msgWalrus     = unsupported("assignment expressions (`:=`) are", "")
	msgAnnotation = unsupported("type annotations are", "")
	msgLoopElse   = unsupported("`else` clauses on `for`/`while` loops are", "")
	msgFString    = unsupported("f-strings are", `use str(x), + or "%d" % x`)
	msgIs         = unsupported("the `is` operator is",
		"only `x is None`, `x is not None` and the like with True or False are (as == and !=); compare other values with == or !=")
)

// findConstructs returns the uses of Python constructs Starlark lacks, in
// source order.
func findConstructs(toks []token) []construct {
	var out []construct
	add := func(t token, msg string) { out = append(out, construct{t.line, t.col, msg}) }

	var lines []logicalLine
	pendingDef, defParams := false, -1 // defParams: nesting inside a def's "(...)"
	for i, t := range toks {
		var prev token
		if i > 0 {
			prev = toks[i-1]
		}
		switch t.kind {
		case tokNewline:
			pendingDef, defParams = false, -1
		case tokName:
			if msg, ok := keywordConstructs[t.text]; ok {
				add(t, msg)
			}
			if _, ok := identityTest(toks, i); t.text == "is" && !ok {
				add(t, msgIs) // x is y; not x is None, which rewritePython takes
			}
			if t.lineStart {
				if t.text == "else" && elseOfLoop(lines, t.col-1) {
					add(t, msgLoopElse)
				}
				lines = append(lines, logicalLine{t.col - 1, t.text})
			}
			if t.stmtStart && !pythonKeywords[t.text] && i+1 < len(toks) && toks[i+1].is(":") {
				add(toks[i+1], msgAnnotation) // x: int = 1
			}
			pendingDef = pendingDef || t.text == "def"
		case tokString:
			switch p := t.stringPrefix(); {
			case strings.ContainsAny(p, "fF"):
				add(t, msgFString)
			case p != "" && p != "r" && p != "b" && p != "rb":
				add(t, unsupported("the string prefix "+p+" is", "Starlark allows r, b and rb"))
			}
		case tokOp:
			switch t.text {
			case "**":
				if endsOperand(prev) {
					add(t, msgPower)
				}
			case "**=":
				add(t, msgPower)
			case ":=":
				add(t, msgWalrus)
			case "->":
				add(t, msgAnnotation)
			case "(":
				if pendingDef && defParams < 0 {
					defParams = t.depth + 1
				}
			case ")":
				if t.depth == defParams {
					pendingDef, defParams = false, -1
				}
			case ":":
				// def f(x: int): a parameter name followed by a colon.
				if t.depth == defParams && defParams > 0 && i >= 2 && prev.kind == tokName {
					if b := toks[i-2]; b.is("(") || b.is(",") || b.is("*") || b.is("**") {
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
func endsOperand(t token) bool {
	switch t.kind {
	case tokNumber, tokString:
		return true
	case tokName:
		return !pythonKeywords[t.text] || t.text == "True" || t.text == "False" || t.text == "None"
	case tokOp:
		return t.text == ")" || t.text == "]" || t.text == "}"
	}
	return false
}

// pythonOnlyBuiltins are Python built-ins that Starlark does not have; an
// "undefined" error for one of them gets a hint.
var pythonOnlyBuiltins = map[string]bool{
	"open": true, "input": true, "exec": true, "eval": true, "compile": true,
	"__import__": true, "isinstance": true, "issubclass": true, "sum": true,
	"round": true, "pow": true, "map": true, "filter": true, "iter": true,
	"next": true, "object": true, "super": true, "globals": true, "locals": true,
	"vars": true, "id": true, "callable": true, "format": true, "exit": true,
	"quit": true, "divmod": true, "frozenset": true, "bytearray": true,
	"property": true, "staticmethod": true, "classmethod": true,
}
