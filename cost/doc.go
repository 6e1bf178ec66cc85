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
// Every kernel is costed as the launch plan (package launch, with its
// default options) launches it, the plan the code generator emits: its
// grid, threads, shared memory and pipeline, and for a graph-defined
// kernel its thread plan. Ops no output depends on launch nothing and
// cost nothing. A pre-defined op runs a kernel of the runtime library,
// which reads each distinct input once and writes its output once.
//
// Traffic. A graph-defined kernel's block requests its tile of each input
// at every for-loop iteration (once when the input has no for-loop dim)
// and stores its output tiles once; Kernel.Bytes is that traffic over all
// blocks, so an input replicated across the grid counts once per block.
// Of it, only DRAMBytes reach device memory: a tile read by several blocks
// (they differ only along grid axes its input replicates) comes from DRAM
// for the first of them and from L2 for the rest; when the replicated
// inputs fit in half the L2, once in the kernel, otherwise once per wave.
//
// Waves. The shared memory, the threads and the arch's limits give the
// resident blocks per SM:
//
//	blocksPerSM = min(MaxBlocksPerSM, SmemPerSM / (smem + SmemReserved), MaxThreadsPerSM / threads rounded up to warps,
//	                  for a graph-defined kernel RegsPerSM / (threads · registers a thread: launch.Kernel.Registers))
//	waves       = ceil(blocks / (SMs * blocksPerSM))
//
// and a wave of n blocks, whose busiest SM holds b = ceil(n/SMs) of them,
// takes the longest of three times:
//
//	memory  = (DRAM bytes / (MemBandwidth * memEfficiency) +
//	           (all bytes - DRAM bytes) / (L2Bandwidth * memEfficiency)) / min(1, min(n, SMs) / (SMs * memSaturation))
//	compute = b * (block tensor flops / (TensorFLOPS/SMs * tensorEfficiency) +
//	               block CUDA flops   / (FP32FLOPS/SMs   * cudaEfficiency))
//	latency = blockTime(b)
//	time    = Σ_waves max(memory, compute, latency) + LaunchMicros
//
// less DependentLaunchMicros for a kernel the launch plan launches dependent
// after a cuBLASLt call (launch.AfterLibrary): its launch hides behind the
// call's last blocks.
//
// Latency. The first H100 measurements (testdata/h100-2026-11-27) showed
// kernels of 4 warps, one block an SM, running at a third of the memory
// and a few percent of the tensor peak: each warp alone on its scheduler
// waits on every load, shuffle and barrier it issues. So a block's time is
// counted as its code runs it: the steps of its prologue, of each for-loop
// iteration and of its epilogue (steps: cp.async copies, element loops,
// row reductions with warp_sum, ldmatrix and mma.sync, SIMT multiply-adds,
// stores, barriers, reads of tiles left in device memory), counted from
// the thread plan by the code generator's patterns (or, for a library
// kernel, from the runtime's code), and priced in cycles for one warp
// alone on its scheduler (the latency table, fitted). Where b blocks share
// an SM their latencies overlap, until their warps issue more than the
// schedulers can (Saturation warps a scheduler): past that they slow in
// proportion. Each iteration also waits for its tiles where the cp.async
// pipeline does not hide them: a fetch is a round trip (MemLatencyNs) plus
// a transfer, the slower of its bytes at the block's share of the SM's
// bandwidth (SMBandwidth, and b n-ths of the HBM's where the busiest SM
// holds b of a wave's n blocks: an SM with fewer leaves its share to the
// rest when done) and its 128-byte lines at the SM's memory pipeline's
// rate (a tile of short rows, a few columns of a weight matrix, costs a
// line per row). With s stages
// an iteration takes the longest of its steps, its transfer and a fetch
// over s-1; with one stage (a tile that holds a whole reduction, or a
// pipeline lowered to fit), all in turn.
//
// The latency table and the arch's ClockHz, MemLatencyNs, SMBandwidth and
// LaunchMicros were fitted to the measured graphs (TestFit, -fit; each
// value held near a prior from published microbenchmarks), and
// TestCalibrated checks the fit, per target measured: per workload
// Kendall's tau of at least 0.7 over the pairs of graphs the GPU tells
// apart (measured more than 5% apart; 0.5 for the workloads modelGaps
// names, whose order no term prices yet), the median estimate within 1.3x
// of the measured time. The measurements (a directory a run,
// GPU-DATE-COMMIT: two H100 runs of 2026-11-27 and 28, two H200 runs of
// 2026-12-04; each document's meta.arch names the target its graphs were
// emitted for and timed on, and an H200 run's are estimated for h200,
// whose fitted figures are the H100's) are of the code emitted at the commit
// each run measured: a change to the code generator makes those of the
// graphs it changes stale until the next GPU run, and the table must
// follow it.
//
// Ranking (Compare) breaks equal times by fewer bytes, then fewer blocks.
// Tensor flops are those of fp16/bf16 matmuls on tensor cores, padded to
// whole m16n8k16 instructions; CUDA-core flops are those of element-wise
// ops (special functions count 4), reductions, accumulators and SIMT
// (fp32) matmuls. The factors (memEfficiency 0.85, tensorEfficiency 0.75,
// cudaEfficiency 0.8, memSaturation 0.5) are documented where they are
// defined; the GPU figures, with their sources, are package target's
// table.
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
