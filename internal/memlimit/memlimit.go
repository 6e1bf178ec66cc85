// Package memlimit is how the evaluators refuse work that would not fit in
// memory: before allocating anything they add up what the work needs, in
// bytes, and compare it with a bound; the error says how much it would
// have needed.
package memlimit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Default is the bound when none is given: 4 GiB, many times what the
// example programs take (their largest weight, 4096x6144, is 192 MiB in
// float64) and well below a workstation's memory. One 32768x32768 tensor
// (8 GiB in float64) exceeds it.
const Default = 4 << 30

// Error reports work that needs more memory than its bound.
type Error struct {
	What  string // the work, as the subject of a sentence: "evaluating it in float64"
	Need  int64  // bytes; math.MaxInt64 when the total overflowed
	Limit int64
	// Detail, when not empty, says where the need comes from: "its
	// largest tensor, ..., takes 8 GiB".
	Detail string
}

func (e *Error) Error() string {
	need, limit := Format(e.Need), Format(e.Limit)
	if need == limit { // just over: say by how much
		need += fmt.Sprintf(" (%d bytes)", e.Need)
		limit += fmt.Sprintf(" (%d bytes)", e.Limit)
	}
	s := fmt.Sprintf("%s needs %s of memory, more than the limit of %s", e.What, need, limit)
	if e.Detail != "" {
		s += "; " + e.Detail
	}
	return s
}

// Check returns an *Error when need exceeds limit, else nil.
func Check(what string, need, limit int64) error {
	if need > limit {
		return &Error{What: what, Need: need, Limit: limit}
	}
	return nil
}

// units are the binary multiples, by powers of 1024.
var units = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Format writes a number of bytes for people, to three significant digits
// in the largest unit that keeps one before the point: "192 MiB", "1.5 GiB",
// "100 B". math.MaxInt64 (a total that saturated) is "more than 8 EiB".
func Format(n int64) string {
	if n == math.MaxInt64 {
		return "more than 8 EiB"
	}
	u, f := 0, float64(n)
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	prec := 0
	switch {
	case u == 0 || f >= 100:
	case f >= 10:
		prec = 1
	default:
		prec = 2
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if prec > 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + " " + units[u]
}

// Parse reads a size written as a number of bytes with an optional unit:
// "4294967296", "512MiB", "4 GiB", "1.5GiB", "4GB". Binary units are
// written as Format writes them or by their first letter ("4G"); decimal
// ones, powers of 1000, as kB, MB, GB, TB, PB. Case does not matter. The
// result is positive.
func Parse(s string) (int64, error) {
	num := strings.TrimSpace(s)
	unit := ""
	if i := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = strings.TrimSpace(num[:i]), strings.TrimSpace(num[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB or kB, MB, GB, TB)", s)
	}
	mult, ok := multiple(unit)
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB or kB, MB, GB, TB, PB)", s, unit)
	}
	if f *= mult; f < 1 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return int64(f), nil
}

// multiple returns the bytes in one unit.
func multiple(unit string) (float64, bool) {
	if unit == "" || strings.EqualFold(unit, "B") {
		return 1, true
	}
	for k, name := range units[1:] {
		switch {
		case strings.EqualFold(unit, name), strings.EqualFold(unit, name[:1]):
			return math.Pow(1024, float64(k+1)), true
		case strings.EqualFold(unit, name[:1]+"B"):
			return math.Pow(1000, float64(k+1)), true
		}
	}
	return 0, false
}

// IsOver says whether err is, or wraps, work refused for passing its
// memory limit.
func IsOver(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}
