package enginerun

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/mirage-go/mirage/target"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Tolerance is the largest error, relative to an output's largest
// |expected| value, at which emulated code agrees with the interpreter:
// fp16 arithmetic's, as the engine's decode loop checks each step.
const Tolerance = 2e-2

// Float32Tolerance is Tolerance for an fp32 output: fp32 arithmetic's,
// with room for sums of thousands of terms.
const Float32Tolerance = 1e-4

// ToleranceOf is the tolerance for an output of dtype dt.
func ToleranceOf(dt ugraph.DType) float64 {
	if dt == ugraph.Float32 {
		return Float32Tolerance
	}
	return Tolerance
}

// Output is one output of an emulated run, against the interpreter.
type Output struct {
	Shape     ugraph.Shape
	Error     float64 // the worst |got - want|, relative to the largest |want|
	At        int     // where (a flat index)
	Got, Want float64
	NonFinite int     // elements NaN or infinite where the interpreter's are finite (NaN: never written)
	Compared  int     // elements where the interpreter's are finite: the others only match
	Tolerance float64 // ToleranceOf its dtype
	OK        bool    // Error within Tolerance, every element finite
}

// Where is At as the output's coordinates, as the float64 and
// finite-field checks print theirs.
func (o Output) Where() []int { return o.Shape.Coords(o.At) }

// Static checks candidate's emitted code as a caller runs it: it emits
// the candidate (cuda.Emit) for arch (the zero Arch: target.Default), builds it for the CPU emulator in dir with
// g++, runs it once on ModelInputs of program (seeded by seed), and
// compares its k-th output with program's k-th in the float64 interpreter
// on the same inputs, as the emulator rounded them to their dtypes, within
// ToleranceOf the output's dtype. What it and the emulator hold keeps to
// limit bytes (staticMemory). The
// two graphs must take the same inputs and give outputs of the same
// shapes.
func Static(ctx context.Context, dir string, program, candidate *kernel.Graph, arch target.Arch, seed uint64, limit int64) ([]Output, error) {
	if len(program.Outputs) != len(candidate.Outputs) {
		return nil, fmt.Errorf("%d outputs vs %d", len(program.Outputs), len(candidate.Outputs))
	}
	for k, t := range program.Outputs {
		if s, c := program.Tensors[t].Shape, candidate.Tensors[candidate.Outputs[k]].Shape; s != c {
			return nil, fmt.Errorf("output %d is %v in the program, %v in the candidate", k, s, c)
		}
	}
	code, err := cuda.Emit("checked", candidate, cuda.Options{Arch: arch})
	if err != nil {
		return nil, err
	}
	if err := memlimit.Check("checking it in the CPU emulator", staticMemory(program, candidate, code), limit); err != nil {
		return nil, err
	}
	if err := interp.CheckMemory(program, limit); err != nil {
		return nil, err
	}
	// g++'s warnings (an input the program never reads is an unused
	// variable) say nothing of what the code computes.
	emu, _, err := cuda.BuildEmulation(ctx, dir, candidate, code)
	if err != nil {
		return nil, err
	}
	in, out := filepath.Join(dir, "inputs.bin"), filepath.Join(dir, "outputs.bin")
	data := ModelInputs(program, program, rand.New(rand.NewPCG(seed, 8)))
	if err := emu.WriteInputs(in, func(k, i int) float32 { return float32(data[k][i]) }); err != nil {
		return nil, err
	}
	data = nil // the emulator rounds them: what it read back is the interpreter's
	if err := emu.Run(ctx, in, out); err != nil {
		return nil, err
	}
	// The emulator writes the inputs as it rounded them, then the
	// outputs, 4 bytes an element.
	var elems int64
	for _, id := range append(candidate.Inputs(), candidate.Outputs...) {
		elems += int64(candidate.Tensors[id].Shape.NumElements())
	}
	f, err := boundedread.Open(out, 4*elems)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	read := func(n int) ([]float64, error) {
		x := make([]float64, n)
		var b [4]byte
		for i := range x {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return nil, fmt.Errorf("the emulated program's output: %v", err)
			}
			x[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[:])))
		}
		return x, nil
	}
	var rounded []*interp.Tensor
	for _, id := range candidate.Inputs() {
		s := candidate.Tensors[id].Shape
		x, err := read(s.NumElements())
		if err != nil {
			return nil, err
		}
		t, err := interp.FromSlice(s, x)
		if err != nil {
			return nil, err
		}
		rounded = append(rounded, t)
	}
	want, err := interp.RunWithin(program, rounded, limit)
	if err != nil {
		return nil, err
	}
	var res []Output
	for k, id := range candidate.Outputs {
		got, err := read(candidate.Tensors[id].Shape.NumElements())
		if err != nil {
			return nil, err
		}
		res = append(res, compare(want[k], got, ToleranceOf(candidate.Tensors[id].DType)))
	}
	return res, nil
}

// staticMemory is what Static holds at its peak, of both processes: the
// inputs drawn (8 bytes an element) while the emulator runs, holding each
// tensor of the candidate's code at its dtype, its workspace and a row of
// floats as large as its largest input or output (4 bytes an element);
// or, after it, the interpreter's tensors (the inputs read back among
// them) and one output read back (8 bytes an element).
func staticMemory(program, candidate *kernel.Graph, code *cuda.Result) int64 {
	var ins, largest, largestOut, device int64
	for _, id := range candidate.Inputs() {
		n := int64(candidate.Tensors[id].Shape.NumElements())
		ins, largest = ins+n, max(largest, n)
	}
	for _, id := range candidate.Outputs {
		largestOut = max(largestOut, int64(candidate.Tensors[id].Shape.NumElements()))
	}
	for _, b := range code.Buffers {
		if b.Role == cuda.RoleInput || b.Role == cuda.RoleOutput {
			device = ugraph.AddSize(device, int64(b.Bytes))
		}
	}
	emulating := ugraph.AddSize(8*ins, ugraph.AddSize(device, ugraph.AddSize(int64(code.WorkspaceBytes), 4*max(largest, largestOut))))
	return max(emulating, ugraph.AddSize(interp.Memory(program), 8*largestOut))
}

// compare is got against want: the worst error relative to want's
// largest finite magnitude. Where want is not finite (the program's own
// NaN or infinity), got must not be either.
func compare(want *interp.Tensor, got []float64, tolerance float64) Output {
	o := Output{Shape: want.Shape, At: -1, Tolerance: tolerance}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	scale := 0.0
	for _, w := range want.Data {
		if finite(w) {
			scale = max(scale, math.Abs(w))
		}
	}
	worst := 0.0
	for i, w := range want.Data {
		g := got[i]
		switch {
		case !finite(w) && !finite(g):
			continue
		case !finite(w):
			worst, o.At, o.Got, o.Want = math.Inf(1), i, g, w
			continue
		}
		o.Compared++
		if !finite(g) {
			o.NonFinite++
			continue
		}
		if d := math.Abs(g - w); d > worst || o.At < 0 {
			worst, o.At, o.Got, o.Want = d, i, g, w
		}
	}
	if scale > 0 {
		o.Error = worst / scale
	} else {
		o.Error = worst
	}
	o.OK = o.NonFinite == 0 && o.Error <= tolerance
	return o
}
