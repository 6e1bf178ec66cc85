package argparse

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// stub is a Stub as the loader's inert values are, for the module alone.
type stub struct{ name string }

func (s stub) String() string        { return "<stub " + s.name + ">" }
func (s stub) Type() string          { return "stub" }
func (s stub) Freeze()               {}
func (s stub) Truth() starlark.Bool  { return false }
func (s stub) Hash() (uint32, error) { return 0, nil }
func (s stub) StubName() string      { return s.name }

// The module on its own: a Starlark program given it as `argparse`, run
// with some arguments, what it prints or its error, and whether it read
// the arguments. The loader's part (imports, error lines, shapes) is
// tested through frontend.Load in argparse_test.go.
func TestModule(t *testing.T) {
	for _, tt := range []struct {
		args []string
		prog string
		want string // printed, or the error
		read bool
	}{
		{[]string{"--bs", "8"}, "p = argparse.ArgumentParser()\np.add_argument('--bs', type=int, default=1)\nprint(p.parse_args())",
			"Namespace(bs=8)", true},
		{[]string{"--bs", "8"}, "p = argparse.ArgumentParser()\np.add_argument('--bs', type=int, default=1)\nprint(p.parse_args(['--bs', '2']))",
			"Namespace(bs=2)", false},
		{nil, "p = argparse.ArgumentParser()\np.add_argument('--bs', type=int, default=1)\nprint(p.parse_known_args())",
			"(Namespace(bs=1), [])", true},
		{[]string{"--no-check"}, "p = argparse.ArgumentParser()\np.add_argument('--check', action=argparse.BooleanOptionalAction, default=True)\nprint(p.parse_args().check)",
			"False", true},
		{nil, "print(argparse.FileType, argparse.SUPPRESS, argparse.Namespace(a=1))",
			`<stub argparse.FileType> ==SUPPRESS== Namespace(a=1)`, false},
		{nil, "p = argparse.ArgumentParser()\np.add_argument('--f', action=argparse.FileType)",
			"add_argument: action argparse.FileType is not supported by mirage's argparse stub", false},
		{[]string{"--q"}, "p = argparse.ArgumentParser()\np.add_argument('--bs', type=int, default=1)\np.parse_args()",
			"parse_args: unrecognized arguments: --q (the program takes --bs BS (int, default 1))", true},
		{nil, "argparse.ArgumentParser().add_subparsers()",
			"ArgumentParser.add_subparsers is not supported by mirage's argparse stub (it has add_argument, add_argument_group,", false},
	} {
		m := New(tt.args, func(name string) Stub { return stub{name} })
		var out strings.Builder
		th := &starlark.Thread{Print: func(_ *starlark.Thread, msg string) { out.WriteString(msg) }}
		_, err := starlark.ExecFile(th, "p.star", tt.prog, starlark.StringDict{"argparse": m})
		got := out.String()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) || m.Read() != tt.read {
			t.Errorf("%q with %q: %s (read %v)\nwant %s (read %v)", tt.prog, tt.args, got, m.Read(), tt.want, tt.read)
		}
	}
}
