package pyformat

import (
	"math"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// inert is an inert value as package frontend's are to formatting: its
// attributes and elements are inert too.
type inert struct{ name string }

func (x inert) String() string                           { return "<inert " + x.name + ">" }
func (x inert) Type() string                             { return "inert" }
func (x inert) Freeze()                                  {}
func (x inert) Truth() starlark.Bool                     { return false }
func (x inert) Hash() (uint32, error)                    { return 0, nil }
func (x inert) Inert()                                   {}
func (x inert) Attr(name string) (starlark.Value, error) { return inert{x.name + "." + name}, nil }
func (x inert) AttrNames() []string                      { return nil }
func (x inert) Get(starlark.Value) (starlark.Value, bool, error) {
	return inert{x.name + "[]"}, true, nil
}

var stub = inert{"time.time()"}

// The figures are Python 3's for the same format and arguments (but %r
// and !r, which quote as Starlark does), and nan for a stub's value.
func TestPercentFormat(t *testing.T) {
	f, i, s := func(x float64) starlark.Value { return starlark.Float(x) }, func(x int) starlark.Value { return starlark.MakeInt(x) }, func(x string) starlark.Value { return starlark.String(x) }
	big := starlark.MakeInt64(1e18)
	big = big.Mul(starlark.MakeInt(100))
	dict := starlark.NewDict(1)
	dict.SetKey(s("n"), i(12))
	tests := []struct {
		format string
		args   starlark.Value
		want   string
	}{
		{"%f", f(1.5), "1.500000"},
		{"%.3f", f(1.5), "1.500"},
		{"%8.2f", f(3.14159), "    3.14"},
		{"%-8.2f|", f(3.14159), "3.14    |"},
		{"%+.1f", f(2), "+2.0"},
		{"%08.3f", f(-3.5), "-003.500"},
		{"%e", f(12345.678), "1.234568e+04"},
		{"%.2E", f(0.000123), "1.23E-04"},
		{"%g", f(0.0001), "0.0001"},
		{"%g", f(1e-5), "1e-05"},
		{"%.3g", f(1234.5), "1.23e+03"},
		{"%#g", f(1.5), "1.50000"},
		{"%G", f(1e20), "1E+20"},
		{"%d", i(42), "42"},
		{"%5d|", i(42), "   42|"},
		{"%-5d|", i(42), "42   |"},
		{"%05d", i(-42), "-0042"},
		{"%+d", i(7), "+7"},
		{"% d", i(7), " 7"},
		{"%.3d", i(7), "007"},
		{"%d", f(3.99), "3"},
		{"%i", starlark.True, "1"},
		{"%x %X %o", starlark.Tuple{i(255), i(255), i(8)}, "ff FF 10"},
		{"%#x %#X %#o", starlark.Tuple{i(255), i(255), i(8)}, "0xff 0XFF 0o10"},
		{"%c%c", starlark.Tuple{i(72), s("i")}, "Hi"},
		{"%s and %r", starlark.Tuple{s("a"), s("b")}, `a and "b"`},
		{"%10s|", s("ab"), "        ab|"},
		{"%-10s|", s("ab"), "ab        |"},
		{"%.2s", s("abcdef"), "ab"},
		{"%*d|", starlark.Tuple{i(5), i(3)}, "    3|"},
		{"%-*d|", starlark.Tuple{i(5), i(3)}, "3    |"},
		{"%.*f", starlark.Tuple{i(2), f(3.14159)}, "3.14"},
		{"%(n)d ms", dict, "12 ms"},
		{"100%%", starlark.Tuple{}, "100%"},
		{"%5.1f%%", f(99.55), " 99.5%"},
		{"%.0f", f(2.5), "2"},
		{"%.0f", f(3.5), "4"},
		{"%s", starlark.NewList([]starlark.Value{i(1), i(2)}), "[1, 2]"},
		{"%f", f(math.Inf(1)), "inf"},
		{"%5.1f|", f(math.NaN()), "  nan|"},
		{"%d", big, "100000000000000000000"},
		{"%.2f", big, "100000000000000000000.00"},
		{"%ld", i(5), "5"},
		// A stub's value is a number never seen: nan, or its name for %s.
		{"%f", stub, "nan"},
		{"%.3f s", stub, "nan s"},
		{"%8.2f|", stub, "     nan|"},
		{"%d", stub, "nan"},
		{"%s", stub, "<inert time.time()>"},
	}
	for _, tt := range tests {
		got, err := Percent(tt.format, tt.args, 1<<20)
		if err != nil || got != tt.want {
			t.Errorf("%q %% %v = %q, %v; want %q", tt.format, tt.args, got, err, tt.want)
		}
	}
}

func TestPercentFormatErrors(t *testing.T) {
	tests := []struct {
		format string
		args   starlark.Value
		want   string
	}{
		{"%d %d", starlark.MakeInt(1), "not enough arguments for format string"},
		{"%d", starlark.Tuple{starlark.MakeInt(1), starlark.MakeInt(2)}, "too many arguments for format string"},
		{"%d", starlark.String("x"), "%d format requires integer"},
		{"%f", starlark.String("x"), "%f format requires float, not string"},
		{"%q", starlark.MakeInt(1), "unknown conversion %q"},
		{"%", starlark.MakeInt(1), "incomplete format"},
		{"%.", starlark.MakeInt(1), "incomplete format"},
		{"%(a)s", starlark.MakeInt(1), "format requires a mapping"},
		{"%99999999d", starlark.MakeInt(1), "more than 65536"},
		{"%c", starlark.String("ab"), "%c format requires a single-character string"},
	}
	for _, tt := range tests {
		if got, err := Percent(tt.format, tt.args, 1<<20); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q %% %v = %q, %v; want an error with %q", tt.format, tt.args, got, err, tt.want)
		}
	}
	if _, err := Percent(strings.Repeat("%9999d", 100), starlark.Tuple(repeat(starlark.MakeInt(1), 100)), 1<<16); err != ErrTooLong {
		t.Errorf("a result past the limit: %v", err)
	}
}

func repeat(v starlark.Value, n int) []starlark.Value {
	vs := make([]starlark.Value, n)
	for i := range vs {
		vs[i] = v
	}
	return vs
}

func TestStrFormat(t *testing.T) {
	f, i, s := func(x float64) starlark.Value { return starlark.Float(x) }, func(x int) starlark.Value { return starlark.MakeInt(x) }, func(x string) starlark.Value { return starlark.String(x) }
	kw := func(kv ...any) []starlark.Tuple {
		var out []starlark.Tuple
		for k := 0; k < len(kv); k += 2 {
			out = append(out, starlark.Tuple{s(kv[k].(string)), kv[k+1].(starlark.Value)})
		}
		return out
	}
	big := starlark.MakeInt64(1e18).Mul(starlark.MakeInt(100))
	tests := []struct {
		format string
		args   starlark.Tuple
		kwargs []starlark.Tuple
		want   string
	}{
		{"{:.3f}", starlark.Tuple{f(1.5)}, nil, "1.500"},
		{"{:.2f} ms", starlark.Tuple{f(12.345)}, nil, "12.35 ms"}, // 12.345 is 12.3449999...
		{"{:8.2f}|", starlark.Tuple{f(3.14159)}, nil, "    3.14|"},
		{"{:<8.2f}|", starlark.Tuple{f(3.14159)}, nil, "3.14    |"},
		{"{:^9.1f}|", starlark.Tuple{f(2.25)}, nil, "   2.2   |"},
		{"{:>10}|", starlark.Tuple{s("ab")}, nil, "        ab|"},
		{"{:10}|", starlark.Tuple{s("ab")}, nil, "ab        |"},
		{"{:*^7}", starlark.Tuple{s("ab")}, nil, "**ab***"},
		{"{:10}|", starlark.Tuple{i(42)}, nil, "        42|"},
		{"{:05d}", starlark.Tuple{i(-42)}, nil, "-0042"},
		{"{:+d}", starlark.Tuple{i(5)}, nil, "+5"},
		{"{:,}", starlark.Tuple{i(1234567)}, nil, "1,234,567"},
		{"{:_}", starlark.Tuple{i(1234567)}, nil, "1_234_567"},
		{"{:,.2f}", starlark.Tuple{f(1234567.891)}, nil, "1,234,567.89"},
		{"{:x} {:X} {:#x} {:#o} {:b} {:#b}", starlark.Tuple{i(255), i(255), i(255), i(8), i(5), i(5)}, nil, "ff FF 0xff 0o10 101 0b101"},
		{"{:e}", starlark.Tuple{f(12345.678)}, nil, "1.234568e+04"},
		{"{:.2e}", starlark.Tuple{f(0.000123)}, nil, "1.23e-04"},
		{"{:g}", starlark.Tuple{f(1e-5)}, nil, "1e-05"},
		{"{:.3g}", starlark.Tuple{f(1234.5)}, nil, "1.23e+03"},
		{"{:%}", starlark.Tuple{f(0.25)}, nil, "25.000000%"},
		{"{:.1%}", starlark.Tuple{f(0.256)}, nil, "25.6%"},
		{"{0} {1} {0}", starlark.Tuple{s("a"), s("b")}, nil, "a b a"},
		{"{name}={val:.1f}", nil, kw("name", s("t"), "val", f(2.345)), "t=2.3"},
		{"{{}} {}", starlark.Tuple{i(1)}, nil, "{} 1"},
		{"{!r}", starlark.Tuple{s("x")}, nil, `"x"`},
		{"{:.3}", starlark.Tuple{f(1.23456)}, nil, "1.23"},
		{"{:.3}", starlark.Tuple{s("abcdef")}, nil, "abc"},
		{"{}", starlark.Tuple{f(1.5)}, nil, "1.5"},
		{"{:f}", starlark.Tuple{i(3)}, nil, "3.000000"},
		{"{:.2f}", starlark.Tuple{big}, nil, "100000000000000000000.00"},
		{"{0[1]}", starlark.Tuple{starlark.NewList([]starlark.Value{i(7), i(8)})}, nil, "8"},
		{"{:{w}.{p}f}", starlark.Tuple{f(3.14159)}, kw("w", i(8), "p", i(2)), "    3.14"},
		{"{:=+8.2f}", starlark.Tuple{f(3.5)}, nil, "+   3.50"},
		{"{:c}", starlark.Tuple{i(65)}, nil, "A"},
		{"{:n}", starlark.Tuple{i(1234)}, nil, "1234"},
		{"{:08.3f}", starlark.Tuple{f(-1.5)}, nil, "-001.500"},
		// A stub's value: nan as a number, its name as itself.
		{"{:.3f}", starlark.Tuple{stub}, nil, "nan"},
		{"{:.2f} ms", starlark.Tuple{stub}, nil, "nan ms"},
		{"{:>6.1f}|", starlark.Tuple{stub}, nil, "   nan|"},
		{"{}", starlark.Tuple{stub}, nil, "<inert time.time()>"},
		{"{0.elapsed:.3f} {0[1]}", starlark.Tuple{stub}, nil, "nan <inert time.time()[]>"},
	}
	for _, tt := range tests {
		got, err := Format(tt.format, tt.args, tt.kwargs, 1<<20)
		if err != nil || got != tt.want {
			t.Errorf("%q.format(%v, %v) = %q, %v; want %q", tt.format, tt.args, tt.kwargs, got, err, tt.want)
		}
	}
}

func TestStrFormatErrors(t *testing.T) {
	one := starlark.Tuple{starlark.MakeInt(1)}
	tests := []struct {
		format string
		args   starlark.Tuple
		want   string
	}{
		{"{} {}", one, "replacement index 1 out of range"},
		{"{0} {}", starlark.Tuple{starlark.MakeInt(1), starlark.MakeInt(2)}, "cannot switch from manual"},
		{"{x}", one, `keyword "x" not given`},
		{"{:q}", one, "unknown format code 'q'"},
		{"{:.3d}", one, "precision not allowed"},
		{"{:s}", one, "unknown format code 's' for object of type 'int'"},
		{"{:d}", starlark.Tuple{starlark.Float(1)}, "unknown format code 'd' for object of type 'float'"},
		{"{:f}", starlark.Tuple{starlark.String("x")}, "unknown format code 'f' for object of type 'str'"},
		{"{", one, "expected '}'"},
		{"}", one, "single '}'"},
		{"{!x}", one, "invalid conversion"},
		{"{:99999999}", one, "more than 65536"},
		{"{:.}", one, "a precision needs digits"},
		{"{:{:{}}}", starlark.Tuple{starlark.MakeInt(1), starlark.MakeInt(2), starlark.MakeInt(3)}, "recursion"},
	}
	for _, tt := range tests {
		if got, err := Format(tt.format, tt.args, nil, 1<<20); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q.format(%v) = %q, %v; want an error with %q", tt.format, tt.args, got, err, tt.want)
		}
	}
}

// FuzzPercentFormat: no format and argument make % panic or build more
// than its limit.
func FuzzPercentFormat(f *testing.F) {
	for _, s := range []string{"%f", "%.3f", "%-*.*f|%s", "%(a)5.2e", "%#08x", "%c", "%%", "%.0g"} {
		f.Add(s, 1.5, int64(3), "x")
	}
	f.Fuzz(func(t *testing.T, format string, x float64, n int64, s string) {
		d := starlark.NewDict(1)
		d.SetKey(starlark.String("a"), starlark.Float(x))
		for _, args := range []starlark.Value{
			starlark.Float(x), starlark.MakeInt64(n), starlark.String(s), stub, d,
			starlark.Tuple{starlark.MakeInt64(n), starlark.Float(x), starlark.String(s), stub},
		} {
			out, err := Percent(format, args, 4096)
			if err == nil && len(out) > 4096+maxFieldWidth+64 {
				t.Fatalf("%q %% %v: %d bytes past the limit", format, args, len(out))
			}
		}
	})
}

// FuzzStrFormat: no format and argument make str.format panic or build
// more than its limit.
func FuzzStrFormat(f *testing.F) {
	for _, s := range []string{"{:.3f}", "{0:>{1}}", "{a[0]:_}", "{!r:^9}", "{:#b}", "{{}}", "{:,.2%}"} {
		f.Add(s, 1.5, int64(3), "x")
	}
	f.Fuzz(func(t *testing.T, format string, x float64, n int64, s string) {
		args := starlark.Tuple{starlark.Float(x), starlark.MakeInt64(n % 100), starlark.String(s), stub}
		kwargs := []starlark.Tuple{{starlark.String("a"), starlark.NewList([]starlark.Value{starlark.MakeInt64(n)})}}
		out, err := Format(format, args, kwargs, 4096)
		if err == nil && len(out) > 4096+maxFieldWidth+64 {
			t.Fatalf("%q.format: %d bytes past the limit", format, len(out))
		}
	})
}
