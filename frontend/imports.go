package frontend

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/mirage-go/mirage/frontend/argparse"
	"github.com/mirage-go/mirage/frontend/pymath"
	"github.com/mirage-go/mirage/frontend/rewrite"
)

// What a load makes of a program's imports, which package rewrite has
// turned into calls of rewrite.ImportFunc: mirage is the loader's module;
// any other module is an inert stub (argparse and math are working ones,
// packages argparse and pymath), with one warning for the load that names
// them all, or an error when the load is strict.

// mirageModule is the only module a strict load lets a program import.
const mirageModule = rewrite.Mirage

// rewriteOptions tell the rewrite the mirage module's names, and whether
// the load refuses other modules.
func (l *loader) rewriteOptions() rewrite.Options {
	members := l.module.AttrNames()
	var api []string // the graph API, not the runtime names
	for _, m := range members {
		if !slices.Contains(mirageRuntimeNames, m) && !slices.Contains(mirageOtherDTypes, m) {
			api = append(api, m)
		}
	}
	opts := rewrite.Options{Members: members, API: api}
	if l.opts.Strict {
		opts.Refuse = foreignImportError
	}
	return opts
}

// rewriteError positions an error of package rewrite in the program.
func (l *loader) rewriteError(err error) error {
	var e *rewrite.Error
	if !errors.As(err, &e) {
		return &Error{Filename: l.filename, Msg: err.Error()}
	}
	return &Error{Filename: l.filename, Line: e.Line, Col: e.Col, Msg: e.Msg}
}

// importModule implements the rewritten import statements.
func (l *loader) importModule(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
		return nil, err
	}
	switch {
	case name == mirageModule:
		return l.module, nil
	case l.opts.Strict:
		return nil, foreignImportError(name)
	case name == argparse.Name:
		return l.argparse, nil
	case name == pymath.Name:
		return pymath.Module, nil
	}
	return inert{name}, nil
}

func foreignImportError(module string) error {
	return fmt.Errorf("import of module %q is refused by a strict load (--strict): only `mirage` can be imported (without --strict, other modules are inert stubs)", module)
}

// importWarnings are a load's warnings about the modules other than
// mirage that the program imports: the stubs' one warning (stubWarning),
// and math's (a working module) where `from math import *` binds nothing.
func importWarnings(filename string, imports []rewrite.Import) []string {
	var warnings []string
	var stubbed []rewrite.Import
	for _, imp := range imports {
		switch {
		case imp.Module != pymath.Name:
			stubbed = append(stubbed, imp)
		case imp.Star:
			warnings = append(warnings, fmt.Sprintf("%s:%d: `from math import *` binds nothing: import math, or the names the program uses", filename, imp.Line))
		}
	}
	if len(stubbed) > 0 {
		warnings = append(warnings, stubWarning(filename, stubbed))
	}
	return warnings
}

// stubWarning is the one warning of a load that stubbed modules: where the
// first import is, and what every stub does.
func stubWarning(filename string, imports []rewrite.Import) string {
	var names, stars []string
	for _, imp := range imports {
		if !slices.Contains(names, imp.Module) {
			names = append(names, imp.Module)
		}
		if imp.Star {
			stars = append(stars, "`from "+imp.Module+" import *` binds nothing")
		}
	}
	if len(names) == 1 && names[0] == argparse.Name && len(stars) == 0 {
		// Its parser works: calling it inert would contradict what it does.
		return fmt.Sprintf("%s:%d: module argparse is mirage's emulation: parse_args parses the program's arguments (those after --); what it does not emulate (FileType, formatter classes) is inert, and it has no file, network or process access (--strict refuses such imports)",
			filename, imports[0].Line)
	}
	what, its := "module "+names[0]+" is a stub", "its"
	if len(names) > 1 {
		what, its = "modules "+strings.Join(names[:len(names)-1], ", ")+" and "+names[len(names)-1]+" are stubs", "their"
	}
	msg := fmt.Sprintf("%s:%d: %s, with no file, network or process access: %s attributes, calls and results are inert values",
		filename, imports[0].Line, what, its)
	if slices.Contains(names, argparse.Name) {
		msg += ", but argparse reads the program's arguments (those after --)"
	}
	for _, s := range stars {
		msg += "; " + s
	}
	return msg + " (--strict refuses such imports)"
}
