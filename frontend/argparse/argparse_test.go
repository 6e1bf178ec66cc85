// The emulation exists for mirage programs, so these tests load such
// programs (frontend.Load, which an external test package may import): what
// parse_args gives them, and its errors at the program's lines.
package argparse_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph"
)

// src joins lines into a program.
func src(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// argProgram reads its shapes from the command line, as Mirage's
// benchmark scripts do; it prints the parsed arguments.
var argProgram = src(
	"import mirage as mi",
	"import argparse",
	"parser = argparse.ArgumentParser(description='rms_norm', formatter_class=argparse.ArgumentDefaultsHelpFormatter)",
	"parser.add_argument('-b', '--batch_size', type=int, default=1, help='batch size')",
	"parser.add_argument('--file', type=str, default='rmsnorm.json')",
	"parser.add_argument('--scale', type=float, default=0.5)",
	"parser.add_argument('--save-codes', action='store_true')",
	"parser.add_argument('--mode', choices=['mlp', 'attention'], default='mlp')",
	"parser.add_argument('--hidden', type=int, default='4096')",
	"args = parser.parse_args()",
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(2 * args.batch_size, args.hidden), dtype=mi.float16)",
	"g.mark_output(g.exp(X))",
	"print(args)",
)

func TestArgparse(t *testing.T) {
	const defaults = `Namespace(batch_size=1, file="rmsnorm.json", scale=0.5, save_codes=False, mode="mlp", hidden=4096)`
	tests := []struct {
		args  []string
		shape ugraph.Shape // input 0
		ns    string       // the printed namespace
	}{
		{nil, ugraph.MustShape(2, 4096), defaults},
		{[]string{"--batch_size", "8"}, ugraph.MustShape(16, 4096), ""},
		{[]string{"--batch_size=8"}, ugraph.MustShape(16, 4096), ""},
		{[]string{"-b", "8"}, ugraph.MustShape(16, 4096), ""},
		{[]string{"-b8"}, ugraph.MustShape(16, 4096), ""},
		{[]string{"-b=8"}, ugraph.MustShape(16, 4096), ""},
		{[]string{"--batch", "8"}, ugraph.MustShape(16, 4096), ""}, // a unique prefix
		{[]string{"--hidden", "1024", "-b", "2"}, ugraph.MustShape(4, 1024), ""},
		{[]string{"--save-codes", "--scale", "2", "--mode", "attention", "--file", "x y.json"}, ugraph.MustShape(2, 4096),
			`Namespace(batch_size=1, file="x y.json", scale=2.0, save_codes=True, mode="attention", hidden=4096)`},
		{[]string{"--scale=-1.5"}, ugraph.MustShape(2, 4096), `Namespace(batch_size=1, file="rmsnorm.json", scale=-1.5, save_codes=False, mode="mlp", hidden=4096)`},
		{[]string{"--scale", "-1e3"}, ugraph.MustShape(2, 4096), `Namespace(batch_size=1, file="rmsnorm.json", scale=-1000.0, save_codes=False, mode="mlp", hidden=4096)`},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		p, err := frontend.Load("prog.py", []byte(argProgram), frontend.Options{Args: tt.args, Stdout: &out})
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got := p.Graph.Tensors[p.Graph.Inputs()[0]].Shape; got != tt.shape {
			t.Errorf("%q: input 0 is %v, want %v", tt.args, got, tt.shape)
		}
		if tt.ns != "" && strings.TrimSpace(out.String()) != tt.ns {
			t.Errorf("%q: printed %q, want %q", tt.args, out.String(), tt.ns)
		}
	}
}

func TestArgparseErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bs", "8"}, "parse_args: unrecognized arguments: --bs (the program takes -b/--batch_size BATCH_SIZE (int, default 1, batch size); --file FILE"},
		{[]string{"--batch_size", "x"}, `parse_args: argument -b/--batch_size: invalid int value: "x"`},
		{[]string{"--scale", "fast"}, `parse_args: argument --scale: invalid float value: "fast"`},
		{[]string{"--batch_size"}, "parse_args: argument -b/--batch_size: expected one argument"},
		{[]string{"--batch_size", "--scale", "2"}, "parse_args: argument -b/--batch_size: expected one argument"},
		{[]string{"--mode", "moe"}, `parse_args: argument --mode: invalid choice: "moe" (choose from "mlp", "attention")`},
		{[]string{"--save-codes=yes"}, `parse_args: argument --save-codes: ignored explicit argument "yes"`},
		{[]string{"8"}, "parse_args: unrecognized arguments: 8"},
		{[]string{"--s"}, "parse_args: ambiguous option: --s could match --scale, --save-codes"},
		{[]string{"--help"}, "parse_args: --help given: the program takes -b/--batch_size BATCH_SIZE (int, default 1, batch size); --file FILE (str, default \"rmsnorm.json\")"},
		{[]string{"-b", "0"}, "new_input: dims (0, 4096)"},
	}
	for _, tt := range tests {
		_, err := frontend.Load("prog.py", []byte(argProgram), frontend.Options{Args: tt.args, Stdout: io.Discard})
		var e *frontend.Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.want) {
			t.Errorf("%q: err = %v, want ...%s...", tt.args, err, tt.want)
			continue
		}
		if want := 10; e.Line != want && !strings.HasPrefix(tt.want, "new_input") {
			t.Errorf("%q: error at line %d, want the parse_args call's, %d", tt.args, e.Line, want)
		}
	}
}

// The rest of what scripts use: positional arguments, nargs, the other
// actions, set_defaults, parse_known_args, explicit argument lists.
func TestArgparseFeatures(t *testing.T) {
	prog := src(
		"import argparse",
		"import mirage as mi",
		"p = argparse.ArgumentParser()",
		"p.add_argument('shape', nargs=2, type=int)",
		"p.add_argument('names', nargs='*')",
		"g = p.add_argument_group('search')",
		"g.add_argument('--franges', nargs='+', type=int, default=[1])",
		"g.add_argument('--opt', nargs='?', const='on', default='off')",
		"p.add_argument('-v', '--verbose', action='count')",
		"p.add_argument('--tag', action='append')",
		"p.add_argument('--fast', action='store_const', const=2, dest='speed')",
		"p.add_argument('--profile', action=argparse.BooleanOptionalAction, default=True)",
		"p.add_argument('--no-check', dest='check', action='store_false')",
		"p.add_argument('--n', type=int, required=True)",
		"p.set_defaults(extra='x', speed=1)",
		"a = p.parse_args()",
		"known, rest = p.parse_known_args(['4', '8', '--n', '1', '--zzz'])",
		"print(a)",
		"print(known.shape, rest, p.get_default('speed'))",
		"g = mi.new_kernel_graph()",
		"g.mark_output(g.exp(g.new_input(dims=a.shape)))",
	)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"16", "64", "--n", "3"},
			`Namespace(shape=[16, 64], names=[], franges=[1], opt="off", verbose=None, tag=None, speed=1, profile=True, check=True, n=3, extra="x")`},
		{[]string{"--n=3", "16", "64", "a", "b", "--franges", "1", "4", "--opt", "-vv", "--tag", "t1", "--tag=t2", "--fast", "--no-profile", "--no-check"},
			`Namespace(shape=[16, 64], names=["a", "b"], franges=[1, 4], opt="on", verbose=2, tag=["t1", "t2"], speed=2, profile=False, check=False, n=3, extra="x")`},
		{[]string{"16", "64", "--n", "3", "--opt", "x", "--", "--y"},
			`Namespace(shape=[16, 64], names=["--y"], franges=[1], opt="x", verbose=None, tag=None, speed=1, profile=True, check=True, n=3, extra="x")`},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if _, err := frontend.Load("prog.py", []byte(prog), frontend.Options{Args: tt.args, Stdout: &out}); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		want := tt.want + "\n" + `[4, 8] ["--zzz"] 1` + "\n"
		if out.String() != want {
			t.Errorf("%q: printed\n%s\nwant\n%s", tt.args, out.String(), want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"16", "--n", "3"}, "the following arguments are required: shape"},
		{[]string{"16", "64"}, "the following arguments are required: --n"},
		{[]string{"16", "64", "--n", "3", "--franges"}, "argument --franges: expected at least one argument"},
	} {
		_, err := frontend.Load("prog.py", []byte(prog), frontend.Options{Args: tt.args, Stdout: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "prog.py:16: parse_args: "+tt.want) {
			t.Errorf("%q: err = %v, want ...%s", tt.args, err, tt.want)
		}
	}
}

// Defaults as Python's add_argument takes them: default=None replaces
// store_true's False and store_false's True (the tri-state idiom), and a
// string default goes through type= but not choices (Python checks only
// values the command line gives).
func TestArgparsePythonDefaults(t *testing.T) {
	prog := src(
		"import argparse",
		"import mirage as mi",
		"p = argparse.ArgumentParser()",
		"p.add_argument('--wide', action='store_true', default=None)",
		"p.add_argument('--narrow', action='store_false', default=None)",
		"p.add_argument('--act', type=str, default='none', choices=['silu', 'gelu'])",
		"a = p.parse_args()",
		"print(a)",
		"g = mi.new_kernel_graph()",
		"g.mark_output(g.exp(g.new_input(dims=(4, 8))))",
	)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, `Namespace(wide=None, narrow=None, act="none")`},
		{[]string{"--wide", "--narrow", "--act", "gelu"}, `Namespace(wide=True, narrow=False, act="gelu")`},
	} {
		var out bytes.Buffer
		if _, err := frontend.Load("prog.py", []byte(prog), frontend.Options{Args: tt.args, Stdout: &out}); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got := strings.TrimSpace(out.String()); got != tt.want {
			t.Errorf("%q: printed %s, want %s", tt.args, got, tt.want)
		}
	}
	_, err := frontend.Load("prog.py", []byte(prog), frontend.Options{Args: []string{"--act", "none"}, Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `prog.py:7: parse_args: argument --act: invalid choice: "none"`) {
		t.Errorf("--act none: %v, want the choice refused", err)
	}
}

// Mistakes in defining the arguments are errors at their line.
func TestArgparseDefinitionErrors(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"p.add_argument()", "add_argument: missing the argument's name"},
		{"p.add_argument('--x', kind=int)", `add_argument: unexpected keyword argument "kind"`},
		{"p.add_argument('--x', action='store_maybe')", `add_argument: unknown action "store_maybe"`},
		{"p.add_argument('--x', nargs='many')", `add_argument: nargs "many" is not supported`},
		{"p.add_argument('--x', type='int')", "add_argument: type must be callable"},
		{"p.add_argument('--h')", "add_argument: argument --h: conflicting option string: --h"},
		{"p.add_argument('x', '--y')", "add_argument: a positional argument has one name"},
		{"p.add_argument('--x', action='store_true', nargs=2)", `add_argument: action "store_true" takes no nargs`},
		{"p.add_subparsers()", "ArgumentParser.add_subparsers is not supported by mirage's argparse stub"},
		{"p.error('bad size')", "the program called parser.error(bad size)"},
		{"p.parse_args(['--q'])", "parse_args: unrecognized arguments: --q"},
		{"a = p.parse_args(); a.bs", `the parsed arguments have no attribute "bs" (they have h)`},
	} {
		prog := src("import argparse", "p = argparse.ArgumentParser(add_help=False)", "p.add_argument('--h')", tt.line)
		_, err := frontend.Load("prog.py", []byte(prog), frontend.Options{Stdout: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "prog.py:4: "+tt.want) {
			t.Errorf("%s: err = %v, want prog.py:4: ...%s", tt.line, err, tt.want)
		}
	}
}
