package frontend

import (
	"go.starlark.net/syntax"
)

// whileName is the predeclared True that the rewritten while loops test
// first (see guardStmt).
const whileName = "while"

// guardFile rewrites the parsed program so that every while loop has a
// position of its own. Positions stay those the user wrote.
//
//	while c:  ->  while "while" and c:
func guardFile(f *syntax.File) {
	f.Stmts = guardStmts(f.Stmts)
}

func guardStmts(stmts []syntax.Stmt) []syntax.Stmt {
	var out []syntax.Stmt
	for _, s := range stmts {
		out = append(out, guardStmt(s)...)
	}
	return out
}

// guardStmt returns the statements that replace s.
func guardStmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.DefStmt:
		s.Body = guardStmts(s.Body)
	case *syntax.ForStmt:
		s.Body = guardStmts(s.Body)
	case *syntax.WhileStmt:
		// Starlark positions only the instructions that can fail, so a
		// loop like `while True: pass` has none, and a stop inside it
		// would be reported at the last positioned line before it. Reading
		// a predeclared name gives the loop's head the line of its while.
		s.Cond = &syntax.BinaryExpr{
			X:     &syntax.Ident{NamePos: s.While, Name: whileName},
			OpPos: s.While,
			Op:    syntax.AND,
			Y:     s.Cond,
		}
		s.Body = guardStmts(s.Body)
	case *syntax.IfStmt:
		s.True = guardStmts(s.True)
		s.False = guardStmts(s.False)
	}
	return []syntax.Stmt{s}
}
