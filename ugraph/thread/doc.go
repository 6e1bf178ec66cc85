// Package thread derives the thread level of a μGraph from a threadblock
// graph (DESIGN §3): which ops run fused in registers, how each op runs on
// the block's threads, where every tile lives, and in which order the block
// runs its ops. The thread graph is derived, never searched.
//
// # Fusion
//
// An element-wise chain whose producer has one consumer runs in the
// producer's epilogue, in registers: a group is a head (the producer) and
// the ops fused into it, in order. An op C joins the group of its operand x
// when
//
//   - C is element-wise unary, or forloop_accum with no reduction (None);
//     or C is element-wise binary and x is its first operand that qualifies
//     (the other operand is then read from where it is stored: this widens
//     DESIGN's rule, which names unary ops, so that (X·W) / rms(X) divides
//     in registers);
//   - x has exactly one use, C's (an output op storing x is a use), and C's
//     result has x's shape (the chain operand is never broadcast);
//   - x is not an input tile (those go straight from device to shared
//     memory with cp.async; no thread holds them in registers);
//   - for an accumulator, the group has none yet: a group crosses from the
//     for-loop to the code after it at most once.
//
// Output ops join the group that produces their tile and store it from
// registers. Only a group's result (the tile of its last op) is
// materialized, in shared memory, and only when an op other than an output
// op reads it.
//
// # Lowering
//
// A matmul whose operands are fp16 or bf16 with K a multiple of 16 and N a
// multiple of 8 runs on tensor cores (ldmatrix + mma.sync m16n8k16, fp32
// accumulation); MMA says how its output is split among warps. Every other
// op, and every other matmul, runs as SIMT loops over elements (fp32
// arithmetic). A tensor-core matmul whose B operand is the product of an
// input tile the same for every batch and an input tile of one value per
// batch, which no other op reads (K or V repeated over a group's heads by
// a tensor of ones), takes the first tile itself: the product is dead,
// the mma stacks A's batches as one matrix, and the epilogue scales each
// row by its batch's value (Scaled). A None accumulator fused into an mma group keeps its sums in
// the mma registers across the for-loop (Persistent) while the register
// budget lasts; past it, and for SIMT groups, accumulators live in shared
// memory as fp32, but where the for-loop runs once: there a None
// accumulator in a SIMT or row group's chain, followed by ops that read
// nothing else and feeding only stores, passes the values through
// (Through), and the whole group, stores included, runs in the loop part. A sum, mean or rms accumulator that several iterations
// feed is added into by each lane in registers (LaneRows partials, from
// what the budget leaves, MaxLanePartials in all) and reduced across the
// warp once, after the
// loop: a warp sum per row per iteration is a chain of shuffles that every
// iteration would wait for. An op that works a row at a time (rms_norm, a
// reduction of the last dim, such an accumulator otherwise) runs a warp
// per row, or, when the tile has fewer rows than the block has warps,
// RowWarps warps per row: each sums every RowWarps-th stride of 32 lanes'
// reads, and they meet in a float a warp of shared memory across a barrier
// (Scratch), summed in a fixed order; or, into an accumulator, add their
// sums with atomicAdd (no barrier; the order, and so fp32's rounding, may
// vary from run to run). A lane reads a 16-byte vector of the row at a
// time (RowVector elements) where the rows are whole aligned vectors and
// every lane gets one, else an element; an rms_norm that stores its rows
// from its scaling pass stores them a vector at a time too (StoreVector)
// where every output's rows are whole aligned vectors of the elements read.
//
// # Storage and the shared-memory plan
//
// Tiles are in registers (fused), in shared memory (materialized, loaded
// inputs, accumulators), or, for an input tile of a graph with one for-loop
// iteration whose elements the kernel reads once each (one element-wise or
// reduction reader, not broadcast), left in device memory and read in
// place, when no other input tile is copied in: otherwise the kernel waits
// for that copy anyway, and the tile comes with it rather than a round trip
// later. An input tile read more often (by a matmul, an rms_norm, two ops)
// is copied in once, so that the kernel requests it once. When the copies
// do not fit, the tiles no mma reads are read in place after all: first
// those read once, then the others.
// Shared tiles are stored row-major in their dtype (accumulators in fp32)
// with rows padded to an odd multiple of 16 bytes when they are a multiple
// of 16 bytes, which makes ldmatrix and cp.async conflict-free. An input
// tile the for-loop walks gets Stages buffers (cp.async pipelining). Each
// Shared tile is live over an interval of schedule steps; tiles live at the
// same time never overlap, and SmemBytes is the peak.
//
// # Schedule
//
// Step 0 is the prologue (accumulators zeroed, the first loads issued);
// steps 1..L run the groups' for-loop parts in order; step L+1 ends the
// loop; the steps after it run the groups' post-loop parts. A group runs at
// the position of its last op, so that every operand it reads from shared
// memory is ready.
package thread
