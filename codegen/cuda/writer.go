package cuda

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mirage-go/mirage/ugraph"
)

// writer accumulates indented C++ source.
type writer struct {
	b      strings.Builder
	indent int
}

// line writes one line at the current indentation (an empty format writes
// an empty line).
func (w *writer) line(format string, args ...any) {
	if format == "" {
		w.b.WriteByte('\n')
		return
	}
	w.b.WriteString(strings.Repeat("  ", w.indent))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// open writes a line ending in " {" and indents.
func (w *writer) open(format string, args ...any) {
	if format == "" {
		w.line("{")
	} else {
		w.line(format+" {", args...)
	}
	w.indent++
}

// close dedents and writes "}" (plus suffix).
func (w *writer) close(suffix ...string) {
	w.indent--
	w.line("%s", "}"+strings.Join(suffix, ""))
}

// comment writes // lines, wrapping nothing: one line per argument.
func (w *writer) comment(lines ...string) {
	for _, l := range lines {
		if l == "" {
			w.line("//")
		} else {
			w.line("// %s", l)
		}
	}
}

// raw appends text as is.
func (w *writer) raw(s string) { w.b.WriteString(s) }

func (w *writer) String() string { return w.b.String() }

// ctype is the C++ element type of a dtype.
func ctype(dt ugraph.DType) string {
	switch dt {
	case ugraph.Float16:
		return "__half"
	case ugraph.BFloat16:
		return "__nv_bfloat16"
	}
	return "float"
}

// floatLit prints v as a float literal that reads back as float32(v). A
// v that float32 makes infinite, or zero where v is not (1e-46), is
// refused: the code would compute another function than the graph.
func floatLit(v float64) (string, error) {
	f := float32(v)
	if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) || f == 0 && v != 0 {
		return "", fmt.Errorf("scalar %v does not fit a 32-bit float", v)
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f", nil
}

// Sanitize turns name into a C identifier: characters other than ASCII
// letters, digits and '_' become '_', a leading digit gets a '_' before
// it, and an empty name becomes "program".
func Sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	switch {
	case s == "":
		return "program"
	case s[0] >= '0' && s[0] <= '9':
		return "_" + s
	}
	return s
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// tensorTable is a header's table of an entry point's tensors, a row per
// tensor: its name (inputs[k], outputs[j]) and then its other cells
// (dtype, shape, strides), each column as wide as its widest cell plus a
// space. The columns are never narrower than minWidths (a small program's
// table reads as it always has); the last column is not padded.
func tensorTable(rows [][]string, minWidths ...int) []string {
	widths := slices.Clone(minWidths)
	for _, r := range rows {
		for c, cell := range r[:len(r)-1] {
			if c >= len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], len(cell)+1)
		}
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for c, cell := range r[:len(r)-1] {
			fmt.Fprintf(&b, "%-*s", widths[c], cell)
		}
		b.WriteString(r[len(r)-1])
		lines[i] = b.String()
	}
	return lines
}
