// Package ugraph holds what every level of a μGraph shares: element types,
// shapes, the table of operator kinds, and the shape rules that decide
// whether an operator applies to its operands.
//
// The kernel level (package kernel) and the threadblock level (package block)
// both build on these definitions, so a rule such as "matmul needs equal
// batch dimensions" is written exactly once, here.
package ugraph
