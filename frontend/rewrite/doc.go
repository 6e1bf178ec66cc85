// Package rewrite turns a Python program into Starlark that means the same,
// in two passes around Starlark's parser. First Source, on the tokens of
// package pylex, rewrites the statements and operators that Starlark's
// parser would reject, on the same lines, so that every position in the
// program stays on the line the user wrote it (Columns maps the columns
// that a rewrite moved back to the user's):
//
//	import mirage as mi        ->  mi = __mirage_import__("mirage")
//	from mirage import float16 ->  float16 = __mirage_import__("mirage").float16
//	from __future__ import x   ->  None
//	@decorator                 ->  __mirage_decorator__(decorator)
//	assert cond, msg           ->  __mirage_assert__(cond, msg)
//	x @ w                      ->  x * __mirage_matmul__ * w
//	x is None, x is not None   ->  x == None, x !=     None (identity.go)
//	x[a, b:c, ...]             ->  x[(a, __mirage_slice__(b, c), __mirage_ellipsis__)]
//	                               (subscripts.go)
//	4_096                      ->  4096
//
// Then, once Starlark has parsed the program, Desugar turns the decorator
// and assert calls into what they mean (statements.go). For a program that
// Starlark still rejects, Constructs names the Python constructs that
// Starlark lacks (unsupported.go), so that the error says "`class`
// definitions are not supported" rather than "got class, want primary
// expression".
//
// The package owns the translation, not its meaning at run time: the
// rewritten program calls built-ins that the loader (package frontend)
// predeclares, named by this package's constants (ImportFunc, MatmulFunc,
// Decorate, AssertFailed, ...; all of them listed by Builtins). It is
// separate from the loader because it is syntax alone: it knows which
// module is mirage and what names the loader's mirage module has
// (Options), but nothing of graphs, stubs or Starlark values, and its
// rewrites are tested on text.
package rewrite
