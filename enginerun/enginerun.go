// Package enginerun checks emitted code the way an inference engine calls
// it: it builds examples/engine's C++ decode loop over a dynamic program's
// entry point for the CPU emulator, runs it at changing token counts m,
// and compares every step's outputs with the float64 interpreter's (and
// the rows past m with what was there). mirage verify --engine and the
// tests of dynamic programs use it; it is a checking tool, so the driver
// does not import the interpreter or the examples for it.
package enginerun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/internal/subprocess"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/examples"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Step is one step of examples/engine's decode loop.
type Step struct {
	M       int
	Error   float64 // the worst output error, relative to the largest |expected| value
	Past    bool    // a row past m of an output was written
	OK      bool    // within the fp16 tolerance (2e-2) and nothing past m written; for m outside the range: refused
	Refused bool    // m was outside the range, and the entry point returned an error
}

// ErrFailed is returned by Run when a step failed.
var ErrFailed = errors.New("the engine's decode loop failed")

// Run builds examples/engine over code (the CUDA of program, which has
// the dynamic dim m) for the CPU emulator in dir and runs its decode loop at
// steps: every input allocated once at hi rows (random multiples of 1/64,
// a weight's scaled by a power of two near 1/sqrt(K) as a model's are, so
// that fp16 does not overflow at a model's shapes: exact in every dtype),
// each step's outputs checked against the
// interpreter at that m on the inputs' first m rows, and the rows past m of
// the outputs checked untouched. It returns the steps, and
// ErrFailed beside them when one failed. What it holds (the inputs drawn
// at hi rows in float64 and as the engine reads them, and the
// interpreter's tensors at hi) keeps to limit bytes, checked before any
// is allocated (a *memlimit.Error).
func Run(ctx context.Context, dir string, program *kernel.Graph, code *cuda.Result, lo, hi int, steps []int, limit int64) ([]Step, error) {
	full, err := program.Bind(hi)
	if err != nil {
		return nil, err
	}
	var drawn int64
	for _, id := range full.Inputs() {
		drawn += int64(full.Tensors[id].Shape.NumElements()) * (8 + 4) // float64, then float32 in inputs.bin
	}
	if err := memlimit.Check("drawing the decode loop's inputs", drawn, limit); err != nil {
		return nil, err
	}
	if err := interp.CheckMemory(full, limit); err != nil {
		return nil, err
	}
	bin, warnings, err := cuda.BuildEngine(ctx, dir, code, examples.Engine)
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("g++ warnings:\n%s", warnings)
	}
	data := ModelInputs(program, full, rand.New(rand.NewPCG(5, 8)))
	in := &bytes.Buffer{}
	for _, x := range data {
		for _, v := range x {
			binary.Write(in, binary.LittleEndian, float32(v))
		}
	}
	inPath, refPath := filepath.Join(dir, "inputs.bin"), filepath.Join(dir, "reference.bin")
	if err := os.WriteFile(inPath, in.Bytes(), 0o644); err != nil {
		return nil, err
	}
	in = nil
	ref, err := os.Create(refPath)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(ref)
	var args []string
	for _, m := range steps {
		args = append(args, strconv.Itoa(m))
		if m < lo || m > hi {
			continue
		}
		at, err := program.Bind(m)
		if err != nil {
			return nil, err
		}
		var ins []*interp.Tensor
		for k, id := range at.Inputs() {
			s := at.Tensors[id].Shape
			x, err := interp.FromSlice(s, data[k][:s.NumElements()]) // the first m rows
			if err != nil {
				return nil, err
			}
			ins = append(ins, x)
		}
		want, err := interp.Run(at, ins)
		if err != nil {
			return nil, fmt.Errorf("the interpreter at m = %d: %v", m, err)
		}
		for _, t := range want {
			for _, v := range t.Data {
				binary.Write(w, binary.LittleEndian, float32(v))
			}
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := ref.Close(); err != nil {
		return nil, err
	}
	out, err := subprocess.Command(ctx, bin, append([]string{inPath, refPath}, args...)...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	res, perr := parseEngine(string(out), steps)
	// The engine exits 1 when a step failed and 2 when it could not run
	// (its files): anything else is the code under test stopping it (the
	// emulator aborts on a row past m), a verdict, with the steps it
	// reported before (it flushes each).
	stopped := errors.As(err, &exit) && exit.ExitCode() != 1 && exit.ExitCode() != 2
	switch {
	case stopped:
		return res, fmt.Errorf("%w: the engine stopped after %d of %d steps (%v):\n%s", ErrFailed, len(res), len(steps), err, out)
	case perr != nil:
		return nil, fmt.Errorf("the engine: %v\n%s", perr, out)
	case err != nil:
		return res, fmt.Errorf("%w: %v", ErrFailed, err)
	}
	return res, nil
}

// ModelInputs draws the inputs of bound, program with its dynamic rows
// bound (or program itself): random multiples of 1/64 in [-1, 1], a static
// weight's (rank 2 or more) scaled by the power of two nearest
// 1/sqrt(K), K its second-to-last dim, as a model's weights are, so that
// fp16 does not overflow at a model's shapes. Every value is exact in
// every dtype.
func ModelInputs(program, bound *kernel.Graph, r *rand.Rand) [][]float64 {
	var data [][]float64
	for k, id := range bound.Inputs() {
		scale := 1.0
		if d := program.Tensors[program.Inputs()[k]].Shape; !d.IsDynamic() && d.Rank() >= 2 {
			scale = math.Exp2(-math.Round(math.Log2(math.Sqrt(float64(d.Dim(d.Rank() - 2))))))
		}
		x := make([]float64, bound.Tensors[id].Shape.NumElements())
		for i := range x {
			x[i] = float64(r.IntN(129)-64) / 64 * scale
		}
		data = append(data, x)
	}
	return data
}

// parseEngine reads the engine's report, a line per step:
// "m=13: error 0.00031 of max |want|: ok", "m=0: outside 1..64: refused".
// With fewer lines than steps it returns those it read, and an error.
func parseEngine(out string, steps []int) ([]Step, error) {
	var res []Step
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rest, ok := strings.CutPrefix(line, "m=")
		if !ok {
			continue
		}
		ms, rest, _ := strings.Cut(rest, ": ")
		m, err := strconv.Atoi(ms)
		if err != nil {
			return nil, fmt.Errorf("bad line %q", line)
		}
		s := Step{M: m}
		switch {
		case strings.HasPrefix(rest, "outside"):
			s.Refused = strings.HasSuffix(rest, "refused")
			s.OK = s.Refused
		case strings.HasPrefix(rest, "error "):
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, fmt.Errorf("bad line %q", line)
			}
			if s.Error, err = strconv.ParseFloat(f[1], 64); err != nil {
				return nil, fmt.Errorf("bad line %q", line)
			}
			s.Past = strings.Contains(rest, "rows past m written")
			s.OK = strings.HasSuffix(rest, ": ok")
		default:
			return nil, fmt.Errorf("bad line %q", line)
		}
		res = append(res, s)
	}
	if len(res) != len(steps) {
		return res, fmt.Errorf("%d step(s) reported, %d run", len(res), len(steps))
	}
	return res, nil
}
