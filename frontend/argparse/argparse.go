// Package argparse emulates Python's argparse module for mirage programs.
// Mirage's benchmark scripts read their shapes from the command line:
//
//	parser = argparse.ArgumentParser()
//	parser.add_argument('-b', '--batch_size', type=int, default=1)
//	args = parser.parse_args()
//	X = graph.new_input(dims=(2 * args.batch_size, 4096), dtype=mi.float16)
//
// So argparse is the one stubbed module that works: parse_args parses the
// program's arguments (frontend.Options.Args: what follows -- on mirage's
// command line) as Python's argparse would, and returns a namespace of
// real values, the defaults where an argument is not given. It supports
// what scripts use: options (--name value, --name=value, -n value,
// -nvalue, unique prefixes of long options) and positional arguments;
// type (any callable: int, float, str, bool, a function), default,
// choices, required, dest, nargs (N, ?, *, +), const, help and metavar;
// the actions store, store_true, store_false, store_const, append,
// append_const, extend, count, help, version and
// argparse.BooleanOptionalAction; argument groups; set_defaults. A mistake
// in the arguments is an error that names the argument, as Python's
// message does; the loader puts it at the line of the parse_args call.
//
// It is a package of its own because it is a module of Starlark values
// with a small tie to the loader (New's arguments and Module.Read) and
// none to graphs: an emulation of Python's library, like package pyformat,
// not a phase of the load.
package argparse

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
)

// Name is the module's name, as a program imports it.
const Name = "argparse"

// A Stub is a value that stands for something a program cannot use
// (package frontend's inert values). The module's attributes that it does
// not emulate (formatter classes, FileType, ...) are stubs, and an action
// that is one is refused by name.
type Stub interface {
	starlark.Value
	StubName() string // what it stands for: "argparse.FileType", "torch.nn"
}

// Module is the argparse module of one run of a program: ArgumentParser
// and Namespace work, its other attributes are stubs.
type Module struct {
	args []string
	stub func(name string) Stub
	read bool
}

// New returns the argparse module of a program run with the arguments
// args. stub makes the value of an attribute the module does not emulate,
// named "argparse.<attribute>".
func New(args []string, stub func(name string) Stub) *Module {
	return &Module{args: args, stub: stub}
}

// Read reports whether a parser has parsed the program's arguments: a
// call of parse_args or parse_known_args without args=.
func (m *Module) Read() bool { return m.read }

var _ starlark.HasAttrs = (*Module)(nil)

func (m *Module) String() string        { return "<module argparse (stub)>" }
func (m *Module) Type() string          { return "module" }
func (m *Module) Freeze()               {}
func (m *Module) Truth() starlark.Bool  { return true }
func (m *Module) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: module") }
func (m *Module) AttrNames() []string {
	return []string{"ArgumentParser", "Namespace", "SUPPRESS"}
}

func (m *Module) Attr(name string) (starlark.Value, error) {
	switch name {
	case "ArgumentParser":
		return starlark.NewBuiltin("ArgumentParser", m.newArgParser), nil
	case "Namespace":
		return starlark.NewBuiltin("Namespace", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) > 0 {
				return nil, fmt.Errorf("%s: takes keyword arguments only", b.Name())
			}
			ns := &namespace{vals: map[string]starlark.Value{}}
			for _, kv := range kwargs {
				ns.set(string(kv[0].(starlark.String)), kv[1])
			}
			return ns, nil
		}), nil
	case "SUPPRESS":
		return starlark.String(argSuppress), nil
	}
	return m.stub(Name + "." + name), nil
}

// argSuppress is argparse.SUPPRESS: as a default, the namespace has no
// attribute for the argument unless it is given.
const argSuppress = "==SUPPRESS=="

// argParser is an argparse.ArgumentParser.
type argParser struct {
	m        *Module
	prog     string
	actions  []*argAction
	defaults map[string]starlark.Value // set_defaults for dests no argument has
	names    []string                  // their order
}

// argAction is an argument added by add_argument.
type argAction struct {
	dest    string
	options []string // "-b", "--batch_size"; none for a positional argument
	action  string   // store, store_true, ..., "boolean_optional"
	nargs   string   // "" (one value), "?", "*", "+", or a count
	typ     starlark.Value
	def     starlark.Value // nil: None
	// noneDefault: default=None was given, which for store_true and
	// store_false replaces their own False and True (Python's
	// add_argument passes it on), so an absent flag reads None.
	noneDefault bool
	konst       starlark.Value
	choices     starlark.Value
	required    bool
	help        string
	metavar     string
	version     string
}

func (m *Module) newArgParser(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	p := &argParser{m: m, prog: "", defaults: map[string]starlark.Value{}}
	addHelp := true
	for i, v := range args {
		if i == 0 {
			p.prog, _ = starlark.AsString(v)
		}
	}
	for _, kv := range kwargs {
		switch k := string(kv[0].(starlark.String)); k {
		case "prog":
			p.prog, _ = starlark.AsString(kv[1])
		case "add_help":
			addHelp = bool(kv[1].Truth())
		case "usage", "description", "epilog", "parents", "formatter_class", "prefix_chars",
			"fromfile_prefix_chars", "argument_default", "conflict_handler", "allow_abbrev",
			"exit_on_error", "suggest_on_error", "color":
		default:
			return nil, fmt.Errorf("%s: unexpected keyword argument %q", b.Name(), k)
		}
	}
	if addHelp {
		p.actions = append(p.actions, &argAction{dest: "help", options: []string{"-h", "--help"}, action: "help"})
	}
	return p, nil
}

var _ starlark.HasAttrs = (*argParser)(nil)

func (p *argParser) String() string        { return "<argparse.ArgumentParser>" }
func (p *argParser) Type() string          { return "ArgumentParser" }
func (p *argParser) Freeze()               {}
func (p *argParser) Truth() starlark.Bool  { return true }
func (p *argParser) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: ArgumentParser") }

// method implements a method of ArgumentParser.
type method func(p *argParser, th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)

var argParserMethods = map[string]method{
	"add_argument":                 (*argParser).addArgument,
	"add_argument_group":           (*argParser).group,
	"add_mutually_exclusive_group": (*argParser).group,
	"set_defaults":                 (*argParser).setDefaults,
	"get_default":                  (*argParser).getDefault,
	"parse_args":                   (*argParser).parseArgs,
	"parse_intermixed_args":        (*argParser).parseArgs,
	"parse_known_args":             (*argParser).parseKnownArgs,
	"parse_known_intermixed_args":  (*argParser).parseKnownArgs,
	"format_help":                  (*argParser).formatHelp,
	"format_usage":                 (*argParser).formatHelp,
	"print_help":                   (*argParser).printHelp,
	"print_usage":                  (*argParser).printHelp,
	"error":                        (*argParser).fail,
	"exit":                         (*argParser).fail,
}

func (p *argParser) AttrNames() []string { return slices.Sorted(maps.Keys(argParserMethods)) }

func (p *argParser) Attr(name string) (starlark.Value, error) {
	if m := argParserMethods[name]; m != nil {
		return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return m(p, th, name, args, kwargs)
		}).BindReceiver(p), nil
	}
	return nil, fmt.Errorf("ArgumentParser.%s is not supported by mirage's argparse stub (it has %s)", name, strings.Join(p.AttrNames(), ", "))
}

// group implements add_argument_group and add_mutually_exclusive_group:
// the arguments a group adds are the parser's (exclusion is not checked).
func (p *argParser) group(_ *starlark.Thread, _ string, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return p, nil
}

// flagActions are add_argument's actions that take no value from the
// command line; valueActions those that store the values they take.
var flagActions = map[string]bool{
	"store_true": true, "store_false": true, "store_const": true, "append_const": true,
	"count": true, "help": true, "version": true, "boolean_optional": true,
}

var valueActions = map[string]bool{"store": true, "append": true, "extend": true}

// add_argument(*names, action=, nargs=, const=, default=, type=, choices=,
// required=, help=, metavar=, dest=, version=)
func (p *argParser) addArgument(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	a := &argAction{action: "store"}
	var names []string
	for _, v := range args {
		s, ok := starlark.AsString(v)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: argument names must be non-empty strings, got %s", fn, v.Type())
		}
		names = append(names, s)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: missing the argument's name ('--bs' or 'file')", fn)
	}
	positional := names[0][0] != '-'
	if positional && len(names) > 1 {
		return nil, fmt.Errorf("%s: a positional argument has one name, got %q", fn, names)
	}
	for _, n := range names {
		if !positional && n[0] != '-' {
			return nil, fmt.Errorf("%s: option %q must start with '-'", fn, n)
		}
	}
	dest := ""
	for _, kv := range kwargs {
		k, v := string(kv[0].(starlark.String)), kv[1]
		str := func() (string, error) {
			s, ok := starlark.AsString(v)
			if !ok && v != starlark.None {
				return "", fmt.Errorf("%s: for parameter %s: got %s, want str", fn, k, v.Type())
			}
			return s, nil
		}
		var err error
		switch k {
		case "action":
			switch v := v.(type) {
			case Stub:
				if v.StubName() != Name+".BooleanOptionalAction" {
					return nil, fmt.Errorf("%s: action %s is not supported by mirage's argparse stub", fn, v.StubName())
				}
				a.action = "boolean_optional"
			default:
				if a.action, err = str(); a.action == "" {
					a.action = "store"
				}
				if err == nil && (!flagActions[a.action] && !valueActions[a.action] || a.action == "boolean_optional") {
					return nil, fmt.Errorf("%s: unknown action %q", fn, a.action)
				}
			}
		case "nargs":
			switch v := v.(type) {
			case starlark.Int:
				n, ok := v.Int64()
				if !ok || n < 0 || n > 1000 {
					return nil, fmt.Errorf("%s: nargs %v out of range", fn, v)
				}
				a.nargs = strconv.Itoa(int(n))
			default:
				if a.nargs, err = str(); err == nil && a.nargs != "?" && a.nargs != "*" && a.nargs != "+" && a.nargs != "" {
					return nil, fmt.Errorf("%s: nargs %q is not supported (want an int, '?', '*' or '+')", fn, a.nargs)
				}
			}
		case "const":
			a.konst = v
		case "default":
			if v != starlark.None {
				a.def = v
			}
			a.noneDefault = v == starlark.None
		case "type":
			if v != starlark.None {
				if _, ok := v.(starlark.Callable); !ok {
					return nil, fmt.Errorf("%s: type must be callable (int, float, str, ...), got %s", fn, v.Type())
				}
				a.typ = v
			}
		case "choices":
			if v != starlark.None {
				if _, ok := v.(starlark.Iterable); !ok {
					return nil, fmt.Errorf("%s: choices must be a list or tuple, got %s", fn, v.Type())
				}
				a.choices = v
			}
		case "required":
			a.required = bool(v.Truth())
		case "help":
			a.help, _ = starlark.AsString(v)
		case "metavar":
			a.metavar, _ = starlark.AsString(v)
		case "dest":
			dest, err = str()
		case "version":
			a.version, err = str()
		default:
			return nil, fmt.Errorf("%s: unexpected keyword argument %q", fn, k)
		}
		if err != nil {
			return nil, err
		}
	}
	if positional {
		if dest != "" {
			return nil, fmt.Errorf("%s: dest supplied twice for positional argument %q", fn, names[0])
		}
		a.dest = names[0]
		if flagActions[a.action] {
			return nil, fmt.Errorf("%s: action %q does not suit a positional argument", fn, a.action)
		}
	} else {
		a.options = names
		a.dest = dest
		if a.dest == "" {
			a.dest = optionDest(names)
		}
		for _, n := range names {
			if p.option(n) != nil {
				return nil, fmt.Errorf("%s: argument %s: conflicting option string: %s", fn, strings.Join(names, "/"), n)
			}
		}
		if a.action == "boolean_optional" {
			for _, n := range names {
				if strings.HasPrefix(n, "--") {
					a.options = append(a.options, "--no-"+n[2:])
				}
			}
		}
	}
	if flagActions[a.action] && a.nargs != "" {
		return nil, fmt.Errorf("%s: action %q takes no nargs", fn, a.action)
	}
	if a.nargs == "0" {
		return nil, fmt.Errorf("%s: nargs 0 is not allowed for action %q; use store_true or store_const", fn, a.action)
	}
	// set_defaults given before the argument still apply to it.
	if v, ok := p.defaults[a.dest]; ok {
		a.def = v
	}
	p.actions = append(p.actions, a)
	return starlark.None, nil
}

// optionDest is an option's default dest: its first long name, else its
// first short name, without the dashes and with the other dashes as
// underscores.
func optionDest(names []string) string {
	name := names[0]
	for _, n := range names {
		if strings.HasPrefix(n, "--") {
			name = n
			break
		}
	}
	return strings.ReplaceAll(strings.TrimLeft(name, "-"), "-", "_")
}

// option returns the action with option string s.
func (p *argParser) option(s string) *argAction {
	for _, a := range p.actions {
		if slices.Contains(a.options, s) {
			return a
		}
	}
	return nil
}

// set_defaults(**kwargs)
func (p *argParser) setDefaults(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%s: takes keyword arguments only", fn)
	}
	for _, kv := range kwargs {
		k := string(kv[0].(starlark.String))
		if _, ok := p.defaults[k]; !ok {
			p.names = append(p.names, k)
		}
		p.defaults[k] = kv[1]
		for _, a := range p.actions {
			if a.dest == k {
				a.def = kv[1]
			}
		}
	}
	return starlark.None, nil
}

// get_default(dest)
func (p *argParser) getDefault(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dest string
	if err := starlark.UnpackPositionalArgs(fn, args, kwargs, 1, &dest); err != nil {
		return nil, err
	}
	for _, a := range p.actions {
		if a.dest == dest && a.def != nil {
			return a.def, nil
		}
	}
	if v, ok := p.defaults[dest]; ok {
		return v, nil
	}
	return starlark.None, nil
}

// parse_args(args=None, namespace=None)
func (p *argParser) parseArgs(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	ns, _, err := p.parseCall(th, fn, args, kwargs, false)
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// parse_known_args(args=None, namespace=None) returns (namespace, extras).
func (p *argParser) parseKnownArgs(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	ns, extras, err := p.parseCall(th, fn, args, kwargs, true)
	if err != nil {
		return nil, err
	}
	rest := make([]starlark.Value, len(extras))
	for i, s := range extras {
		rest[i] = starlark.String(s)
	}
	return starlark.Tuple{ns, starlark.NewList(rest)}, nil
}

func (p *argParser) parseCall(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple, known bool) (*namespace, []string, error) {
	var argv, ns starlark.Value = starlark.None, starlark.None
	if err := starlark.UnpackArgs(fn, args, kwargs, "args?", &argv, "namespace?", &ns); err != nil {
		return nil, nil, err
	}
	var tokens []string
	if argv == starlark.None {
		tokens = p.m.args
		p.m.read = true
	} else {
		var err error
		if tokens, err = stringList(argv); err != nil {
			return nil, nil, fmt.Errorf("%s: for parameter args: %v", fn, err)
		}
	}
	out, extras, err := p.parse(th, tokens, known)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", fn, err)
	}
	return out, extras, nil
}

// stringList converts a list or tuple of strings.
func stringList(v starlark.Value) ([]string, error) {
	seq, ok := v.(starlark.Indexable)
	if _, isStr := v.(starlark.String); !ok || isStr {
		return nil, fmt.Errorf("got %s, want a list of strings", v.Type())
	}
	out := make([]string, seq.Len())
	for i := range out {
		s, ok := starlark.AsString(seq.Index(i))
		if !ok {
			return nil, fmt.Errorf("element %d: got %s, want str", i, seq.Index(i).Type())
		}
		out[i] = s
	}
	return out, nil
}

// parse parses tokens as Python's argparse does; with known, the tokens it
// does not recognize are returned instead of being an error.
func (p *argParser) parse(th *starlark.Thread, tokens []string, known bool) (*namespace, []string, error) {
	ns := &namespace{vals: map[string]starlark.Value{}}
	for _, a := range p.actions {
		if a.action == "help" || a.action == "version" {
			continue
		}
		if _, ok := ns.vals[a.dest]; ok {
			continue // an earlier argument with this dest sets the default
		}
		switch def := a.def; {
		case def == starlark.String(argSuppress):
		case def != nil:
			ns.set(a.dest, def)
		case a.noneDefault:
			ns.set(a.dest, starlark.None)
		case a.action == "store_true":
			ns.set(a.dest, starlark.False)
		case a.action == "store_false":
			ns.set(a.dest, starlark.True)
		default:
			ns.set(a.dest, starlark.None)
		}
	}
	for _, k := range p.names {
		if _, ok := ns.vals[k]; !ok {
			ns.set(k, p.defaults[k])
		}
	}
	seen := map[*argAction]bool{}
	var positionals, extras []string
	onlyPositional := false
	for i := 0; i < len(tokens); {
		tok := tokens[i]
		i++
		switch {
		case onlyPositional || !looksLikeOption(tok):
			positionals = append(positionals, tok)
			continue
		case tok == "--":
			onlyPositional = true
			continue
		}
		a, value, explicit, short, err := p.lookup(tok)
		if err != nil {
			return nil, nil, err
		}
		if a == nil {
			if !known {
				return nil, nil, p.unrecognized([]string{tok})
			}
			extras = append(extras, tok)
			continue
		}
		name := strings.Join(a.options, "/")
		if flagActions[a.action] {
			if explicit && !short {
				return nil, nil, fmt.Errorf("argument %s: ignored explicit argument %q", name, value)
			}
			if err := p.apply(a, tok, ns); err != nil {
				return nil, nil, err
			}
			seen[a] = true
			if explicit { // -vv: the rest are more short options
				tokens = append(tokens[:i:i], append([]string{"-" + value}, tokens[i:]...)...)
			}
			continue
		}
		// The option's values: the explicit one and those that follow.
		var vals []string
		if explicit {
			vals = append(vals, value)
		}
		// An explicit value (--bs=8, -b8) is the only one, as in Python.
		lo, hi := nargsRange(a.nargs)
		for !explicit && len(vals) < hi && i < len(tokens) && tokens[i] != "--" && !looksLikeOption(tokens[i]) {
			vals = append(vals, tokens[i])
			i++
		}
		if len(vals) < lo {
			return nil, nil, fmt.Errorf("argument %s: %s", name, expected(a.nargs))
		}
		if err := p.store(th, a, name, vals, ns); err != nil {
			return nil, nil, err
		}
		seen[a] = true
	}
	// Positional arguments take the tokens left, in order, each leaving
	// enough for those after it.
	var pos []*argAction
	for _, a := range p.actions {
		if len(a.options) == 0 {
			pos = append(pos, a)
		}
	}
	next := 0
	for k, a := range pos {
		need := 0
		for _, b := range pos[k+1:] {
			lo, _ := nargsRange(b.nargs)
			need += lo
		}
		lo, hi := nargsRange(a.nargs)
		take := max(0, min(hi, len(positionals)-next-need))
		if take < lo {
			var missing []string
			for _, b := range pos[k:] {
				if lo, _ := nargsRange(b.nargs); lo > 0 {
					missing = append(missing, b.dest)
				}
			}
			return nil, nil, fmt.Errorf("the following arguments are required: %s", strings.Join(missing, ", "))
		}
		vals := positionals[next : next+take]
		next += take
		if take == 0 && (a.nargs == "?" || a.nargs == "*") {
			if a.nargs == "?" && a.def != nil {
				continue
			}
			if a.nargs == "*" && a.def == nil {
				ns.set(a.dest, starlark.NewList(nil))
			}
			continue
		}
		if err := p.store(th, a, a.dest, vals, ns); err != nil {
			return nil, nil, err
		}
	}
	if next < len(positionals) {
		if !known {
			return nil, nil, p.unrecognized(positionals[next:])
		}
		extras = append(extras, positionals[next:]...)
	}
	var missing []string
	for _, a := range p.actions {
		if a.required && len(a.options) > 0 && !seen[a] {
			missing = append(missing, strings.Join(a.options, "/"))
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	// A string default is parsed as the argument would be, but not checked
	// against the choices (Python checks only what the command line gives).
	for _, a := range p.actions {
		if seen[a] || a.typ == nil || !valueActions[a.action] {
			continue
		}
		if s, ok := a.def.(starlark.String); ok && s != argSuppress && ns.vals[a.dest] == a.def {
			v, err := p.convert(th, a, strings.Join(a.options, "/"), string(s), false)
			if err != nil {
				return nil, nil, err
			}
			ns.set(a.dest, v)
		}
	}
	return ns, extras, nil
}

// looksLikeOption reports whether a command-line token is an option rather
// than a value: it starts with '-' and is not a negative number or "-".
func looksLikeOption(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	if _, err := strconv.ParseFloat(tok, 64); err == nil {
		return false
	}
	return true
}

// lookup finds the option a token names: exactly, as --name=value, as a
// unique prefix of a long option, or as -nVALUE (short: the value follows
// a one-letter option directly, and may be more of them: -vv).
func (p *argParser) lookup(tok string) (a *argAction, value string, explicit, short bool, err error) {
	if a := p.option(tok); a != nil {
		return a, "", false, false, nil
	}
	name, value, explicit := strings.Cut(tok, "=")
	if a := p.option(name); a != nil && explicit {
		return a, value, true, false, nil
	}
	if strings.HasPrefix(name, "--") {
		var matches []string
		var match *argAction
		for _, a := range p.actions {
			for _, o := range a.options {
				if strings.HasPrefix(o, name) {
					matches = append(matches, o)
					match = a
				}
			}
		}
		switch {
		case len(matches) == 1:
			return match, value, explicit, false, nil
		case len(matches) > 1:
			return nil, "", false, false, fmt.Errorf("ambiguous option: %s could match %s", name, strings.Join(matches, ", "))
		}
		return nil, "", false, false, nil
	}
	if len(tok) > 2 && tok[1] != '-' {
		if a := p.option(tok[:2]); a != nil {
			return a, tok[2:], true, tok[2] != '=', nil
		}
	}
	return nil, "", false, false, nil
}

// nargsRange is how many values an argument takes, at least and at most.
func nargsRange(nargs string) (lo, hi int) {
	switch nargs {
	case "":
		return 1, 1
	case "?":
		return 0, 1
	case "*":
		return 0, 1 << 30
	case "+":
		return 1, 1 << 30
	}
	n, _ := strconv.Atoi(nargs)
	return n, n
}

func expected(nargs string) string {
	switch nargs {
	case "", "1":
		return "expected one argument"
	case "+":
		return "expected at least one argument"
	}
	return "expected " + nargs + " arguments"
}

// apply performs the action of an option that takes no value.
func (p *argParser) apply(a *argAction, tok string, ns *namespace) error {
	switch a.action {
	case "store_true":
		ns.set(a.dest, starlark.True)
	case "store_false":
		ns.set(a.dest, starlark.False)
	case "boolean_optional":
		ns.set(a.dest, starlark.Bool(!strings.HasPrefix(tok, "--no-")))
	case "store_const":
		ns.set(a.dest, orNone(a.konst))
	case "append_const":
		ns.set(a.dest, appendTo(ns.vals[a.dest], orNone(a.konst)))
	case "count":
		n, ok := ns.vals[a.dest].(starlark.Int)
		if !ok {
			n = starlark.MakeInt(0)
		}
		ns.set(a.dest, n.Add(starlark.MakeInt(1)))
	case "help":
		return fmt.Errorf("%s given: %s", tok, p.usage())
	case "version":
		return fmt.Errorf("%s given: %s", tok, a.version)
	}
	return nil
}

// store converts an argument's values and stores them.
func (p *argParser) store(th *starlark.Thread, a *argAction, name string, vals []string, ns *namespace) error {
	var conv []starlark.Value
	for _, s := range vals {
		v, err := p.convert(th, a, name, s, true)
		if err != nil {
			return err
		}
		conv = append(conv, v)
	}
	var v starlark.Value
	switch {
	case a.nargs == "" || a.nargs == "?" && len(conv) == 1:
		v = conv[0]
	case a.nargs == "?":
		v = orNone(a.konst)
	default:
		v = starlark.NewList(conv)
	}
	switch a.action {
	case "append":
		v = appendTo(ns.vals[a.dest], v)
	case "extend":
		for _, x := range conv {
			ns.vals[a.dest] = appendTo(ns.vals[a.dest], x)
		}
		v = ns.vals[a.dest]
	}
	ns.set(a.dest, v)
	return nil
}

// convert applies an argument's type to a value and, with checkChoices,
// checks its choices.
func (p *argParser) convert(th *starlark.Thread, a *argAction, name, s string, checkChoices bool) (starlark.Value, error) {
	var v starlark.Value = starlark.String(s)
	if a.typ != nil {
		var err error
		if v, err = starlark.Call(th, a.typ, starlark.Tuple{v}, nil); err != nil {
			tname := a.typ.String()
			if c, ok := a.typ.(starlark.Callable); ok {
				tname = c.Name()
			}
			return nil, fmt.Errorf("argument %s: invalid %s value: %q", name, tname, s)
		}
	}
	if a.choices != nil && checkChoices {
		var choices []string
		found := false
		iter := a.choices.(starlark.Iterable).Iterate()
		defer iter.Done()
		var c starlark.Value
		for iter.Next(&c) {
			choices = append(choices, c.String())
			if eq, err := starlark.Equal(v, c); err == nil && eq {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("argument %s: invalid choice: %s (choose from %s)", name, v.String(), strings.Join(choices, ", "))
		}
	}
	return v, nil
}

// appendTo returns list (None: empty) with v appended, as a new list: a
// default list is never changed in place.
func appendTo(list, v starlark.Value) starlark.Value {
	var elems []starlark.Value
	if l, ok := list.(*starlark.List); ok {
		for i := range l.Len() {
			elems = append(elems, l.Index(i))
		}
	}
	return starlark.NewList(append(elems, v))
}

func orNone(v starlark.Value) starlark.Value {
	if v == nil {
		return starlark.None
	}
	return v
}

func (p *argParser) unrecognized(toks []string) error {
	return fmt.Errorf("unrecognized arguments: %s (%s)", strings.Join(toks, " "), p.usage())
}

// usage lists the parser's arguments on one line.
func (p *argParser) usage() string {
	var args []string
	for _, a := range p.actions {
		if a.action == "help" {
			continue
		}
		s := a.dest
		if len(a.options) > 0 {
			s = strings.Join(a.options, "/")
			if !flagActions[a.action] {
				mv := a.metavar
				if mv == "" {
					mv = strings.ToUpper(a.dest)
				}
				s += " " + mv
			}
		}
		var notes []string
		if a.typ != nil {
			if c, ok := a.typ.(starlark.Callable); ok {
				notes = append(notes, c.Name())
			}
		}
		if a.def != nil {
			notes = append(notes, "default "+a.def.String())
		}
		if a.required {
			notes = append(notes, "required")
		}
		if a.help != "" {
			notes = append(notes, a.help)
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
		args = append(args, s)
	}
	if len(args) == 0 {
		return "the program takes no arguments"
	}
	return "the program takes " + strings.Join(args, "; ")
}

// format_help() returns the arguments as text.
func (p *argParser) formatHelp(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs(fn, args, kwargs, 0); err != nil {
		return nil, err
	}
	return starlark.String(p.usage()), nil
}

// print_help(file=None) prints them where the program prints.
func (p *argParser) printHelp(th *starlark.Thread, _ string, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	th.Print(th, p.usage())
	return starlark.None, nil
}

// error(message) and exit(status=0, message=None) stop the program, as
// Python's do.
func (p *argParser) fail(_ *starlark.Thread, fn string, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	var msgs []string
	for _, a := range args {
		if s, ok := starlark.AsString(a); ok {
			msgs = append(msgs, s)
		} else {
			msgs = append(msgs, a.String())
		}
	}
	return nil, fmt.Errorf("the program called parser.%s(%s)", fn, strings.Join(msgs, ", "))
}

// namespace is what parse_args returns: the arguments as attributes.
type namespace struct {
	names []string // in the order they were first set
	vals  map[string]starlark.Value
}

var (
	_ starlark.HasAttrs    = (*namespace)(nil)
	_ starlark.HasSetField = (*namespace)(nil)
)

func (ns *namespace) set(name string, v starlark.Value) {
	if _, ok := ns.vals[name]; !ok {
		ns.names = append(ns.names, name)
	}
	ns.vals[name] = v
}

func (ns *namespace) String() string {
	var b strings.Builder
	b.WriteString("Namespace(")
	for i, n := range ns.names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n + "=" + ns.vals[n].String())
	}
	return b.String() + ")"
}
func (ns *namespace) Type() string          { return "Namespace" }
func (ns *namespace) Freeze()               {}
func (ns *namespace) Truth() starlark.Bool  { return true }
func (ns *namespace) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: Namespace") }
func (ns *namespace) AttrNames() []string   { return slices.Sorted(slices.Values(ns.names)) }

func (ns *namespace) Attr(name string) (starlark.Value, error) {
	if v, ok := ns.vals[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("the parsed arguments have no attribute %q (they have %s)", name, strings.Join(ns.names, ", "))
}

func (ns *namespace) SetField(name string, v starlark.Value) error {
	ns.set(name, v)
	return nil
}
