// Package interp evaluates μGraphs in float64: kernel graphs, graph-defined
// kernels included, with the exact grid and for-loop semantics of DESIGN §3
// (every block of the grid, every iteration of its for-loop). It is the
// numerical ground truth of the project: tests and `verify --method float`
// run a candidate μGraph and its program on the same random inputs
// (RandomInputs) and compare the outputs (Compare, DefaultTolerance).
//
// Clarity and exactness come first. Every operator's math is written once
// (ops.go) and serves both levels: a block op on a tile is the same function
// as the kernel op on a device tensor. Element types are ignored: every
// value is a float64, so the interpreter computes the real-valued function
// a μGraph denotes, not its fp16 rounding.
//
// NaN is a value like any other: sqrt, log, pow and rms_norm (which has no
// epsilon, see rmsNorm) make NaN from some inputs, every op propagates it
// (but pow, as C's powf and torch: pow(NaN, 0) and pow(1, NaN) are 1),
// and Compare counts NaN against NaN in the same position as agreement.
package interp
