package frontend

import (
	"io"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

// TestPythonValueSemantics: where Starlark's values compare otherwise than
// Python's, a program takes the branch Python takes. Each program fails
// (or builds another graph) unless every comparison gives Python's answer.
func TestPythonValueSemantics(t *testing.T) {
	for _, tt := range []struct {
		name string
		body []string // after g and X; the program fails unless these hold
	}{
		{"bool is an int", []string{
			"ok = (1 == True, 0 == False, 1.0 == True, True != 2, not (1 != True), (1, [0]) == (True, [False]))",
			"ok2 = (True < 2, False <= 0, max(True, 0) == 1, 1 in [True], True in (2, 1), 0 not in [1, True], 'a' in 'cat', 'k' in {'k': 1}, 2 not in {1: 0})",
		}},
		{"NaN equals nothing", []string{
			"nan = float('nan')",
			"ok = (not (nan == nan), nan != nan, not (nan < 1.0), not (nan > 1.0), not (nan >= nan), [nan] != [nan])",
			"ok2 = (str(max(1.0, nan)) == '1.0', str(min(nan, 1.0)) == 'nan', nan not in [1.0])",
		}},
		{"type is the built-in", []string{
			"ok = (type((64,)) == tuple, type([]) == list, type(1) == int, type(1.5) == float, type('a') == str, type({}) == dict, type(True) == bool)",
			"ok2 = (type(True) != int, type(1) != float, type((1,)) in (list, tuple), type(X) == type(X), type(X) != type(g), type(None) == type(None))",
		}},
		{"is stays identity", []string{
			"s = 'é'; one = 1",
			"ok = (not (one is True), one is not True, (1 == True) is True, s is not None, 'x' if s is None else True)",
			"ok2 = (('é', 0.0 is False) == ('é', False), (0 == False) is not False)",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := append([]string{"import mirage as mi", "g = mi.new_kernel_graph()", "X = g.new_input((16, 64))"}, tt.body...)
			lines = append(lines,
				"for k, v in enumerate(ok + ok2):",
				"    if v != True:",
				"        fail('check %d is %s' % (k, v))",
				"g.mark_output(g.exp(X))")
			p, err := Load("prog.py", []byte(src(lines...)), Options{Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(p.Graph); !slices.Equal(got, []ugraph.OpKind{ugraph.OpInput, ugraph.OpExp}) {
				t.Errorf("program %v", got)
			}
		})
	}
	// The review's programs: each builds what CPython does.
	for _, tt := range []struct {
		name string
		body []string
		want []ugraph.OpKind
	}{
		{"type(x) == tuple", []string{
			"def maybe_norm(g, x, shape):",
			"    if type(shape) == tuple:",
			"        x = g.rms_norm(x, shape)",
			"    return x",
			"Y = g.exp(maybe_norm(g, X, (64,)))",
		}, []ugraph.OpKind{ugraph.OpInput, ugraph.OpRMSNorm, ugraph.OpExp}},
		{"int == True", []string{"gated = 1", "Y = g.exp(X)", "if gated == True:", "    Y = g.silu(Y)"},
			[]ugraph.OpKind{ugraph.OpInput, ugraph.OpExp, ugraph.OpSilu}},
		{"nan == nan", []string{"scale = float('nan')", "Y = g.exp(X)", "if scale == scale:", "    Y = g.mul_scalar(Y, scale)"},
			[]ugraph.OpKind{ugraph.OpInput, ugraph.OpExp}},
	} {
		lines := append([]string{"import mirage as mi", "g = mi.new_kernel_graph()", "X = g.new_input((16, 64))"}, tt.body...)
		p, err := Load("prog.py", []byte(src(lines...)), Options{Stdout: io.Discard})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := kinds(p.Graph); !slices.Equal(got, tt.want) {
			t.Errorf("%s: program %v, want %v", tt.name, got, tt.want)
		}
	}
}
