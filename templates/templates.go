// Package templates holds the CUDA device runtime that the code mirage
// emits includes (mirage_runtime.cuh), embedded in the binary so that
// codegen/cuda can write it beside the emitted .cu file or inline it.
//
// It also holds the CPU emulator's stand-in for cuda_runtime.h
// (emu/cuda_runtime.h), under which the emitted code compiles with a host
// C++ compiler and runs on the CPU: mirage's tests use it to check emitted
// kernels against the float64 interpreter where there is no GPU.
package templates

import _ "embed"

// RuntimeName is the file name the runtime is written under.
const RuntimeName = "mirage_runtime.cuh"

// Runtime is the text of mirage_runtime.cuh.
//
//go:embed mirage_runtime.cuh
var Runtime string

// EmulatorName is the file name of the emulator's header: it must be found
// as <cuda_runtime.h> (put its directory first on the include path).
const EmulatorName = "cuda_runtime.h"

// Emulator is the text of emu/cuda_runtime.h.
//
//go:embed emu/cuda_runtime.h
var Emulator string
