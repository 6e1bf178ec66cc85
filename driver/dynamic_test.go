package driver

import (
	"context"
	"errors"
	"github.com/mirage-go/mirage/internal/memlimit"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/enginerun"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func TestParseDynamicFlag(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want DynamicFlag
		err  string
	}{
		{"X:0=1..64", DynamicFlag{"X", 0, 1, 64}, ""},
		{"0:1=4..4", DynamicFlag{"0", 1, 4, 4}, ""},
		{"X:0=0..64", DynamicFlag{}, "LO is 0"},
		{"X:0=65..64", DynamicFlag{}, "LO 65 is above HI 64"},
		{"X:0=1-64", DynamicFlag{}, "no .."},
		{"X=1..64", DynamicFlag{}, "no INPUT:"},
		{"X:a=1..64", DynamicFlag{}, "is not a dim"},
		{"X:-1=1..64", DynamicFlag{}, "is not a dim"},
		{"X:5=1..64", DynamicFlag{"X", 5, 1, 64}, ""}, // MarkDynamic knows the input's rank
		{"X:0", DynamicFlag{}, "no =LO..HI"},
		{"X:0=one..64", DynamicFlag{}, "integers"},
		{":0=1..64", DynamicFlag{}, "no INPUT:"},
	} {
		got, err := ParseDynamicFlag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestBuckets(t *testing.T) {
	for _, tt := range []struct {
		lo, hi int
		want   []int
	}{
		{1, 64, []int{1, 2, 4, 8, 16, 32, 64}},
		{1, 1, []int{1}},
		{5, 64, []int{8, 16, 32, 64}},
		{1, 100, []int{1, 2, 4, 8, 16, 32, 64, 128}},
		{4, 4, []int{4}},
	} {
		if got := DefaultBuckets(tt.lo, tt.hi); !slices.Equal(got, tt.want) {
			t.Errorf("DefaultBuckets(%d, %d) = %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
		if err := CheckBuckets(DefaultBuckets(tt.lo, tt.hi), tt.lo, tt.hi); err != nil {
			t.Errorf("the default buckets of %d..%d: %v", tt.lo, tt.hi, err)
		}
	}
	for _, tt := range []struct {
		s   string
		err string
	}{
		{"1,8,64", ""},
		{"1,8,100", ""},
		{"8,1,64", "must ascend"},
		{"1,8", "below HI 64"},
		{"0,8,64", "below the range"},
		{"1,64,128", "already covers HI"},
		{"1,x,64", "not an integer"},
		{"", "not an integer"},
	} {
		_, err := ParseBuckets(tt.s, 1, 64)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("--buckets %q: %v; want %q", tt.s, err, tt.err)
		}
	}
}

// TestMarkDynamic: inputs by name or position; the errors a user meets.
func TestMarkDynamic(t *testing.T) {
	src := "import mirage as mi\ng = mi.new_kernel_graph()\n" + strings.TrimPrefix(programs["llama_mlp"], "\n") + "\n"
	p, err := frontend.Load("llama_mlp.py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	flag := func(s string) DynamicFlag {
		f, err := ParseDynamicFlag(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, in := range []string{"X:0=1..64", "0:0=1..64"} {
		g, lo, hi, err := MarkDynamic(p.Graph, []DynamicFlag{flag(in)}, p.Names, p.Computed)
		if err != nil || lo != 1 || hi != 64 {
			t.Fatalf("%s: %v", in, err)
		}
		if ins, outs := g.DynamicDims(); !slices.Equal(ins, []int{0, -1, -1, -1}) || !slices.Equal(outs, []int{0}) {
			t.Errorf("%s: dynamic dims %v -> %v", in, ins, outs)
		}
	}
	for _, tt := range []struct {
		flags []string
		err   string
		op    int // a *kernel.DynamicError at this op, or -1
	}{
		{[]string{"Y:0=1..64"}, "no input named Y (inputs: W1, W2, W3, X, or a position)", -1},
		{[]string{"N:0=1..64"}, "N holds a tensor the program computes, not an input: a variable names the tensor it holds when the program ends (inputs: W1, W2, W3, X, or a position)", -1},
		{[]string{"4:0=1..64"}, "has 4 inputs", -1},
		{[]string{"X:2=1..64"}, "with no dim 2", -1},
		{[]string{"X:1=1..64"}, "normalizes across the dynamic dim m", 4},
		{[]string{"W1:0=1..64"}, "the weight", 5},
		{[]string{"X:0=1..64", "W1:0=1..64"}, "the weight", 5},
		{[]string{"W1:1=1..64"}, "the weight", 5},
		{[]string{"X:0=1..64", "W1:0=1..32"}, "one range", -1},
	} {
		var flags []DynamicFlag
		for _, s := range tt.flags {
			flags = append(flags, flag(s))
		}
		_, _, _, err := MarkDynamic(p.Graph, flags, p.Names, p.Computed)
		var de *kernel.DynamicError
		switch {
		case err == nil || !strings.Contains(err.Error(), tt.err):
			t.Errorf("%v: %v; want an error with %q", tt.flags, err, tt.err)
		case tt.op >= 0 && (!errors.As(err, &de) || de.Op != tt.op):
			t.Errorf("%v: %v; want it at op %d", tt.flags, err, tt.op)
		}
	}
}

// TestDynamicEngine searches a small LLaMA MLP block with m dynamic in
// 1..8 (buckets 1, 2, 4, 8), emits its one entry point, and runs it in the
// CPU emulator through examples/engine: a decode loop whose m changes at
// every step, each step's outputs checked against the interpreter at that
// m, and no row past m written. The bf16 program checks that the engine
// reads and writes each tensor in its own type (it took every two-byte
// tensor for fp16).
func TestDynamicEngine(t *testing.T) {
	needGXX(t)
	bodies := map[string]string{
		"llama_mlp": programs["llama_mlp"],
		"rmsnorm_matmul_dyn": `
X = g.new_input(dims=(16, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 96), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(64,)), W))`,
		"shift_scale_bf16": `
X = g.new_input(dims=(16, 256), dtype=mi.bfloat16)
B = g.new_input(dims=(1, 256), dtype=mi.bfloat16)
G = g.new_input(dims=(1, 256), dtype=mi.bfloat16)
g.mark_output(g.mul(g.sub(X, B), G))`,
	}
	for _, name := range []string{"llama_mlp", "rmsnorm_matmul_dyn", "shift_scale_bf16"} {
		t.Run(name, func(t *testing.T) {
			body := bodies[name]
			program, err := loadSource(t, name, body).WithDynamic(map[kernel.TensorID]int{0: 0})
			if err != nil {
				t.Fatal(err)
			}
			const lo, hi = 1, 8
			res, err := RunDynamic(context.Background(), program, lo, hi, DefaultBuckets(lo, hi), Options{TimeLimit: 2 * time.Minute, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Buckets) != 4 {
				t.Fatalf("%d buckets, want 4", len(res.Buckets))
			}
			if fusedBests(t, program, res) == 0 {
				t.Errorf("no bucket fused: the guards of graph-defined kernels go untested")
			}
			code, ranks, err := res.EmitCUDA(name, cuda.Options{}, func(msg string) { t.Log(msg) })
			if err != nil {
				t.Fatal(err)
			}
			checkCostAtM(t, res, ranks)
			runEngine(t, program, code, lo, hi, []int{1, 3, 5, 8, 2, 7, 4, 6, 0, 9})
			if name == "llama_mlp" {
				// Dependent launches (emit --dependent-launch): the
				// emulator fails a guarded kernel that reads before its wait.
				code, _, err := res.EmitCUDA(name, cuda.Options{DependentLaunch: true}, func(msg string) { t.Log(msg) })
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(code.Files[0].Data), "mirage::launch_dependent(") {
					t.Fatal("no kernel launched dependent")
				}
				runEngine(t, program, code, lo, hi, []int{1, 3, 8, 0, 9})
			}
		})
	}
}

// fusedBests checks that each bucket's best is the program at the size it
// is written for (the bucket's, or a larger one's it adopted) and returns
// how many of them are fused.
func fusedBests(t *testing.T, program *kernel.Graph, res *DynamicResult) int {
	t.Helper()
	fused := 0
	for _, b := range res.Buckets {
		c := b.Candidates[0]
		static, _ := program.Bind(b.rowsOf(c))
		r, err := ffverify.Equivalent(static, c.Graph, ffverify.Options{Seed: 3})
		if err != nil || !r.Equivalent {
			t.Errorf("bucket %d: its best is not the program at m = %d: %v %v", b.Size, b.rowsOf(c), r, err)
		}
		if c.Customized > 0 {
			fused++
		}
	}
	return fused
}

// TestDynamicPadded: a layer written head by head (the heads a batch dim
// made by a broadcast, as a serving engine's decode step has them) has m
// inside the heads, [4, m, 16], so the rows below m are not a prefix of
// its memory. Its entry point copies the inputs and outputs with m through
// buffers of the bucket's rows; the engine's decode loop checks every m
// against the interpreter (and that nothing past m of an output is
// written), with the buckets' best μGraphs and with the program unfused.
func TestDynamicPadded(t *testing.T) {
	needGXX(t)
	program, err := loadSource(t, "heads_layer", `
X = g.new_input(dims=(1, 8, 64), dtype=mi.float16)
ones = g.new_input(dims=(4, 1, 1), dtype=mi.float16)
Wq = g.new_input(dims=(4, 64, 16), dtype=mi.float16)
Wk = g.new_input(dims=(4, 64, 16), dtype=mi.float16)
Kc = g.new_input(dims=(4, 16, 32), dtype=mi.float16)
Vc = g.new_input(dims=(4, 32, 16), dtype=mi.float16)
Wo = g.new_input(dims=(4, 16, 64), dtype=mi.float16)
Nh = g.mul(g.rms_norm(X, normalized_shape=(64,)), ones)
Kn = g.matmul(Nh, Wk)
E = g.exp(g.mul_scalar(g.matmul(g.matmul(Nh, Wq), Kc), 0.25))
O = g.matmul(g.div(E, g.reduction(E, 2)), Vc)
g.mark_output(g.add(X, g.reduction(g.matmul(O, Wo), 0)))
g.mark_output(Kn)`).WithDynamic(map[kernel.TensorID]int{0: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !program.Padded() {
		t.Fatal("a program with [4, m, 16] is not Padded")
	}
	const lo, hi = 1, 8
	steps := []int{1, 3, 5, 8, 2, 7, 4, 6, 0, 9}
	res, err := RunDynamic(context.Background(), program, lo, hi, []int{2, 8}, Options{TimeLimit: 20 * time.Second, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fusedBests(t, program, res) == 0 {
		t.Error("no bucket fused")
	}
	for _, b := range res.Buckets {
		c := b.Candidates[0]
		// Every row of the bucket runs: the estimate at m is the graph's,
		// and two launches of the copy kernel for m rows of three tensors
		// (X in; the layer's output and Kn out; 128 bytes a row each), each
		// read and written once.
		arch := target.MustLookup(target.Default)
		whole, err := cost.EstimateGraph(c.Graph, arch)
		if err != nil {
			t.Fatal(err)
		}
		m := b.Lo
		e, err := res.EstimateAt(m, 0, arch)
		if want := whole.Bytes + int64(2*3*128*m); err != nil || e.Bytes != want || e.Launches != whole.Launches+2 || e.Micros <= whole.Micros {
			t.Errorf("bucket %d at m = %d: %d bytes in %d launches, %.1f µs (%v); want %d in %d, over the graph's %.1f", b.Size, m, e.Bytes, e.Launches, e.Micros, err, want, whole.Launches+2, whole.Micros)
		}
	}
	code, _, err := res.EmitCUDA("heads_layer", cuda.Options{}, func(msg string) { t.Log(msg) })
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, program, code, lo, hi, steps)

	rows := res.Rows()
	var unfused []cuda.Bucket
	for _, b := range []cuda.Bucket{{Size: 3, Lo: 1, Hi: 3}, {Size: 8, Lo: 4, Hi: 8}} {
		if b.Graph, err = program.Bind(b.Size); err != nil {
			t.Fatal(err)
		}
		unfused = append(unfused, b)
	}
	code, err = cuda.EmitDynamic("heads_layer_unfused", rows, unfused, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, program, code, lo, hi, steps)

	// Rows of 6 bytes (3 fp16 elements): the copy kernel's byte path, at
	// odd m, where a row's width and the pitches are no whole words.
	odd, err := loadSource(t, "odd_rows", `
X = g.new_input(dims=(2, 5, 3), dtype=mi.float16)
g.mark_output(g.exp(X))`).WithDynamic(map[kernel.TensorID]int{0: 1})
	if err != nil || !odd.Padded() {
		t.Fatalf("%v, padded %v", err, odd != nil && odd.Padded())
	}
	big, err := odd.Bind(5)
	if err != nil {
		t.Fatal(err)
	}
	oddRows := cuda.Rows{Lo: 1, Hi: 5, Padded: true}
	oddRows.Inputs, oddRows.Outputs = odd.DynamicDims()
	code, err = cuda.EmitDynamic("odd_rows", oddRows, []cuda.Bucket{{Size: 5, Lo: 1, Hi: 5, Graph: big}}, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, odd, code, 1, 5, []int{1, 2, 3, 4, 5, 0, 6})
}

// TestDynamicLibraryKernels runs the unfused program (pre-defined ops
// only: the runtime's GEMM, RMSNorm, element-wise kernels) as every
// bucket: each must work on the m rows it is given.
func TestDynamicLibraryKernels(t *testing.T) {
	needGXX(t)
	program, err := load(t, "llama_mlp").WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	rows := cuda.Rows{Lo: 1, Hi: 16}
	rows.Inputs, rows.Outputs = program.DynamicDims()
	var buckets []cuda.Bucket
	from := 1
	for _, size := range []int{4, 16} {
		g, err := program.Bind(size)
		if err != nil {
			t.Fatal(err)
		}
		buckets = append(buckets, cuda.Bucket{Size: size, Lo: from, Hi: size, Graph: g})
		from = size + 1
	}
	code, err := cuda.EmitDynamic("llama_mlp_unfused", rows, buckets, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Every op runs on m rows, those on the program's intermediates too
	// (kernel.Graph.RowDims: rms_norm(X), its products, silu, mul): no
	// call of cuBLASLt takes a bucket's rows.
	calls := 0
	for line := range strings.Lines(string(code.Files[0].Data)) {
		if strings.Contains(line, "mirage::lt_matmul<") {
			calls++
			if !strings.Contains(line, "static_cast<int>(1LL * m)") {
				t.Errorf("a matmul on a bucket's rows, not m's: %s", strings.TrimSpace(line))
			}
		}
	}
	if calls != 6 {
		t.Errorf("%d calls of cuBLASLt; the program's 3 matmuls in 2 buckets make 6", calls)
	}
	runEngine(t, program, code, 1, 16, []int{1, 3, 4, 5, 13, 16})
}

// TestDynamicSumBeforeRows: a sum over a dim of extent 1 before the
// dynamic one (X is 1 × m × 16) copies m·16 elements; its runtime kernel
// gets the inner count at m, and the range is not refused (it once was,
// as "supports m up to 1"). A sum over the dynamic dim is still refused.
func TestDynamicSumBeforeRows(t *testing.T) {
	needGXX(t)
	program, err := loadSource(t, "sum_before_rows", `
X = g.new_input(dims=(1, 8, 16), dtype=mi.float16)
g.mark_output(g.exp(g.reduction(X, 0)))`).WithDynamic(map[kernel.TensorID]int{0: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts := cuda.Options{Arch: target.MustLookup("sm_90")}
	if err := CheckLowers("sum_before_rows", program, 1, 8, DefaultBuckets(1, 8), opts); err != nil {
		t.Fatal(err)
	}
	rows := cuda.Rows{Lo: 1, Hi: 8}
	rows.Inputs, rows.Outputs = program.DynamicDims()
	var buckets []cuda.Bucket
	from := 1
	for _, size := range []int{2, 8} {
		g, err := program.Bind(size)
		if err != nil {
			t.Fatal(err)
		}
		buckets = append(buckets, cuda.Bucket{Size: size, Lo: from, Hi: size, Graph: g})
		from = size + 1
	}
	code, err := cuda.EmitDynamic("sum_before_rows", rows, buckets, opts)
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, program, code, 1, 8, []int{1, 2, 3, 7, 8, 9})

	over, err := loadSource(t, "sum_over_rows", `
X = g.new_input(dims=(8, 16), dtype=mi.float16)
g.mark_output(g.exp(g.reduction(X, 0)))`).WithDynamic(map[kernel.TensorID]int{0: 0})
	if err == nil {
		err = CheckLowers("sum_over_rows", over, 1, 8, DefaultBuckets(1, 8), opts)
	}
	if err == nil {
		t.Error("a sum over the dynamic rows was accepted")
	}
}

// checkCostAtM: by the cost model, the μGraph that runs m is never slower
// than the bucket's own best static μGraph at the bucket's size, its time
// grows with m, and below the size of the graph's rows it moves fewer bytes
// (padding rows cost no traffic).
func checkCostAtM(t *testing.T, res *DynamicResult, ranks []int) {
	t.Helper()
	arch := target.MustLookup(target.Default)
	for i, b := range res.Buckets {
		k := slices.IndexFunc(b.Candidates, func(c *Candidate) bool { return c.Rows == 0 })
		own, err := cost.EstimateGraph(b.Candidates[k].Graph, arch)
		if err != nil {
			t.Fatal(err)
		}
		chosen := b.Candidates[ranks[i]]
		full, err := cost.EstimateGraph(chosen.Graph, arch)
		if err != nil {
			t.Fatal(err)
		}
		var prev cost.Estimate
		for m := b.Lo; m <= b.Hi; m++ {
			e, err := res.EstimateAt(m, ranks[i], arch)
			if err != nil {
				t.Fatal(err)
			}
			if e.Micros > own.Micros {
				t.Errorf("bucket %d at m = %d: %.2f µs; its own static μGraph %.2f µs", b.Size, m, e.Micros, own.Micros)
			}
			if m < b.rowsOf(chosen) && e.Bytes >= full.Bytes {
				t.Errorf("bucket %d at m = %d moves %d bytes, as many as its graph at %d rows", b.Size, m, e.Bytes, b.rowsOf(chosen))
			}
			if m > b.Lo && (e.Micros < prev.Micros || e.Bytes < prev.Bytes) {
				t.Errorf("bucket %d: m = %d is estimated faster than m = %d", b.Size, m, m-1)
			}
			prev = e
		}
		if chosen.Rows > 0 {
			t.Logf("bucket %d runs bucket %d's μGraph", b.Size, chosen.Rows)
		} else if e, _ := res.EstimateAt(b.Size, ranks[i], arch); e.Micros != own.Micros || e.Bytes != own.Bytes {
			t.Errorf("bucket %d at its own size: %v µs, the static estimate %v", b.Size, e.Micros, own.Micros)
		}
	}
}

// needGXX fails the test without g++: the emulator is how the emitted
// code runs here (scripts/setup.sh installs it).
func needGXX(t *testing.T) {
	t.Helper()
	if _, err := templates.EmulatorCompiler(); err != nil {
		t.Fatal(err)
	}
}

// runEngine runs examples/engine's decode loop over code (enginerun.Run) and
// fails the test unless every step passes; it returns the steps.
func runEngine(t *testing.T, program *kernel.Graph, code *cuda.Result, lo, hi int, steps []int) []enginerun.Step {
	t.Helper()
	res, err := enginerun.Run(context.Background(), t.TempDir(), program, code, lo, hi, steps, memlimit.Default)
	if err != nil {
		t.Fatalf("%v: %+v", err, res)
	}
	for i, s := range res {
		inRange := steps[i] >= lo && steps[i] <= hi
		if s.M != steps[i] || !s.OK || s.Refused == inRange || s.Past {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	return res
}

// TestBucketsAreStaticRuns: each bucket's answer is the one a static run
// of the program written at its size gives, though the dynamic run checks
// the smaller buckets' candidates with the largest one's fingerprints.
func TestBucketsAreStaticRuns(t *testing.T) {
	program, err := load(t, "shared_norm").WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{TimeLimit: 2 * time.Minute, Workers: 2, PartResults: 3}
	res, err := RunDynamic(context.Background(), program, 1, 16, []int{3, 16}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reused == 0 {
		t.Error("bucket 3 made its own fingerprints rather than cut bucket 16's")
	}
	for _, b := range res.Buckets {
		static, _ := program.Bind(b.Size)
		want, err := Run(context.Background(), static, opts)
		if err != nil {
			t.Fatal(err)
		}
		if b.Stopped != "" || want.Stopped != "" {
			t.Fatalf("bucket %d stopped early (%q, %q)", b.Size, b.Stopped, want.Stopped)
		}
		var own []*Candidate // less a larger bucket's it adopted
		for _, c := range b.Candidates {
			if c.Rows == 0 {
				own = append(own, c)
			}
		}
		if got, want := hashes(own), hashes(want.Candidates); !slices.Equal(got, want) {
			t.Errorf("bucket %d: candidates %x, a static run %x", b.Size, got, want)
		}
	}
}

func hashes(cs []*Candidate) []uint64 {
	var hs []uint64
	for _, c := range cs {
		hs = append(hs, c.Hash)
	}
	return hs
}
