package pymath_test

import (
	"math"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/pymath"
)

// eval evaluates expr with math predeclared.
func eval(t *testing.T, expr string) (starlark.Value, error) {
	t.Helper()
	return starlark.EvalOptions(&syntax.FileOptions{}, &starlark.Thread{}, "expr", expr, starlark.StringDict{"math": pymath.Module})
}

// What Python's math gives, or the error it raises, as CPython 3 does
// (ValueError: math domain error; OverflowError: math range error).
func TestModule(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want string // the value's String(), or a part of the error
		err  bool
	}{
		{"math.sqrt(16)", "4.0", false},
		{"1 / math.sqrt(128)", "0.08838834764831843", false},
		{"math.log(8, 2)", "3.0", false},
		{"math.log2(8)", "3.0", false},
		{"math.log10(1000)", "3.0", false},
		{"math.exp(0)", "1.0", false},
		{"math.pow(2, 10)", "1024.0", false},
		{"math.floor(2.5)", "2", false},
		{"math.ceil(2.5)", "3", false},
		{"math.trunc(-2.5)", "-2", false},
		{"math.isqrt(10)", "3", false},
		{"math.fmod(7, 3)", "1.0", false},
		{"math.erf(0)", "0.0", false},
		{"math.isnan(math.nan)", "True", false},
		{"math.isinf(-math.inf)", "True", false},
		{"math.isfinite(1e308)", "True", false},
		{"math.tau == 2 * math.pi", "True", false},
		{"math.sqrt(math.inf)", "+inf", false}, // inf in, inf out
		{"math.sqrt(-1)", "math.sqrt(-1): math domain error", true},
		{"math.log(0)", "math.log(0): math domain error", true},
		{"math.log2(-4)", "math domain error", true},
		{"math.gamma(0)", "math.gamma(0): math domain error", true},
		{"math.fmod(1, 0)", "math.fmod(1, 0): math domain error", true},
		{"math.exp(1000)", "math.exp(1000): math range error", true},
		{"math.isqrt(-1)", "isqrt: -1: the argument must be at least 0", true},
		{"math.round(2.5)", "has no .round field or method", true}, // a builtin in Python, not math's
		{"math.mod(7, 3)", "has no .mod field or method", true},
		{`math.isnan("x")`, "isnan: for parameter 1: got string, want int or float", true},
		{`math.fmod(1, "x")`, "fmod: for parameter 2: got string, want int or float", true},
	} {
		v, err := eval(t, tt.expr)
		switch {
		case tt.err && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, %v; want the error %q", tt.expr, v, err, tt.want)
		case !tt.err && (err != nil || v.String() != tt.want):
			t.Errorf("%s: %v, %v; want %s", tt.expr, v, err, tt.want)
		}
	}
	if v, err := eval(t, "math.nan"); err != nil || !math.IsNaN(float64(v.(starlark.Float))) {
		t.Errorf("math.nan: %v, %v", v, err)
	}
}
