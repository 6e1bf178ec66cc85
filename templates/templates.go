// Package templates holds the CUDA device runtime that the code mirage
// emits includes (mirage_runtime.cuh), embedded in the binary so that
// codegen/cuda can write it beside the emitted .cu file or inline it.
//
// It also holds the CPU emulator's stand-ins for cuda_runtime.h,
// cuda_fp16.h, cuda_bf16.h and cublasLt.h (emu/), under which the emitted
// code compiles with a host C++ compiler and runs on the CPU: mirage's
// tests use it to check emitted kernels against the float64 interpreter
// where there is no GPU.
package templates

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// RuntimeName is the file name the runtime is written under.
const RuntimeName = "mirage_runtime.cuh"

// Runtime is the text of mirage_runtime.cuh.
//
//go:embed mirage_runtime.cuh
var Runtime string

// Emulator holds the emulator's headers under emu/: its cuda_runtime.h,
// its own cuda_fp16.h and cuda_bf16.h, and the cublasLt.h entry points the
// runtime's lt_matmul calls, so that emulation needs no CUDA toolkit.
// WriteEmulator copies them out.
//
//go:embed emu/*.h
var Emulator embed.FS

// WriteEmulator writes the emulator's headers into dir, which must exist:
// put dir first on the include path (g++ -I dir), before any CUDA toolkit's.
func WriteEmulator(dir string) error {
	return eachEmulatorHeader(func(name string, data []byte) error {
		return os.WriteFile(filepath.Join(dir, name), data, 0o644)
	})
}

// eachEmulatorHeader calls f with the name and text of each of the
// emulator's headers, in name order, until f fails.
func eachEmulatorHeader(f func(name string, data []byte) error) error {
	files, err := fs.ReadDir(Emulator, "emu")
	if err != nil {
		return err
	}
	for _, e := range files {
		data, err := Emulator.ReadFile("emu/" + e.Name())
		if err != nil {
			return err
		}
		if err := f(e.Name(), data); err != nil {
			return err
		}
	}
	return nil
}

// EmulatorCompiler returns the host C++17 compiler that builds emulated
// programs: g++ on PATH. scripts/setup.sh installs it.
func EmulatorCompiler() (string, error) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		return "", fmt.Errorf("the CPU emulator needs g++ (a host C++17 compiler); scripts/setup.sh installs it: %w", err)
	}
	return gxx, nil
}
