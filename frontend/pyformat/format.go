// Package pyformat is Python's string formatting for Starlark values, as
// benchmark scripts use it to print their timings: format % args
// (printf-style) and str.format, with the flags, widths and precisions that
// Starlark's own lack ("%.3f", "%8d", "{:.3f}", "{:>10}"). An Inert value
// (a stub's result, such as time.time()) is a number the script never
// sees: a numeric conversion prints it as nan, %s and {} its name.
//
// Every result is bounded: each field's width and precision by
// maxFieldWidth, and the whole by the limit the caller gives, past which
// formatting stops with ErrTooLong. The loader (package frontend) charges
// what a format builds against a program's allocation bound.
//
// It is a package of its own because it is a library of Python semantics
// with no tie to the loader but the Inert interface: tested, and fuzzed,
// on values alone.
package pyformat

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// Inert is implemented by the values that stand for what a program cannot
// see, such as the result of a stubbed time.time() (package frontend's
// inert values): a numeric conversion formats one as nan, and %s, %r and {}
// as its String.
type Inert interface {
	starlark.Value
	Inert()
}

func isInert(v starlark.Value) bool {
	_, ok := v.(Inert)
	return ok
}

// maxFieldWidth bounds a field's width and precision: each field's output
// is then bounded too, and the caller bounds the whole.
const maxFieldWidth = 1 << 16

// spec is one conversion's format: str.format's mini-language
// ([[fill]align][sign][#][0][width][,|_][.precision][type]), which
// printf's flags map to.
type spec struct {
	fill  rune
	align byte // '<', '>', '=', '^'; 0: the type's default
	sign  byte // '+', '-', ' '
	alt   bool // '#'
	zero  bool // '0'
	width int
	group byte // ',' or '_'
	prec  int  // -1: none
	typ   byte // 0: none
}

// parseSpec parses a str.format spec.
func parseSpec(s string) (spec, error) {
	sp := spec{fill: ' ', sign: '-', prec: -1}
	bad := func() (spec, error) { return spec{}, fmt.Errorf("invalid format specifier %q", s) }
	isAlign := func(c byte) bool { return c == '<' || c == '>' || c == '=' || c == '^' }
	rest := s
	if r, n := utf8.DecodeRuneInString(rest); n > 0 && n < len(rest) && isAlign(rest[n]) {
		sp.fill, sp.align, rest = r, rest[n], rest[n+1:]
	} else if len(rest) > 0 && isAlign(rest[0]) {
		sp.align, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && (rest[0] == '+' || rest[0] == '-' || rest[0] == ' ') {
		sp.sign, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == 'z' { // negative zero as zero: printed as it is
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] == '#' {
		sp.alt, rest = true, rest[1:]
	}
	if len(rest) > 0 && rest[0] == '0' {
		sp.zero, rest = true, rest[1:]
	}
	var err error
	if sp.width, rest, err = digits(rest); err != nil {
		return spec{}, err
	}
	if len(rest) > 0 && (rest[0] == ',' || rest[0] == '_') {
		sp.group, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == '.' {
		if len(rest) == 1 || rest[1] < '0' || rest[1] > '9' {
			return spec{}, fmt.Errorf("format specifier %q: a precision needs digits after the '.'", s)
		}
		if sp.prec, rest, err = digits(rest[1:]); err != nil {
			return spec{}, err
		}
	}
	if len(rest) > 1 {
		return bad()
	}
	if len(rest) == 1 {
		if !strings.Contains("bcdeEfFgGnosxX%", rest) {
			return spec{}, fmt.Errorf("unknown format code '%s'", rest)
		}
		sp.typ = rest[0]
	}
	return sp, nil
}

// digits parses a width or precision at the start of s.
func digits(s string) (int, string, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, nil
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n > maxFieldWidth {
		return 0, "", fmt.Errorf("width or precision %s is more than %d", s[:i], maxFieldWidth)
	}
	return n, s[i:], nil
}

// formatValue formats v by sp, as Python's format(v, spec) does.
func formatValue(v starlark.Value, sp spec) (string, error) {
	switch v := v.(type) {
	case starlark.Bool:
		if sp.typ == 0 || sp.typ == 's' {
			return pad(v.String(), sp, '<'), nil
		}
		return formatValue(starlark.MakeInt(b2i(bool(v))), sp)
	case starlark.Int:
		switch sp.typ {
		case 0, 'd', 'n', 'b', 'o', 'x', 'X', 'c':
			return formatInt(v.BigInt(), sp)
		case 's':
			return "", fmt.Errorf("unknown format code 's' for object of type 'int'")
		}
		f, _ := starlark.AsFloat(v)
		return formatFloat(f, sp)
	case starlark.Float:
		switch sp.typ {
		case 'd', 'b', 'o', 'x', 'X', 'c', 's':
			return "", fmt.Errorf("unknown format code '%c' for object of type 'float'", sp.typ)
		}
		return formatFloat(float64(v), sp)
	case starlark.String:
		if sp.typ != 0 && sp.typ != 's' {
			return "", fmt.Errorf("unknown format code '%c' for object of type 'str'", sp.typ)
		}
		return formatString(string(v), sp)
	}
	if isInert(v) {
		if sp.typ == 0 && sp.prec < 0 || sp.typ == 's' {
			return formatString(v.String(), sp)
		}
		return formatFloat(math.NaN(), sp) // an unknown number
	}
	if sp.typ != 0 && sp.typ != 's' {
		return "", fmt.Errorf("unknown format code '%c' for object of type '%s'", sp.typ, v.Type())
	}
	return formatString(v.String(), sp)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func formatString(s string, sp spec) (string, error) {
	if sp.sign != '-' || sp.alt || sp.group != 0 || sp.align == '=' {
		return "", fmt.Errorf("a string takes no sign, '#', grouping or '=' alignment in its format")
	}
	if sp.prec >= 0 && utf8.RuneCountInString(s) > sp.prec {
		s = string([]rune(s)[:sp.prec])
	}
	return pad(s, sp, '<'), nil
}

// formatInt formats an integer by sp (type d, n, b, o, x, X, c or none).
func formatInt(n *big.Int, sp spec) (string, error) {
	if sp.prec >= 0 && sp.typ != 0 {
		return "", fmt.Errorf("precision not allowed in integer format specifier")
	}
	if sp.typ == 'c' {
		if !n.IsInt64() || n.Int64() < 0 || n.Int64() > utf8.MaxRune {
			return "", fmt.Errorf("%%c arg not in range(0x110000)")
		}
		return pad(string(rune(n.Int64())), sp, '>'), nil
	}
	base, prefix, every := 10, "", 3
	switch sp.typ {
	case 'b':
		base, prefix, every = 2, "0b", 4
	case 'o':
		base, prefix, every = 8, "0o", 4
	case 'x', 'X':
		base, prefix, every = 16, "0x", 4
	}
	body := new(big.Int).Abs(n).Text(base)
	if sp.typ == 'X' {
		body, prefix = strings.ToUpper(body), "0X"
	}
	if sp.group != 0 {
		body = group(body, sp.group, every)
	}
	if !sp.alt {
		prefix = ""
	}
	return number(n.Sign() < 0, prefix, body, sp), nil
}

// formatFloat formats a float by sp (type e, E, f, F, g, G, n, % or none).
func formatFloat(f float64, sp spec) (string, error) {
	neg := math.Signbit(f) && !math.IsNaN(f)
	a := math.Abs(f)
	typ, prec := sp.typ, sp.prec
	upper := typ == 'E' || typ == 'F' || typ == 'G'
	var body string
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		body = "nan"
		if math.IsInf(f, 0) {
			body = "inf"
		}
		if upper {
			body = strings.ToUpper(body)
		}
		if typ == '%' {
			body += "%"
		}
		sp.zero = false // Python pads nan and inf with spaces
		if sp.fill == '0' {
			sp.fill = ' '
		}
		return number(neg, "", body, sp), nil
	case typ == 0 && prec < 0:
		body = starlark.Float(a).String() // as str and print have it
	case typ == 'f' || typ == 'F':
		body = strconv.FormatFloat(a, 'f', orDefault(prec, 6), 64)
	case typ == 'e' || typ == 'E':
		body = strconv.FormatFloat(a, 'e', orDefault(prec, 6), 64)
	case typ == '%':
		body = strconv.FormatFloat(a*100, 'f', orDefault(prec, 6), 64) + "%"
	default: // g, G, n, or none with a precision
		p := max(orDefault(prec, 6), 1)
		if sp.alt {
			body = fmt.Sprintf("%#.*g", p, a)
		} else {
			body = fmt.Sprintf("%.*g", p, a)
		}
		if typ == 0 && !strings.ContainsAny(body, ".e") {
			body += ".0" // none: like g, but a float prints as one
		}
	}
	if sp.alt && !strings.Contains(body, ".") && typ != 'g' && typ != 'G' {
		// '#': a decimal point even without digits after it
		if i := strings.IndexAny(body, "e%"); i >= 0 {
			body = body[:i] + "." + body[i:]
		} else {
			body += "."
		}
	}
	if upper {
		body = strings.ToUpper(body)
	}
	if sp.group != 0 {
		end := strings.IndexAny(body, ".e%")
		if end < 0 {
			end = len(body)
		}
		body = group(body[:end], sp.group, 3) + body[end:]
	}
	return number(neg, "", body, sp), nil
}

func orDefault(prec, def int) int {
	if prec < 0 {
		return def
	}
	return prec
}

// group puts sep between groups of every digits, from the right.
func group(digits string, sep byte, every int) string {
	var b strings.Builder
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%every == 0 {
			b.WriteByte(sep)
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}

// number puts a number's sign, prefix and body together and pads it.
func number(neg bool, prefix, body string, sp spec) string {
	sign := ""
	switch {
	case neg:
		sign = "-"
	case sp.sign == '+':
		sign = "+"
	case sp.sign == ' ':
		sign = " "
	}
	if sp.zero && sp.align == 0 {
		sp.fill, sp.align = '0', '='
	}
	if sp.align == '=' {
		n := sp.width - utf8.RuneCountInString(sign+prefix+body)
		if n > 0 {
			body = strings.Repeat(string(sp.fill), n) + body
		}
		return sign + prefix + body
	}
	return pad(sign+prefix+body, sp, '>')
}

// pad pads s to sp's width, aligned as sp says or by def.
func pad(s string, sp spec, def byte) string {
	n := sp.width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	align := sp.align
	if align == 0 || align == '=' {
		align = def
	}
	fill := string(sp.fill)
	switch align {
	case '<':
		return s + strings.Repeat(fill, n)
	case '^':
		return strings.Repeat(fill, n/2) + s + strings.Repeat(fill, n-n/2)
	}
	return strings.Repeat(fill, n) + s
}

// ErrTooLong stops a formatting whose result grows past its limit.
var ErrTooLong = fmt.Errorf("the formatted string is too long")

// Percent is Python's format % args. limit bounds the result: past it,
// the error is ErrTooLong.
func Percent(format string, args starlark.Value, limit int64) (string, error) {
	tuple, isTuple := args.(starlark.Tuple)
	if !isTuple {
		tuple = starlark.Tuple{args}
	}
	mapping, _ := args.(starlark.Mapping)
	if _, ok := args.(starlark.String); ok {
		mapping = nil
	}
	var b strings.Builder
	next := 0
	arg := func() (starlark.Value, error) {
		if next >= len(tuple) {
			return nil, fmt.Errorf("not enough arguments for format string")
		}
		next++
		return tuple[next-1], nil
	}
	for i := 0; i < len(format); {
		j := strings.IndexByte(format[i:], '%')
		if j < 0 {
			b.WriteString(format[i:])
			break
		}
		b.WriteString(format[i : i+j])
		i += j + 1
		if i >= len(format) {
			return "", fmt.Errorf("incomplete format")
		}
		if format[i] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		var v starlark.Value
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", fmt.Errorf("incomplete format key")
			}
			if mapping == nil {
				return "", fmt.Errorf("format requires a mapping")
			}
			key := format[i+1 : i+end]
			got, found, err := mapping.Get(starlark.String(key))
			if err != nil {
				return "", err
			}
			if !found {
				return "", fmt.Errorf("key not found: %s", key)
			}
			v, i = got, i+end+1
		}
		sp := spec{fill: ' ', sign: '-', prec: -1, align: '>'}
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '-':
				sp.align = '<'
			case '+', ' ':
				if sp.sign != '+' {
					sp.sign = format[i]
				}
			case '#':
				sp.alt = true
			case '0':
				sp.zero = true
			default:
				break flags
			}
		}
		width := func() (int, error) {
			if i < len(format) && format[i] == '*' {
				i++
				w, err := arg()
				if err != nil {
					return 0, err
				}
				n, err := starlark.AsInt32(w)
				if err != nil {
					return 0, fmt.Errorf("* wants an int")
				}
				if n > maxFieldWidth {
					return 0, fmt.Errorf("width or precision %d is more than %d", n, maxFieldWidth)
				}
				return n, nil
			}
			n, rest, err := digits(format[i:])
			i = len(format) - len(rest)
			return n, err
		}
		var err error
		if sp.width, err = width(); err != nil {
			return "", err
		}
		if sp.width < 0 { // Python: a negative * width left-aligns
			sp.width, sp.align = -sp.width, '<'
		}
		if i < len(format) && format[i] == '.' {
			i++
			if sp.prec, err = width(); err != nil {
				return "", err
			}
			sp.prec = max(sp.prec, 0)
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++ // length modifiers: ignored, as Python does
		}
		if i >= len(format) {
			return "", fmt.Errorf("incomplete format")
		}
		conv := format[i]
		i++
		if v == nil {
			if v, err = arg(); err != nil {
				return "", err
			}
		}
		if sp.zero && sp.align != '<' {
			sp.align = 0 // zero padding after the sign
		}
		s, err := percentConversion(conv, v, sp)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		if int64(b.Len()) > limit {
			return "", ErrTooLong
		}
	}
	if next < len(tuple) && mapping == nil {
		return "", fmt.Errorf("too many arguments for format string")
	}
	return b.String(), nil
}

// percentConversion formats v for the conversion %conv. Its errors are
// Starlark's own %'s.
func percentConversion(conv byte, v starlark.Value, sp spec) (string, error) {
	switch conv {
	case 's', 'r':
		s := v.String()
		if str, ok := v.(starlark.String); ok && conv == 's' {
			s = string(str)
		}
		sp.zero, sp.sign, sp.alt = false, '-', false
		if sp.align != '<' {
			sp.align = '>'
		}
		return formatString(s, sp)
	case 'c':
		sp.zero = false
		switch x := v.(type) {
		case starlark.Int:
			r, err := starlark.AsInt32(x)
			if err != nil || r < 0 || r > utf8.MaxRune {
				return "", fmt.Errorf("%%c format requires a valid Unicode code point, got %s", x)
			}
			return pad(string(rune(r)), sp, '>'), nil
		case starlark.String:
			if r, size := utf8.DecodeRuneInString(string(x)); size != len(x) || len(x) == 0 || r == utf8.RuneError && size == 1 {
				return "", fmt.Errorf("%%c format requires a single-character string")
			}
			return pad(string(x), sp, '>'), nil
		}
		return "", fmt.Errorf("%%c format requires int or single-character string, not %s", v.Type())
	case 'd', 'i', 'u', 'o', 'x', 'X':
		sp.typ = conv
		if conv == 'i' || conv == 'u' {
			sp.typ = 'd'
		}
		if isInert(v) {
			return formatFloat(math.NaN(), sp) // an unknown number
		}
		if b, ok := v.(starlark.Bool); ok {
			v = starlark.MakeInt(b2i(bool(b)))
		}
		n, err := starlark.NumberToInt(v)
		if err != nil {
			return "", fmt.Errorf("%%%c format requires integer: %v", conv, err)
		}
		return percentInt(n.BigInt(), sp)
	case 'e', 'E', 'f', 'F', 'g', 'G':
		sp.typ = conv
		if isInert(v) {
			return formatFloat(math.NaN(), sp)
		}
		f, ok := starlark.AsFloat(v)
		if !ok {
			return "", fmt.Errorf("%%%c format requires float, not %s", conv, v.Type())
		}
		return formatFloat(f, sp)
	}
	return "", fmt.Errorf("unknown conversion %%%c", conv)
}

// percentInt formats an integer for %d, %o, %x or %X, whose precision is
// a least number of digits (%.3d: 007).
func percentInt(n *big.Int, sp spec) (string, error) {
	prec := sp.prec
	sp.prec = -1
	if prec <= 0 {
		return formatInt(n, sp)
	}
	base := map[byte]int{'d': 10, 'o': 8, 'x': 16, 'X': 16}[sp.typ]
	digits := new(big.Int).Abs(n).Text(base)
	if len(digits) < prec {
		digits = strings.Repeat("0", prec-len(digits)) + digits
	}
	if sp.typ == 'X' {
		digits = strings.ToUpper(digits)
	}
	prefix := ""
	if sp.alt {
		prefix = map[byte]string{'d': "", 'o': "0o", 'x': "0x", 'X': "0X"}[sp.typ]
	}
	sp.zero = false
	if sp.align == 0 {
		sp.align = '>'
	}
	return number(n.Sign() < 0, prefix, digits, sp), nil
}

// Format is Python's format.format(*args, **kwargs). limit bounds the
// result: past it, the error is ErrTooLong.
func Format(format string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) (string, error) {
	f := formatter{args: args, kwargs: kwargs, limit: limit}
	return f.format(format, 0)
}

type formatter struct {
	args   starlark.Tuple
	kwargs []starlark.Tuple
	auto   int  // the next automatic field number
	manual bool // fields numbered by hand: no automatic numbering then
	limit  int64
}

func (f *formatter) format(s string, depth int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '}':
			if i+1 < len(s) && s[i+1] == '}' {
				b.WriteByte('}')
				i += 2
				continue
			}
			return "", fmt.Errorf("single '}' encountered in format string")
		case c != '{':
			b.WriteByte(c)
			i++
			continue
		case i+1 < len(s) && s[i+1] == '{':
			b.WriteByte('{')
			i += 2
			continue
		}
		// A replacement field: find its end, past nested fields in its spec.
		level, end := 1, -1
		for j := i + 1; j < len(s); j++ {
			if s[j] == '{' {
				level++
			} else if s[j] == '}' {
				if level--; level == 0 {
					end = j
					break
				}
			}
		}
		if end < 0 {
			return "", fmt.Errorf("expected '}' before end of string")
		}
		out, err := f.field(s[i+1:end], depth)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
		if int64(b.Len()) > f.limit {
			return "", ErrTooLong
		}
		i = end + 1
	}
	return b.String(), nil
}

// field formats one replacement field: name[!conv][:spec].
func (f *formatter) field(field string, depth int) (string, error) {
	name, specText := field, ""
	if k := strings.IndexByte(field, ':'); k >= 0 {
		name, specText = field[:k], field[k+1:]
	}
	conv := byte(0)
	if k := strings.IndexByte(name, '!'); k >= 0 {
		if len(name) != k+2 || !strings.Contains("rsa", name[k+1:]) {
			return "", fmt.Errorf("invalid conversion in %q: want !r, !s or !a", field)
		}
		name, conv = name[:k], name[k+1]
	}
	v, err := f.lookup(name)
	if err != nil {
		return "", err
	}
	if strings.ContainsRune(specText, '{') {
		if depth > 0 {
			return "", fmt.Errorf("max format spec recursion exceeded")
		}
		if specText, err = f.format(specText, depth+1); err != nil {
			return "", err
		}
	}
	switch conv {
	case 'r', 'a':
		v = starlark.String(v.String())
	case 's':
		if _, ok := v.(starlark.String); !ok {
			v = starlark.String(v.String())
		}
	}
	sp, err := parseSpec(specText)
	if err != nil {
		return "", err
	}
	return formatValue(v, sp)
}

// lookup finds a field's value: "" (the next argument), an index or a
// keyword, then .attr and [key] selectors.
func (f *formatter) lookup(name string) (starlark.Value, error) {
	first := name
	if k := strings.IndexAny(name, ".["); k >= 0 {
		first, name = name[:k], name[k:]
	} else {
		name = ""
	}
	var v starlark.Value
	switch n, err := strconv.Atoi(first); {
	case first == "":
		if f.manual {
			return nil, fmt.Errorf("cannot switch from manual field specification to automatic field numbering")
		}
		if f.auto >= len(f.args) {
			return nil, fmt.Errorf("replacement index %d out of range for positional args tuple", f.auto)
		}
		v = f.args[f.auto]
		f.auto++
	case err == nil:
		if f.auto > 0 {
			return nil, fmt.Errorf("cannot switch from automatic field numbering to manual field specification")
		}
		f.manual = true
		if n < 0 || n >= len(f.args) {
			return nil, fmt.Errorf("replacement index %d out of range for positional args tuple", n)
		}
		v = f.args[n]
	default:
		for _, kv := range f.kwargs {
			if string(kv[0].(starlark.String)) == first {
				v = kv[1]
			}
		}
		if v == nil {
			return nil, fmt.Errorf("keyword %q not given to format", first)
		}
	}
	for name != "" {
		switch name[0] {
		case '.':
			end := strings.IndexAny(name[1:], ".[") + 1
			if end == 0 {
				end = len(name)
			}
			attr, err := getAttr(v, name[1:end])
			if err != nil {
				return nil, err
			}
			v, name = attr, name[end:]
		case '[':
			end := strings.IndexByte(name, ']')
			if end < 0 {
				return nil, fmt.Errorf("missing ']' in format string")
			}
			key := name[1:end]
			var k starlark.Value = starlark.String(key)
			if n, err := strconv.Atoi(key); err == nil {
				k = starlark.MakeInt(n)
			}
			got, err := index(v, k)
			if err != nil {
				return nil, err
			}
			v, name = got, name[end+1:]
		default:
			return nil, fmt.Errorf("only '.' or '[' may follow ']' in format field specifier")
		}
	}
	return v, nil
}

// index is v[k] for the field selectors of str.format.
func index(v, k starlark.Value) (starlark.Value, error) {
	if m, ok := v.(starlark.Mapping); ok {
		got, found, err := m.Get(k)
		if err != nil || !found {
			return nil, fmt.Errorf("key %v not in %s", k, v.Type())
		}
		return got, nil
	}
	seq, ok := v.(starlark.Indexable)
	n, isInt := k.(starlark.Int)
	if !ok || !isInt {
		return nil, fmt.Errorf("%s is not indexable by %s", v.Type(), k.Type())
	}
	i, ok := n.Int64()
	if !ok || i < 0 || i >= int64(seq.Len()) {
		return nil, fmt.Errorf("index %v out of range", k)
	}
	return seq.Index(int(i)), nil
}

// getAttr is x.name, as Starlark evaluates it.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	if x, ok := x.(starlark.HasAttrs); ok {
		v, err := x.Attr(name)
		if err != nil || v != nil {
			return v, err
		}
	}
	return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
}
