//go:build !cgo

package z3

// Without cgo nothing can load libz3: Available says so, NewContext fails,
// and the rest exists only so that callers build. The Go toolchain turns
// cgo off by itself where it finds no C compiler.

var errNoCgo error = &unavailableError{"z3 unavailable: this build of mirage has no cgo (CGO_ENABLED=0 or no C compiler), so it cannot load libz3"}

func load() { lib.err = errNoCgo }

// Context is a Z3 context; without cgo there are none.
type Context struct{}

// NewContext fails: this build cannot load Z3.
func NewContext() (*Context, error) { return nil, errNoCgo }

func (*Context) Close()                                   {}
func (*Context) Deleted() <-chan struct{}                 { return nil }
func (*Context) Arena() *Arena                            { return &Arena{} }
func (*Context) NewArena() *Arena                         { return &Arena{} }
func (*Context) LiveRefs() int64                          { return 0 }
func (*Context) Interrupt()                               {}
func (*Context) NewSolver(SolverOptions) (*Solver, error) { return nil, errNoCgo }
func (AST) IsZero() bool                                  { return true }
func (*Arena) Err() error                                 { return errNoCgo }
func (*Arena) Len() int                                   { return 0 }
func (*Arena) Release()                                   {}
func (*Arena) UninterpretedSort(string) Sort              { return Sort{} }
func (*Arena) IntSort() Sort                              { return Sort{} }
func (*Arena) RealSort() Sort                             { return Sort{} }
func (*Arena) BoolSort() Sort                             { return Sort{} }
func (*Arena) FuncDecl(string, []Sort, Sort) FuncDecl     { return FuncDecl{} }
func (*Arena) Const(string, Sort) AST                     { return AST{} }
func (*Arena) App(FuncDecl, ...AST) AST                   { return AST{} }
func (*Arena) Numeral(string, Sort) AST                   { return AST{} }
func (*Arena) True() AST                                  { return AST{} }
func (*Arena) Eq(x, y AST) AST                            { return AST{} }
func (*Arena) Not(AST) AST                                { return AST{} }
func (*Arena) Implies(x, y AST) AST                       { return AST{} }
func (*Arena) And(...AST) AST                             { return AST{} }
func (*Arena) Lt(x, y AST) AST                            { return AST{} }
func (*Arena) Le(x, y AST) AST                            { return AST{} }
func (*Arena) Mul(...AST) AST                             { return AST{} }
func (*Arena) IntDiv(x, y AST) AST                        { return AST{} }
func (*Arena) Mod(x, y AST) AST                           { return AST{} }
func (*Arena) Forall([]AST, [][]AST, AST, uint) AST       { return AST{} }
func (*Arena) String(AST) string                          { return "" }
func (*Solver) Close()                                    {}
func (*Solver) Assert(AST) error                          { return errNoCgo }
func (*Solver) Push() error                               { return errNoCgo }
func (*Solver) Pop(uint) error                            { return errNoCgo }
func (*Solver) Check() (Result, error)                    { return Unknown, errNoCgo }
func (*Solver) ReasonUnknown() string                     { return "" }
func (*Solver) String() string                            { return "" }

// AST, Sort and FuncDecl are Z3 terms, sorts and declarations.
type (
	AST      struct{}
	Sort     struct{}
	FuncDecl struct{}
	// Arena owns references to ASTs.
	Arena struct{}
	// Solver is an incremental Z3 solver.
	Solver struct{}
)
