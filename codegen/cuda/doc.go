// Package cuda lowers a kernel graph to CUDA C++ that needs only the CUDA
// toolkit: NAME.cu (one __global__ per graph-defined kernel and the host
// entry point mirage_NAME), NAME.h (the entry points, each input's and
// output's dtype, shape and strides, the workspace size and the libraries
// to link) and the device runtime, templates/mirage_runtime.cuh, beside them or inlined.
//
// Emit runs in passes (programPasses): it plans every launch with package
// launch, the same plan that the search's fit check and the cost model
// read, so that the kernel ranked is the kernel emitted; it places the
// entry point's inputs and outputs and the intermediates in the workspace;
// it writes each graph-defined kernel from its thread plan (ugraph/thread:
// fused groups, tensor-core or SIMT matmuls, tile storage, the cp.async
// pipeline, barriers placed by tracking shared-memory hazards, index
// expressions simplified by what is known of each value's range) and
// launches each pre-defined op as the runtime library kernel, or the
// cuBLASLt call (mirage::lt_matmul), that its plan names. An arch whose
// matrix instruction or load paths the runtime lacks is refused.
//
// EmitDynamic writes one entry point for the buckets of a dynamic program
// (DESIGN §9): it takes the row count m, runs the smallest bucket at or
// above it, and its kernels leave rows past m alone.
//
// The package also builds emitted code for the CPU emulator
// (templates/emu; BuildEmulation, BuildEngine) and counts, per kernel, the
// memory traffic its warps request there (Measure, WriteCountersTable). Its
// tests run the examples and the cases of cases_test.go in the emulator
// against the float64 interpreter, compile them with nvcc where it is
// installed, and pin each example's emitted structure (Result.Summary) in
// golden files.
package cuda
