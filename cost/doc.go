// Package cost ranks μGraphs without a GPU: an analytical model of the time
// of a kernel graph on a given GPU, refined by measured profiles where a GPU
// has run the candidates.
//
// # The model
//
// Every op of a kernel graph but its inputs is one kernel launch, and the
// launches run one after another. The unfused program is a kernel graph of
// pre-defined ops, so its estimate is the baseline a μGraph is compared
// with; there is no special case.
//
// A pre-defined op is a library kernel (cuBLAS-like for matmul): it reads
// each distinct input once, writes its output once, and is taken to fill
// the GPU in one wave.
//
// A customized op runs its threadblock graph on every block of its grid.
// One block requests, from global memory, its tile of each input at every
// for-loop iteration (once when the input has no for-loop dim) and stores
// its output tiles once; Kernel.Bytes is that traffic over all blocks, so
// an input replicated across the grid counts once per block. Of it, only
// DRAMBytes reach device memory: a tile read by several blocks (they
// differ only along grid axes its input replicates) comes from DRAM for
// the first of them and from L2 for the rest. When the replicated inputs
// fit in half the L2, each of their tiles comes from DRAM once in the
// kernel; otherwise once per wave that reads it.
//
// Every kernel is costed as the launch plan (package launch, with its
// default options) launches it, the plan the code generator emits: a
// graph-defined kernel's grid, threads and shared memory, and from its
// thread plan which matmuls run on tensor cores and which ops are dead;
// ops no output depends on launch nothing and cost nothing. The shared memory, the
// threads and the arch's limits give the resident blocks per SM:
//
//	blocksPerSM = min(MaxBlocksPerSM, SmemPerSM / (smem + SmemReserved), MaxThreadsPerSM / threads rounded up to warps)
//	waves       = ceil(blocks / (SMs * blocksPerSM))
//
// and each wave of n blocks takes the larger of its memory and compute
// times. Memory charges every byte the blocks request: those that reach
// device memory at HBM bandwidth, the re-reads that hit L2 at L2
// bandwidth, so that two candidates moving different traffic never get
// the same memory time:
//
//	share   = min(1, min(n, SMs) / (SMs * memSaturation))
//	memory  = (DRAM bytes / (MemBandwidth * memEfficiency) +
//	           (all bytes - DRAM bytes) / (L2Bandwidth * memEfficiency)) / share
//	compute = ceil(n / SMs) * (block tensor flops / (TensorFLOPS/SMs * tensorEfficiency) +
//	                           block CUDA flops   / (FP32FLOPS/SMs   * cudaEfficiency))
//	time    = Σ_waves max(memory, compute) + LaunchMicros + waves * waveMicros
//
// A library kernel is the same formula with one full wave. Charging L2
// hits on top of DRAM traffic, rather than overlapping the two, errs slow
// for tiled matmuls that re-read their strips many times: on sm_90 an
// 8192³ matmul in 128x256 tiles is estimated L2-bound, about 30% above
// its tensor time. Ranking (Compare) breaks equal times by fewer bytes,
// then fewer blocks. Tensor flops
// are those of fp16/bf16 matmuls on tensor cores, padded to whole m16n8k16
// instructions; CUDA-core flops are those of element-wise ops (special
// functions count 4), reductions, accumulators and SIMT (fp32) matmuls. Ops
// before the for-loop's accumulators run every iteration, the others once;
// a None accumulator that an mma keeps in its registers costs nothing. The
// factors
// (memEfficiency 0.85, tensorEfficiency 0.75, cudaEfficiency 0.8,
// memSaturation 0.5, waveMicros 0.5) are documented where
// they are defined; the GPU figures, with their sources, are package
// target's table.
//
// # Profiles
//
// Where a GPU is at hand, the harness in bench/gpu measures candidates and
// writes a profile; --profile FILE or DIR (every profile*.json in it) lets
// the measured times override the model. A profile is JSON:
//
//	{
//	  "version": 1,
//	  "arch": "sm_80",
//	  "gpu": "NVIDIA A100-SXM4-80GB",
//	  "measurements": [
//	    {"program": "rmsnorm_matmul", "hash": "3f2a9c0d1e4b5a67", "median_us": 31.8, "runs": 200}
//	  ]
//	}
//
// arch is the model's arch name the profile refines; program is the
// program's name (the file name without ".py"); hash is kernel.Hash of the
// measured candidate's kernel graph as 16 lower-case hex digits
// (GraphHash); median_us is the median time of one run of the whole graph,
// in microseconds, over runs timed runs. Fields other than these are
// ignored, so a harness may record more (driver, clocks).
package cost
