package rewrite

import (
	"strings"
	"unicode/utf8"
)

// Columns maps a position of Source's code back to the program's. Lines
// never move; columns do after a rewrite that changes a line's length (a
// decorator or an assert becoming a call, @ becoming a multiplication, an
// import becoming an assignment), so an error that Starlark reports in the
// code must be mapped before a user reads it. The zero value maps every
// column to itself.
type Columns struct {
	edits map[int][]edit // by line, in column order
}

// edit says that the columns [out0, out1) of a line of the code stand for
// the columns [src0, src1) of the same line of the program (1-based, in
// runes, as Starlark counts them).
type edit struct{ out0, out1, src0, src1 int }

// Source returns the program's column for column col of line line of the
// code: the same text's column where the code copies the program, and the
// column where a rewritten construct starts for a column inside the text
// the rewrite put in its place.
func (c Columns) Source(line, col int) int {
	shift := 0
	for _, e := range c.edits[line] {
		if col < e.out0 {
			break
		}
		if col < e.out1 {
			return e.src0
		}
		shift = e.out1 - e.src1
	}
	return col - shift
}

// record notes that src[s0:s1], on the given line of the program, became
// code[o0:o1]: offsets in bytes, converted to columns.
func (c *Columns) record(line int, src string, s0, s1 int, code string, o0, o1 int) {
	if c.edits == nil {
		c.edits = map[int][]edit{}
	}
	c.edits[line] = append(c.edits[line], edit{
		out0: column(code, o0), out1: column(code, o1),
		src0: column(src, s0), src1: column(src, s1),
	})
}

// column is the 1-based rune column of byte offset off in s, whose lines
// end as pylex and Starlark end them: at "\n", "\r\n" or a lone "\r".
func column(s string, off int) int {
	return 1 + utf8.RuneCountInString(s[lineStart(s, off):off])
}

// lineStart is the offset where the line holding byte offset off starts.
func lineStart(s string, off int) int { return strings.LastIndexAny(s[:off], "\r\n") + 1 }

// lineEnds counts the line ends in s as pylex and Starlark count them:
// "\r\n" is one, and so is a lone '\r' (a string continued by a backslash
// before one spans two lines).
func lineEnds(s string) int {
	return strings.Count(s, "\n") + strings.Count(s, "\r") - strings.Count(s, "\r\n")
}

// lineEnd is the offset where the line holding byte offset off ends.
func lineEnd(s string, off int) int {
	if i := strings.IndexAny(s[off:], "\r\n"); i >= 0 {
		return off + i
	}
	return len(s)
}
