// Package target holds what mirage knows of each GPU architecture it
// targets, in one table: the datasheet figures the cost model reads, the
// shared memory the search's and the code generator's plans must fit, the
// warp-level matrix instruction and the load paths that thread plans and
// emitted code use, and CUDA's launch limits. cost, search, ugraph/thread
// and codegen/cuda read it; none keeps a table of its own.
package target

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Default is the architecture a command targets when none is named.
const Default = "sm_90"

// CUDA's launch limits, the same on every architecture in the table
// ([CUDA-CG] Technical Specifications, compute capabilities 8.0 and 9.0).
const (
	WarpSize           = 32
	MaxThreadsPerBlock = 1024
	MaxGridX           = 1<<31 - 1
	MaxGridYZ          = 65535 // the y and z axes of a grid
	// StaticSmemPerBlock is the shared memory a kernel may use without
	// opting in (cudaFuncSetAttribute, MaxDynamicSharedMemorySize).
	StaticSmemPerBlock = 48 << 10
	// RegsPerBlock is the 32-bit registers a block's threads share (64K on
	// compute capabilities 8.0 and 9.0): 512 threads get 128 each.
	RegsPerBlock = 64 << 10
	// RegsPerSM is the 32-bit registers an SM's resident blocks share (64K
	// on 8.0 and 9.0).
	RegsPerSM = 64 << 10
)

// MMA is a warp-level matrix multiply-accumulate instruction: one warp
// computes D += A·B for an M×N tile of D, reducing over K.
type MMA struct {
	M, N, K int
	PTX     string // the instruction, as the PTX ISA names it
}

// Arch is one GPU a program is optimized for: the name --arch takes, the
// CUDA architecture its code is compiled for, and the GPU whose figures
// stand for it. Two GPUs of one CUDA architecture (H100 and H200, sm_90)
// run the same code at different rates: the search ranks for the one
// named. Rates are per second, sizes in bytes.
type Arch struct {
	Name string // the target's name: "sm_80", "sm_90", "h200"
	CUDA string // the CUDA architecture, as given to nvcc: "sm_90"
	GPU  string // the part the figures describe

	SMs          int
	MemBandwidth float64 // peak device-memory (HBM) bandwidth, bytes/s
	L2Bandwidth  float64 // peak L2 hit bandwidth, bytes/s: what re-reads of a tile cost
	L2Bytes      int     // L2 cache capacity
	MemBytes     int64   // device memory: what the program's tensors must fit in
	TensorFLOPS  float64 // dense fp16/bf16 tensor-core peak (fp32 accumulate), flop/s
	FP32FLOPS    float64 // CUDA-core fp32 peak (an FMA is 2 flops), flop/s

	SmemPerSM       int // shared memory an SM can give to resident blocks
	MaxSmemPerBlock int // the most one block may use (dynamic, opt-in)
	SmemReserved    int // shared memory the system reserves per resident block
	MaxThreadsPerSM int
	MaxBlocksPerSM  int

	LaunchMicros float64 // the GPU's gap between back-to-back kernels in one stream, with the host ahead of it
	// DependentLaunchMicros is what of LaunchMicros a graph-defined kernel
	// saves when it launches as a programmatic dependent launch after a
	// vendor library's call (launch.Kernel.Dependent); 0 on an arch
	// without them (before sm_90).
	DependentLaunchMicros float64

	// The figures a block's latency is modelled with.
	ClockHz         float64 // SM clock under sustained load
	SchedulersPerSM int     // warp schedulers (SM sub-partitions), each issuing one warp per cycle
	MemLatencyNs    float64 // a device-memory load's round trip under load
	SMBandwidth     float64 // the most bytes/s one SM draws from device memory

	// The instruction paths that thread plans and emitted code use.
	MMA       MMA  // tensor-core tile for fp16/bf16 matmuls, fp32 accumulate
	AsyncCopy bool // cp.async global-to-shared copies
	LdMatrix  bool // ldmatrix loads of mma fragments from shared memory

	Source string // where the figures come from
}

// The sources of the arch table, cited by key in its comments.
const (
	srcA100DS = "[A100-DS] NVIDIA A100 Tensor Core GPU datasheet (2021), column A100 80GB SXM"
	srcA100WP = "[A100-WP] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)"
	srcH100DS = "[H100-DS] NVIDIA H100 Tensor Core GPU datasheet (2023), column H100 SXM"
	srcH100WP = "[H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), H100 SXM5"
	srcH200DS = "[H200-DS] NVIDIA H200 Tensor Core GPU datasheet (2024), column H200 SXM: 141 GB of HBM3e at 4.8 TB/s, the H100's compute figures"
	srcKinds  = "[KINDS] readings on the H200 SXM machines the project's GPU runs borrow (2026-10-28): PyTorch reported 132 SMs and 60 MB of L2, nvidia-smi 143771 MiB"
	srcCUDA   = "[CUDA-CG] CUDA C++ Programming Guide, Technical Specifications per Compute Capability (8.0, 9.0) and the shared-memory notes for 8.x/9.0"
	srcLaunch = "[LAUNCH] model assumption: back-to-back launches in one stream cost 2-4 µs on current drivers; to be replaced by bench/gpu measurements"
	srcPTX    = "[PTX] PTX ISA 7.0+: mma.sync.aligned.m16n8k16 (sm_80+), cp.async (sm_80+), ldmatrix (sm_75+)"
	srcRun    = "[RUN] the H100 runs of bench/gpu (2026-11-27 and 2026-11-28, the project's cost/testdata/h100-*): measured or fitted there, as each figure says"
	srcL2     = "[L2] model assumption: NVIDIA publishes no L2 bandwidth for H100; the A100's ratio of L2 to HBM bandwidth (7.2 / 2.04 TB/s, 3.5x) applied to the H100's HBM3; to be replaced by a bench/gpu measurement"
)

// ampereMMA is the tensor-core instruction of sm_80, which sm_90 also runs
// (Hopper's wgmma is not used yet).
var ampereMMA = MMA{M: 16, N: 8, K: 16, PTX: "mma.sync.aligned.m16n8k16"}

// archs is the table of known GPUs, ordered by name. Every figure names
// its source; a figure that is not printed in a source as such says how it
// is derived.
var archs = []Arch{h200(h100), a100, h100}

// a100 is the A100 SXM4 80GB.
var a100 = Arch{
	Name:            "sm_80",
	CUDA:            "sm_80",
	GPU:             "A100-SXM4-80GB",
	SMs:             108,       // [A100-WP] "108 SMs" in A100 (of 128 in full GA100)
	MemBandwidth:    2039e9,    // [A100-DS] GPU memory bandwidth 2,039 GB/s (80GB SXM)
	L2Bandwidth:     7.2192e12, // [A100-WP] L2 read bandwidth 5120 bytes/clk, at the 1410 MHz boost clock
	L2Bytes:         40 << 20,  // [A100-WP] "40 MB L2 cache"
	MemBytes:        80 << 30,  // [A100-DS] GPU memory 80GB HBM2e (80GB SXM)
	TensorFLOPS:     312e12,    // [A100-DS] FP16/BF16 Tensor Core 312 TFLOPS (624 with sparsity)
	FP32FLOPS:       19.5e12,   // [A100-DS] FP32 19.5 TFLOPS
	SmemPerSM:       164 << 10, // [CUDA-CG] CC 8.0: 164 KB shared memory per SM; [A100-WP] "up to 164 KB"
	MaxSmemPerBlock: 163 << 10, // [CUDA-CG] CC 8.0: 163 KB per block (opt-in)
	SmemReserved:    1 << 10,   // [CUDA-CG] 8.x: 1 KB of shared memory is reserved per block
	MaxThreadsPerSM: 2048,      // [CUDA-CG] CC 8.0: 2048 resident threads per SM
	MaxBlocksPerSM:  32,        // [CUDA-CG] CC 8.0: 32 resident blocks per SM
	LaunchMicros:    3,         // [LAUNCH]
	ClockHz:         1.41e9,    // [A100-WP] boost clock 1410 MHz
	SchedulersPerSM: 4,         // [A100-WP] four processing blocks per SM, one warp scheduler each
	MemLatencyNs:    780,       // [RUN] the H100 and H200 fit, unmeasured on A100 (the latency table is fitted with it)
	SMBandwidth:     102e9,     // [RUN] the H100 and H200 fit, unmeasured on A100
	MMA:             ampereMMA, // [PTX]
	AsyncCopy:       true,      // [PTX]
	LdMatrix:        true,      // [PTX]
	Source:          strings.Join([]string{srcA100DS, srcA100WP, srcCUDA, srcLaunch, srcPTX, srcRun}, "; "),
}

// h100 is the H100 SXM5 80GB.
var h100 = Arch{
	Name:                  "sm_90",
	CUDA:                  "sm_90",
	GPU:                   "H100-SXM5-80GB",
	SMs:                   132,       // [H100-WP] H100 SXM5: 132 SMs (of 144 in full GH100)
	MemBandwidth:          3.35e12,   // [H100-DS] GPU memory bandwidth 3.35 TB/s (HBM3)
	L2Bandwidth:           11.725e12, // [L2] 3.5 x 3.35 TB/s
	L2Bytes:               50 << 20,  // [H100-WP] "50 MB L2 cache" in H100
	MemBytes:              80 << 30,  // [H100-DS] GPU memory 80GB (H100 SXM)
	TensorFLOPS:           989.4e12,  // [H100-WP] peak FP16 Tensor TFLOPS with FP32 accumulate 989.4 (1978.9 sparse); [H100-DS] 1,979 sparse
	FP32FLOPS:             67e12,     // [H100-DS] FP32 67 TFLOPS
	SmemPerSM:             228 << 10, // [CUDA-CG] CC 9.0: 228 KB shared memory per SM; [H100-WP] "up to 228 KB"
	MaxSmemPerBlock:       227 << 10, // [CUDA-CG] CC 9.0: 227 KB per block (opt-in)
	SmemReserved:          1 << 10,   // [CUDA-CG] 9.0: 1 KB of shared memory is reserved per block
	MaxThreadsPerSM:       2048,      // [CUDA-CG] CC 9.0: 2048 resident threads per SM
	MaxBlocksPerSM:        32,        // [CUDA-CG] CC 9.0: 32 resident blocks per SM
	LaunchMicros:          2.55,      // [RUN] fitted
	DependentLaunchMicros: 1.7,       // [RUN] rmsnorm_matmul's c0 (cuBLASLt, then a graph-defined kernel) launched dependent: 1.82, 1.65 µs faster (H200, 2026-12-04)
	ClockHz:               1.71e9,    // [RUN] ncu counted 69,983 cycles in rmsnorm_matmul's best kernel, the harness timed it at 40.98 µs
	SchedulersPerSM:       4,         // [H100-WP] four processing blocks per SM, one warp scheduler each
	MemLatencyNs:          780,       // [RUN] fitted
	SMBandwidth:           102e9,     // [RUN] fitted
	MMA:                   ampereMMA, // [PTX]
	AsyncCopy:             true,      // [PTX]
	LdMatrix:              true,      // [PTX]
	Source:                strings.Join([]string{srcH100DS, srcH100WP, srcCUDA, srcLaunch, srcPTX, srcL2, srcRun}, "; "),
}

// h200 is the H200 SXM: the H100's chip (its SMs, clocks, L2 and tensor
// rate) with faster and more HBM. Every figure but its memory's is the
// H100's, the fitted ones included, so that a refit of the H100 is the
// H200's too until an H200 run fits figures of its own.
func h200(h100 Arch) Arch {
	a := h100
	a.Name, a.GPU = "h200", "H200-SXM-141GB"
	a.MemBandwidth = 4.8e12   // [H200-DS] GPU memory bandwidth 4.8 TB/s (HBM3e)
	a.L2Bytes = 60 << 20      // [KINDS] PyTorch reports 60 MB of L2
	a.MemBytes = 143771 << 20 // [KINDS] nvidia-smi: 143771 MiB; [H200-DS] 141 GB
	a.Source = strings.Join([]string{srcH200DS, srcKinds, h100.Source}, "; ")
	return a
}

// Archs returns the known GPUs, ordered by name.
func Archs() []Arch { return slices.Clone(archs) }

// Lookup returns the architecture with a CUDA architecture name ("sm_80",
// "sm_90").
func Lookup(name string) (Arch, error) {
	for _, a := range archs {
		if a.Name == name {
			return a, nil
		}
	}
	return Arch{}, fmt.Errorf("unknown arch %q (known: %s)", name, strings.Join(Names(), ", "))
}

// MustLookup is Lookup for names known to be in the table (tests).
func MustLookup(name string) Arch {
	a, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return a
}

// Names returns the architectures' names, ordered.
func Names() []string {
	names := make([]string, len(archs))
	for i, a := range archs {
		names[i] = a.Name
	}
	return names
}

func (a Arch) String() string { return a.Name + " (" + a.GPU + ")" }

// ComputeCapability is the compute capability of a's CUDA architecture
// times ten, 90 for "sm_90"; false for a name of another form ("sm_90a").
func (a Arch) ComputeCapability() (int, bool) {
	digits, ok := strings.CutPrefix(a.CUDA, "sm_")
	n, err := strconv.Atoi(digits)
	return n, ok && err == nil
}
