// mirage_runtime.cuh: the device runtime of the CUDA code that mirage emits.
//
// Header-only. It needs the CUDA toolkit alone (no CUTLASS, no CuTe; code
// that defines MIRAGE_CUBLASLT links the toolkit's cuBLASLt) and an sm_80 or
// newer GPU: tiles are loaded with cp.async, multiplied with ldmatrix +
// mma.sync m16n8k16 (fp16 or bf16 in, fp32 accumulate).
//
//   Section 1  element types and conversions
//   Section 2  the math of the element-wise ops (fp32), warp reductions
//   Section 3  PTX wrappers: cp.async, ldmatrix, mma.sync
//   Section 4  warp-level tensor-core tiles (used by graph-defined kernels and the GEMM)
//   Section 5  pre-defined kernel ops: element-wise, reduction, rms_norm, matmul
//   Section 6  pre-defined matmuls through cuBLASLt (under MIRAGE_CUBLASLT)
//
// Conventions: tensors are dense and row-major; every device pointer must be
// 16-byte aligned (cudaMalloc's are); tiles in shared memory are row-major
// with a row pitch in elements. Compute is fp32 whatever the storage type.
//
// Defining MIRAGE_EMULATE builds the code for mirage's CPU emulator (its
// tests); nothing else changes.
#ifndef MIRAGE_RUNTIME_CUH
#define MIRAGE_RUNTIME_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

// MIRAGE_DYNAMIC_SMEM(name) declares the kernel's dynamic shared memory.
#if defined(MIRAGE_EMULATE)
#define MIRAGE_DYNAMIC_SMEM(name) unsigned char* name = mirage_emu::dynamic_smem()
#else
#define MIRAGE_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

// Access points. Every element access to global or shared memory of the
// emitted code and of the kernels below goes through one, so that the CPU
// emulator can count the accesses (under MIRAGE_EMU_COUNTERS) by site, as
// a warp issues them; with nvcc each is the access itself. x is an lvalue:
//   MIRAGE_LDG(x)   loads x from global memory      (ld.global)
//   MIRAGE_STG(x)   is x, to be stored to (st.global): MIRAGE_STG(p[i]) = v;
//   MIRAGE_LDS(x), MIRAGE_STS(x)   the same in shared memory
//   MIRAGE_RMWS(x)  is x, loaded and stored (x += v) in shared memory
// store2, add2 and the PTX wrappers (cp.async, ldmatrix) count their own.
#if defined(MIRAGE_EMULATE)
#define MIRAGE_LDG(x) (*mirage_emu::traced(__COUNTER__, mirage_emu::GlobalMem, mirage_emu::Load, &(x)))
#define MIRAGE_STG(x) (*mirage_emu::traced(__COUNTER__, mirage_emu::GlobalMem, mirage_emu::Store, &(x)))
#define MIRAGE_LDS(x) (*mirage_emu::traced(__COUNTER__, mirage_emu::SharedMem, mirage_emu::Load, &(x)))
#define MIRAGE_STS(x) (*mirage_emu::traced(__COUNTER__, mirage_emu::SharedMem, mirage_emu::Store, &(x)))
#define MIRAGE_RMWS(x) (*mirage_emu::traced_rmw(__COUNTER__, mirage_emu::SharedMem, &(x)))
// The call site of a runtime function, for the emulator's counters.
#define MIRAGE_SITE_PARAMS , const char *site_file = __builtin_FILE(), int site_line = __builtin_LINE()
#define MIRAGE_SITE_ARGS , site_file, site_line
#else
#define MIRAGE_LDG(x) (x)
#define MIRAGE_STG(x) (x)
#define MIRAGE_LDS(x) (x)
#define MIRAGE_STS(x) (x)
#define MIRAGE_RMWS(x) (x)
#define MIRAGE_SITE_PARAMS
#define MIRAGE_SITE_ARGS
#endif

namespace mirage {

// ---------------------------------------------------------------------------
// Section 1: element types and conversions
// ---------------------------------------------------------------------------

typedef __half f16;
typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

// from_f32<T>(x) rounds x to T (round to nearest even).
template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

#if defined(MIRAGE_EMULATE)
// check_aligned fails the emulated program where a vector access of n bytes at p
// would fault on a GPU (cudaErrorMisalignedAddress), naming its site.
inline void check_aligned(const char* file, int line, const void* p, std::size_t n) {
  if (reinterpret_cast<std::uintptr_t>(p) % n != 0)
    mirage_emu::fail(std::string(file) + ":" + std::to_string(line) + ": an access of " + std::to_string(n) +
                     " bytes at a misaligned address");
}

// trace2 records a two-element access at p by the calling site of store2
// or add2, in the memory p is in.
template <typename T> inline void trace2(const char* file, int line, mirage_emu::Dir dir, const T* p) {
  check_aligned(file, line, p, 2 * sizeof(T));
  mirage_emu::traced_line(file, line, dir, p, 2 * sizeof(T));
}
#define MIRAGE_TRACE2(dir, p) trace2(site_file, site_line, mirage_emu::dir, p)
#else
#define MIRAGE_TRACE2(dir, p) ((void)0)
#endif

// store2 writes a and b to p[0] and p[1]; p must be aligned to two elements.
__device__ __forceinline__ void store2(float* p, float a, float b MIRAGE_SITE_PARAMS) {
  MIRAGE_TRACE2(Store, p);
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(__half* p, float a, float b MIRAGE_SITE_PARAMS) {
  MIRAGE_TRACE2(Store, p);
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b MIRAGE_SITE_PARAMS) {
  MIRAGE_TRACE2(Store, p);
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// misaligned reports whether one of the n pointers p[i] is not a multiple
// of align bytes. The entry points refuse such tensors (16) and workspaces
// (256) with cudaErrorInvalidValue, as their headers say: a kernel's 16-byte
// access there would fail with an error that ends the CUDA context.
inline bool misaligned(void const* const* p, int n, uintptr_t align) {
  for (int i = 0; i < n; ++i)
    if (reinterpret_cast<uintptr_t>(p[i]) % align != 0) return true;
  return false;
}

// add2 adds a and b to p[0] and p[1] (fp32 accumulators; p 8-byte aligned).
__device__ __forceinline__ void add2(float* p, float a, float b MIRAGE_SITE_PARAMS) {
  MIRAGE_TRACE2(Load, p);
  float2 v = *reinterpret_cast<float2*>(p);
  v.x += a;
  v.y += b;
  MIRAGE_TRACE2(Store, p);
  *reinterpret_cast<float2*>(p) = v;
}

// ---------------------------------------------------------------------------
// Section 2: element-wise math (DESIGN §3; NaN propagates through every op)
// ---------------------------------------------------------------------------
//
// One device function per element-wise op, named by its Runtime entry in
// ugraph's op table: op_NAME(x, scalars...) or op_NAME(x, y), on floats.

__device__ __forceinline__ float op_exp(float x) { return expf(x); }
__device__ __forceinline__ float op_square(float x) { return x * x; }
__device__ __forceinline__ float op_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float op_silu(float x) { return x / (1.0f + expf(-x)); }
// The exact gelu (erf), not the tanh approximation.
__device__ __forceinline__ float op_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float op_relu(float x) { return x < 0.0f ? 0.0f : x; }
__device__ __forceinline__ float op_clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
__device__ __forceinline__ float op_mul_scalar(float x, float s) { return x * s; }
__device__ __forceinline__ float op_log(float x) { return logf(x); }
__device__ __forceinline__ float op_add(float x, float y) { return x + y; }
__device__ __forceinline__ float op_sub(float x, float y) { return x - y; }
__device__ __forceinline__ float op_mul(float x, float y) { return x * y; }
__device__ __forceinline__ float op_div(float x, float y) { return x / y; }
__device__ __forceinline__ float op_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ float op_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// warp_sum returns the sum of v over the 32 lanes of the warp, in every lane.
// All 32 lanes must call it.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// load_cg reads p past the SM's L1 (ld.global.cg): another block of the
// same launch wrote it, and L1 is not kept coherent within a launch.
__device__ __forceinline__ float load_cg(const float* p) {
#if defined(MIRAGE_EMULATE)
  return MIRAGE_LDG(*p);
#else
  return __ldcg(p);
#endif
}

// ---------------------------------------------------------------------------
// Section 3: PTX wrappers (sm_80+)
// ---------------------------------------------------------------------------

#if defined(MIRAGE_EMULATE)

template <int BYTES> __device__ __forceinline__ void cp_async(void* dst, const void* src MIRAGE_SITE_PARAMS) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  mirage_emu::cp_async(dst, src, BYTES, BYTES MIRAGE_SITE_ARGS);
}
__device__ __forceinline__ void cp_async16_zfill(void* dst, const void* src, bool valid MIRAGE_SITE_PARAMS) {
  mirage_emu::cp_async(dst, src, 16, valid ? 16 : 0 MIRAGE_SITE_ARGS);
}
template <int BYTES>
__device__ __forceinline__ void cp_async_zfill(void* dst, const void* src, bool valid MIRAGE_SITE_PARAMS) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  mirage_emu::cp_async(dst, src, BYTES, valid ? BYTES : 0 MIRAGE_SITE_ARGS);
}
__device__ __forceinline__ void cp_async_commit() { mirage_emu::cp_async_commit(); }
template <int N> __device__ __forceinline__ void cp_async_wait() { mirage_emu::cp_async_wait(N); }
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) { mirage_emu::ldmatrix(r, 4, false, p); }
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { mirage_emu::ldmatrix(r, 4, true, p); }
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* p) { mirage_emu::ldmatrix(r, 2, true, p); }
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mirage_emu::mma_16816(d, a, b, mirage_emu::is_bf16<T>::value);
}
template <typename... P, typename... A>
inline cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
  return mirage_emu::launch(kernel, grid, block, smem, stream, args...);
}
// The emulator runs kernels one after another, but fails a dependent
// launch's thread that touches device memory before its wait.
template <typename... P, typename... A>
inline cudaError_t launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
  return mirage_emu::launch_dependent(kernel, grid, block, smem, stream, args...);
}
__device__ __forceinline__ void wait_for_prior_grid() { mirage_emu::grid_wait(); }
__device__ __forceinline__ void let_dependents_launch() {}

#else

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp_async<BYTES> starts an asynchronous copy of BYTES (4, 8 or 16) bytes from
// global to shared memory; both addresses must be aligned to BYTES.
template <int BYTES> __device__ __forceinline__ void cp_async(void* dst, const void* src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(smem_u32(dst)), "l"(src), "n"(BYTES) : "memory");
  }
}

// cp_async16_zfill copies 16 bytes, or writes 16 zero bytes when !valid (src
// is then not read, but must still be a valid address).
__device__ __forceinline__ void cp_async16_zfill(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}

// cp_async_zfill<BYTES> is cp_async<BYTES>, or BYTES zero bytes when !valid
// (src is then not read, but must still be a valid address): the rows of
// a tensor past the dynamic dim m.
template <int BYTES> __device__ __forceinline__ void cp_async_zfill(void* dst, const void* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if (BYTES == 16) {
    cp_async16_zfill(dst, src, valid);
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_u32(dst)), "l"(src), "n"(BYTES),
                 "r"(valid ? BYTES : 0)
                 : "memory");
  }
}

// Every thread must commit the same number of groups (empty ones included),
// so that cp_async_wait<N> counts the same groups in all threads.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// cp_async_wait<N> waits until at most N of this thread's most recent groups
// are pending. Other threads' copies are visible only after a barrier.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ldmatrix: lanes 8i..8i+7 give the row addresses of 8x8 matrix i (16
// bytes each, 16-byte aligned); register i receives this lane's fragment
// of matrix i: row lane/4, columns 2(lane%4) and +1 (.trans: the transpose).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(p)));
}

// mma_16816<T>: d += a·b for one 16x8x16 tile (T = __half or __nv_bfloat16),
// fp32 accumulators. Fragments (PTX ISA, mma.m16n8k16): with g = lane/4 and
// t = lane%4, a holds A rows g and g+8 at columns 2t, 2t+1, 2t+8, 2t+9; b
// holds B rows 2t, 2t+1, 2t+8, 2t+9 of column g; d[r] is the element at row
// g + 8·(r/2), column 2t + r%2.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                         const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// launch runs kernel on stream and returns the launch's error, which it
// clears (the caller owns it; nothing is printed).
template <typename... P, typename... A>
inline cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
  kernel<<<grid, block, smem, stream>>>(static_cast<P>(args)...);
  return cudaGetLastError();
}

// launch_dependent is launch as a programmatic dependent launch (sm_90):
// the kernel's blocks may start while the stream's kernel before it
// finishes, once that one's blocks have all called let_dependents_launch
// (or exited), so that the launch's latency hides behind its tail. The
// kernel must call wait_for_prior_grid before it touches memory: that
// waits until the kernel before it has completed and its writes are
// visible. Such code must be compiled for sm_90 or newer, where the wait
// is an instruction: built for sm_80, the wait compiles to nothing while
// the launch still lets the kernel start early on a newer GPU (the
// emitted .cu refuses to compile so).
template <typename... P, typename... A>
inline cudaError_t launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, static_cast<P>(args)...);
  const cudaError_t last = cudaGetLastError();  // cleared, and reported (an earlier one too), as launch does
  return err != cudaSuccess ? err : last;
}
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void let_dependents_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

#endif  // MIRAGE_EMULATE

// ---------------------------------------------------------------------------
// Section 4: warp-level tensor-core tiles
// ---------------------------------------------------------------------------

// mma_tiles: one warp computes acc[i][j] += A·B for the m-tiles mt0+i
// (i < CM) and the n-tiles nt0+j (j < CN) of C[batch][M][N] =
// A[batch][M][K] · B[batch][K][N], with A and B row-major in shared memory at
// row pitches LDA and LDB (elements; multiples of 8). m-tile q covers rows
// (q % MTPB)·16 .. +15 of batch q / MTPB; rows past M read the next batch or
// the padding rows after A, and their results are to be discarded. m-tiles
// >= MTILES are skipped. All 32 lanes must call it with the same arguments
// but lane.
template <typename T, int CM, int CN, int M, int K, int LDA, int LDB, int MTPB, int MTILES>
__device__ __forceinline__ void mma_tiles(float (&acc)[CM][CN][4], const T* A, const T* B, int mt0, int nt0, int lane) {
  static_assert(K % 16 == 0, "K must be a multiple of 16");
  const int r16 = lane % 16;        // the row of the 16-row block this lane addresses
  const int c8 = (lane / 16) * 8;   // and the 8-column half
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    uint32_t b[CN][2];
#pragma unroll
    for (int i = 0; i < CM; ++i) {
      const int mt = mt0 + i;
      if (mt >= MTILES) break;  // warp-uniform
      const int batch = MTILES == MTPB ? 0 : mt / MTPB;
      const bool new_batch = i == 0 || batch != (MTILES == MTPB ? 0 : (mt - 1) / MTPB);
      if (new_batch) {
        const T* Bk = B + (batch * K + k0 + r16) * LDB;
#pragma unroll
        for (int j = 0; j + 1 < CN; j += 2) {
          uint32_t r[4];
          ldmatrix_x4_trans(r, Bk + (nt0 + j) * 8 + c8);
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
        if (CN % 2 == 1) {
          uint32_t r[2];
          ldmatrix_x2_trans(r, Bk + (nt0 + CN - 1) * 8);
          b[CN - 1][0] = r[0];
          b[CN - 1][1] = r[1];
        }
      }
      uint32_t a[4];
      ldmatrix_x4(a, A + (batch * M + (mt % MTPB) * 16 + r16) * LDA + k0 + c8);
#pragma unroll
      for (int j = 0; j < CN; ++j) mma_16816<T>(acc[i][j], a, b[j]);
    }
  }
}

// ---------------------------------------------------------------------------
// Section 5: pre-defined kernel ops
// ---------------------------------------------------------------------------
//
// Each op is a small self-contained kernel; the emitted host code picks the
// launch shape and starts it with mirage::launch. None needs cuBLAS or any
// other library, so the emitted code links with nothing but the CUDA runtime.

// Up to rank-4 shapes, left-padded with 1s; strides are in elements, 0 along
// a broadcast dim.
struct Dims4 {
  long long d[4];
};

// Vec16<T> is the 16 bytes one vector access moves: 8 fp16/bf16 or 4
// fp32 elements. load16 and store16 move one at p, which must be 16-byte
// aligned (every tensor is, and a row of a multiple of VEC elements keeps
// each of its vectors so).
template <typename T> struct alignas(16) Vec16 {
  static constexpr int N = 16 / sizeof(T);
  T e[N];
};
template <typename T> constexpr int VEC = Vec16<T>::N;

template <typename T> __device__ __forceinline__ Vec16<T> load16(const T* p MIRAGE_SITE_PARAMS) {
  Vec16<T> v;
#if defined(MIRAGE_EMULATE)
  check_aligned(site_file, site_line, p, 16);
  mirage_emu::traced_line(site_file, site_line, mirage_emu::Load, p, 16);
  v = *reinterpret_cast<const Vec16<T>*>(p);
#else
  *reinterpret_cast<uint4*>(&v) = *reinterpret_cast<const uint4*>(p);
#endif
  return v;
}
// load16_or_zero is load16 where ok, and zeros where not: a vector of a
// padding row of a dynamic dim, which reads as zero.
template <typename T> __device__ __forceinline__ Vec16<T> load16_or_zero(bool ok, const T* p MIRAGE_SITE_PARAMS) {
  if (ok) return load16(p MIRAGE_SITE_ARGS);
  Vec16<T> v;
#pragma unroll
  for (int i = 0; i < Vec16<T>::N; ++i) v.e[i] = from_f32<T>(0.0f);
  return v;
}
template <typename T> __device__ __forceinline__ void store16(T* p, const Vec16<T>& v MIRAGE_SITE_PARAMS) {
#if defined(MIRAGE_EMULATE)
  check_aligned(site_file, site_line, p, 16);
  mirage_emu::traced_line(site_file, site_line, mirage_emu::Store, p, 16);
  *reinterpret_cast<Vec16<T>*>(p) = v;
#else
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
#endif
}

// unary_kernel and binary_kernel apply f, a function object the emitted
// code defines (float operator()(float[, float]) const, calling an op_NAME
// above with the op's scalars), to every element: a 16-byte vector of
// elements per thread per step, then the tail past the last whole vector
// an element at a time.
template <typename T, typename F>
__global__ void __launch_bounds__(256) unary_kernel(T* __restrict__ out, const T* __restrict__ x, long long n, F f) {
  constexpr int V = VEC<T>;
  const long long nv = n / V, step = 256ll * gridDim.x, first = blockIdx.x * 256ll + threadIdx.x;
  for (long long v = first; v < nv; v += step) {
    Vec16<T> a = load16(x + v * V);
#pragma unroll
    for (int i = 0; i < V; ++i) a.e[i] = from_f32<T>(f(to_f32(a.e[i])));
    store16(out + v * V, a);
  }
  for (long long e = nv * V + first; e < n; e += step) MIRAGE_STG(out[e]) = from_f32<T>(f(to_f32(MIRAGE_LDG(x[e]))));
}

// binary_kernel broadcasts: an operand's stride is 0 along a dim it has
// extent 1 in. Where the output's rows are whole vectors, a vector of the
// output reads a vector of an operand with the row's dim (stride 1) and
// one element of an operand broadcast along it (stride 0), with one index
// computation per vector; otherwise an element at a time.
template <typename T, typename F>
__global__ void __launch_bounds__(256) binary_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                     const T* __restrict__ y, long long n, Dims4 shape, Dims4 xs,
                                                     Dims4 ys, F f) {
  constexpr int V = VEC<T>;
  const long long step = 256ll * gridDim.x, first = blockIdx.x * 256ll + threadIdx.x;
  auto offsets = [&](long long e, long long& xo, long long& yo) {
    long long r = e;
    xo = 0;
    yo = 0;
#pragma unroll
    for (int d = 3; d >= 0; --d) {
      const long long i = r % shape.d[d];
      r /= shape.d[d];
      xo += i * xs.d[d];
      yo += i * ys.d[d];
    }
  };
  if (shape.d[3] % V == 0) {
    for (long long v = first; v < n / V; v += step) {
      long long xo, yo;
      offsets(v * V, xo, yo);
      Vec16<T> a, b;
      if (xs.d[3] != 0) {
        a = load16(x + xo);
      } else {
        const T s = MIRAGE_LDG(x[xo]);
#pragma unroll
        for (int i = 0; i < V; ++i) a.e[i] = s;
      }
      if (ys.d[3] != 0) {
        b = load16(y + yo);
      } else {
        const T s = MIRAGE_LDG(y[yo]);
#pragma unroll
        for (int i = 0; i < V; ++i) b.e[i] = s;
      }
#pragma unroll
      for (int i = 0; i < V; ++i) a.e[i] = from_f32<T>(f(to_f32(a.e[i]), to_f32(b.e[i])));
      store16(out + v * V, a);
    }
    return;
  }
  for (long long e = first; e < n; e += step) {
    long long xo, yo;
    offsets(e, xo, yo);
    MIRAGE_STG(out[e]) = from_f32<T>(f(to_f32(MIRAGE_LDG(x[xo])), to_f32(MIRAGE_LDG(y[yo]))));
  }
}

// reduce_rows_kernel: out[r] = Σ_j x[r][j] (reduction over the last dim): a
// warp per row (blockDim.x / 32 rows a block), each lane summing 16-byte
// vectors of it when n is a whole number of them.
template <typename T>
__global__ void __launch_bounds__(256) reduce_rows_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                          long long rows, int n) {
  constexpr int V = VEC<T>;
  const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (long long r = static_cast<long long>(blockIdx.x) * warps + threadIdx.x / 32; r < rows;
       r += static_cast<long long>(warps) * gridDim.x) {
    const T* xr = x + r * n;
    float s = 0.0f;
    if (n % V == 0) {
#pragma unroll 4
      for (int j = lane * V; j < n; j += 32 * V) {
        const Vec16<T> a = load16(xr + j);
#pragma unroll
        for (int i = 0; i < V; ++i) s += to_f32(a.e[i]);
      }
    } else {
      for (int j = lane; j < n; j += 32) s += to_f32(MIRAGE_LDG(xr[j]));
    }
    s = warp_sum(s);
    if (lane == 0) MIRAGE_STG(out[r]) = from_f32<T>(s);
  }
}

// reduce_rows_block_kernel: the same sum for rows too few to give each SM
// 8 warps a warp a row, each long: a block of 256 threads per row, each
// thread summing 16-byte vectors of it when n is a whole number of them,
// the eight warps' sums added in shared memory. A warp per row would leave
// SMs idle or nearly so and run a loop eight times as long (4 rows of
// 32000 fp32: 250 vectors a lane).
template <typename T>
__global__ void __launch_bounds__(256) reduce_rows_block_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                                long long rows, int n) {
  constexpr int V = VEC<T>;
  __shared__ float partial[8];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    float s = 0.0f;
    if (n % V == 0) {
#pragma unroll 4
      for (int j = threadIdx.x * V; j < n; j += 256 * V) {
        const Vec16<T> a = load16(xr + j);
#pragma unroll
        for (int i = 0; i < V; ++i) s += to_f32(a.e[i]);
      }
    } else {
      for (int j = threadIdx.x; j < n; j += 256) s += to_f32(MIRAGE_LDG(xr[j]));
    }
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) MIRAGE_STS(partial[threadIdx.x / 32]) = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.0f;
#pragma unroll
      for (int w = 0; w < 8; ++w) t += MIRAGE_LDS(partial[w]);
      MIRAGE_STG(out[r]) = from_f32<T>(t);
    }
    __syncthreads();  // partial is rewritten by the next row
  }
}

// reduce_rows_split_kernel: the same sum for a few rows, each so long that
// a block a row would leave most SMs idle and loop long (16 rows of a
// 128256-token vocabulary in fp32: 125 vectors a thread): gridDim.x blocks
// share row blockIdx.y, block b summing accesses [b·chunk, (b+1)·chunk) of
// it (16-byte vectors when n is a whole number of them, else elements)
// into partial[row][b]. The row's last block to count itself in
// arrived[row] (which the caller zeroes before the launch) adds the row's
// partials, lane b % 32 taking partial b, then the warp's shuffle tree:
// an order that does not depend on which block finished last. It writes
// out[row].
template <typename T>
__global__ void __launch_bounds__(256) reduce_rows_split_kernel(T* __restrict__ out, const T* __restrict__ x, int n,
                                                                int chunk, float* __restrict__ partial,
                                                                unsigned* __restrict__ arrived) {
  constexpr int V = VEC<T>;
  __shared__ float sums[8];
  const long long r = blockIdx.y;
  const int splits = gridDim.x;
  const T* xr = x + r * n;
  const int lo = blockIdx.x * chunk;
  float s = 0.0f;
  if (n % V == 0) {
    const int hi = n / V - lo < chunk ? n / V : lo + chunk;
#pragma unroll 4
    for (int v = lo + threadIdx.x; v < hi; v += 256) {
      const Vec16<T> a = load16(xr + static_cast<long long>(v) * V);
#pragma unroll
      for (int i = 0; i < V; ++i) s += to_f32(a.e[i]);
    }
  } else {
    const int hi = n - lo < chunk ? n : lo + chunk;
    for (int j = lo + threadIdx.x; j < hi; j += 256) s += to_f32(MIRAGE_LDG(xr[j]));
  }
  s = warp_sum(s);
  if (threadIdx.x % 32 == 0) MIRAGE_STS(sums[threadIdx.x / 32]) = s;
  __syncthreads();
  if (threadIdx.x >= 32) return;  // warp 0 finishes the block
  const int lane = threadIdx.x;
  float* pr = partial + r * splits;
  int last = 0;
  if (lane == 0) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) t += MIRAGE_LDS(sums[w]);
    MIRAGE_STG(pr[blockIdx.x]) = t;
    __threadfence();  // the partial is visible before the count says it is there
    last = atomicAdd(&arrived[r], 1u) == static_cast<unsigned>(splits - 1);
  }
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  __threadfence();  // and the others' partials are read after their counts
  float u = 0.0f;
  for (int b = lane; b < splits; b += 32) u += load_cg(pr + b);
  u = warp_sum(u);
  if (lane == 0) MIRAGE_STG(out[r]) = from_f32<T>(u);
}

// reduce_mid_kernel: out[o][i] = Σ_j x[o][j][i]: a thread per output, lanes
// along the contiguous inner dim.
template <typename T>
__global__ void __launch_bounds__(256) reduce_mid_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                         long long outer, int n, long long inner) {
  const long long total = outer * inner;
  for (long long e = blockIdx.x * 256ll + threadIdx.x; e < total; e += 256ll * gridDim.x) {
    const long long o = e / inner, i = e % inner;
    const T* p = x + o * n * inner + i;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += to_f32(MIRAGE_LDG(p[j * inner]));
    MIRAGE_STG(out[e]) = from_f32<T>(s);
  }
}

// reduce_mid_split_kernel: the same sum where the outputs are too few to
// fill the GPU a thread each and each sums a long dim (a mean over 512
// tokens of 4096 features): a block per 32 consecutive outputs, a lane
// each (along the contiguous inner dim), its eight warps each summing
// every eighth j, their sums added in shared memory by warp 0.
template <typename T>
__global__ void __launch_bounds__(256) reduce_mid_split_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                               long long outer, int n, long long inner) {
  __shared__ float partial[8][32];
  const long long total = outer * inner;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (long long e0 = blockIdx.x * 32ll; e0 < total; e0 += 32ll * gridDim.x) {
    const long long e = e0 + lane;
    float s = 0.0f;
    if (e < total) {
      const long long o = e / inner, i = e % inner;
      const T* p = x + o * n * inner + i;
      for (int j = warp; j < n; j += 8) s += to_f32(MIRAGE_LDG(p[j * inner]));
    }
    MIRAGE_STS(partial[warp][lane]) = s;
    __syncthreads();
    if (warp == 0 && e < total) {
      float t = 0.0f;
#pragma unroll
      for (int w = 0; w < 8; ++w) t += MIRAGE_LDS(partial[w][lane]);
      MIRAGE_STG(out[e]) = from_f32<T>(t);
    }
    __syncthreads();  // partial is rewritten by the next outputs
  }
}

// rms_norm_warp_kernel: a warp per row (blockDim.x / 32 rows a block) of n
// elements, for rows of at most 32·VEC·4 (1024 fp16): each lane keeps its
// 16-byte vectors of the row in registers between the sum of squares and
// the scaling, so the row is read once, with no barrier. n must be a
// whole number of vectors. out = x / sqrt(mean(x²)), no epsilon.
template <typename T>
__global__ void __launch_bounds__(256) rms_norm_warp_kernel(T* __restrict__ out, const T* __restrict__ x, long long rows,
                                                            int n) {
  constexpr int V = VEC<T>, PER = 4;  // vectors a lane holds
  const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (long long r = static_cast<long long>(blockIdx.x) * warps + threadIdx.x / 32; r < rows;
       r += static_cast<long long>(warps) * gridDim.x) {
    const T* xr = x + r * n;
    Vec16<T> v[PER];
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
      const int j = (lane + 32 * c) * V;
      if (j < n) {
        v[c] = load16(xr + j);
#pragma unroll
        for (int i = 0; i < V; ++i) s += to_f32(v[c].e[i]) * to_f32(v[c].e[i]);
      }
    }
    s = warp_sum(s);
    const float inv = 1.0f / sqrtf(s / static_cast<float>(n));
#pragma unroll
    for (int c = 0; c < PER; ++c) {
      const int j = (lane + 32 * c) * V;
      if (j < n) {
#pragma unroll
        for (int i = 0; i < V; ++i) v[c].e[i] = from_f32<T>(to_f32(v[c].e[i]) * inv);
        store16(out + r * n + j, v[c]);
      }
    }
  }
}

// rms_norm_kernel: a block per row of n elements; out = x / sqrt(mean(x²)),
// with no epsilon (DESIGN §3: an all-zero row gives NaN). Each thread keeps
// the first CACHED of its elements in registers between the sum of
// squares and the scaling, so that a row of up to 256·CACHED elements
// (8192: LLaMA-70B's hidden size) is read from memory once.
template <typename T>
__global__ void __launch_bounds__(256) rms_norm_kernel(T* __restrict__ out, const T* __restrict__ x, long long rows,
                                                       int n) {
  constexpr int CACHED = 32;
  __shared__ float partial[8];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    float v[CACHED];
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CACHED; ++c) {
      const int j = threadIdx.x + c * 256;
      v[c] = j < n ? to_f32(MIRAGE_LDG(xr[j])) : 0.0f;
      s += v[c] * v[c];
    }
    for (int j = threadIdx.x + CACHED * 256; j < n; j += 256) {
      const float u = to_f32(MIRAGE_LDG(xr[j]));
      s += u * u;
    }
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) MIRAGE_STS(partial[threadIdx.x / 32]) = s;
    __syncthreads();
    float ss = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) ss += MIRAGE_LDS(partial[w]);
    __syncthreads();  // partial is rewritten by the next row
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(n));
#pragma unroll
    for (int c = 0; c < CACHED; ++c) {
      const int j = threadIdx.x + c * 256;
      if (j < n) MIRAGE_STG(out[r * n + j]) = from_f32<T>(v[c] * inv);
    }
    for (int j = threadIdx.x + CACHED * 256; j < n; j += 256)
      MIRAGE_STG(out[r * n + j]) = from_f32<T>(to_f32(MIRAGE_LDG(xr[j])) * inv);
  }
}

// gemm_kernel: C[b] = A[b] · B[b] for row-major A [M][K], B [K][N], C [M][N]
// (b = blockIdx.z), on tensor cores (T = __half or __nv_bfloat16). A block
// of WM x WN warps computes a BM x BN tile of C, walking K in steps of 32
// with a STAGES-deep cp.async pipeline; rows and columns past M, N and K
// are zero-filled. Needs K and N to be multiples of 8 (16-byte rows), and
// STAGES·(BM·40 + 32·(BN+8))·2 bytes of dynamic shared memory.
template <typename T, int BM, int BN, int WM, int WN, int STAGES>
__global__ void __launch_bounds__(WM* WN * 32) gemm_kernel(T* __restrict__ C, const T* __restrict__ A,
                                                          const T* __restrict__ B, int M, int N, int K) {
  constexpr int BK = 32;
  constexpr int THREADS = WM * WN * 32;
  constexpr int LDA = BK + 8;  // 80-byte rows: an odd number of 16-byte units
  constexpr int LDB = BN + 8;
  constexpr int MPER = BM / 16 / WM, NPER = BN / 8 / WN;
  MIRAGE_DYNAMIC_SMEM(smem);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + STAGES * BM * LDA;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long batch = blockIdx.z;
  A += batch * M * K;
  B += batch * K * N;
  C += batch * M * N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = (K + BK - 1) / BK;

  auto load = [&](int kt, int stage) {
    T* a = sA + stage * BM * LDA;
    T* b = sB + stage * BK * LDB;
    for (int c = tid; c < BM * BK / 8; c += THREADS) {
      const int r = c / (BK / 8), v = c % (BK / 8);
      const int gr = m0 + r, gc = kt * BK + v * 8;
      const bool ok = gr < M && gc < K;
      cp_async16_zfill(a + r * LDA + v * 8, ok ? A + static_cast<long long>(gr) * K + gc : A, ok);
    }
    for (int c = tid; c < BK * BN / 8; c += THREADS) {
      const int r = c / (BN / 8), v = c % (BN / 8);
      const int gr = kt * BK + r, gc = n0 + v * 8;
      const bool ok = gr < K && gc < N;
      cp_async16_zfill(b + r * LDB + v * 8, ok ? B + static_cast<long long>(gr) * N + gc : B, ok);
    }
  };

  float acc[MPER][NPER][4];
#pragma unroll
  for (int i = 0; i < MPER; ++i)
#pragma unroll
    for (int j = 0; j < NPER; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load(s, s);
    cp_async_commit();
  }
  const int mt0 = (warp / WN) * MPER, nt0 = (warp % WN) * NPER;
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt is visible; every warp is done with tile kt-1
    const int next = kt + STAGES - 1;
    if (next < ktiles) load(next, next % STAGES);
    cp_async_commit();
    const int st = kt % STAGES;
    mma_tiles<T, MPER, NPER, BM, BK, LDA, LDB, BM / 16, BM / 16>(acc, sA + st * BM * LDA, sB + st * BK * LDB, mt0,
                                                                 nt0, lane);
  }
  cp_async_wait<0>();

#pragma unroll
  for (int i = 0; i < MPER; ++i)
#pragma unroll
    for (int j = 0; j < NPER; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + (mt0 + i) * 16 + lane / 4 + 8 * h;
        const int col = n0 + (nt0 + j) * 8 + (lane % 4) * 2;
        if (row < M && col < N) store2(C + static_cast<long long>(row) * N + col, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
}

// gemm_simt_kernel: the fallback for any dtype and shape; 16x16 tiles of C
// per block, fp32 accumulation.
template <typename T>
__global__ void __launch_bounds__(256) gemm_simt_kernel(T* __restrict__ C, const T* __restrict__ A,
                                                        const T* __restrict__ B, int M, int N, int K) {
  __shared__ float sa[16][17], sb[16][17];
  const long long batch = blockIdx.z;
  A += batch * M * K;
  B += batch * K * N;
  C += batch * M * N;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  const int row = blockIdx.y * 16 + tr, col = blockIdx.x * 16 + tc;
  float s = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    MIRAGE_STS(sa[tr][tc]) = row < M && k0 + tc < K ? to_f32(MIRAGE_LDG(A[static_cast<long long>(row) * K + k0 + tc])) : 0.0f;
    MIRAGE_STS(sb[tr][tc]) = k0 + tr < K && col < N ? to_f32(MIRAGE_LDG(B[static_cast<long long>(k0 + tr) * N + col])) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) s += MIRAGE_LDS(sa[tr][k]) * MIRAGE_LDS(sb[k][tc]);
    __syncthreads();
  }
  if (row < M && col < N) MIRAGE_STG(C[static_cast<long long>(row) * N + col]) = from_f32<T>(s);
}

// RowsCopy is one strided copy of a padded dynamic entry point (DESIGN §9):
// height rows of width bytes, src_pitch bytes apart in src and dst_pitch
// apart in dst; RowsCopies, up to MaxRowsCopies of them for one launch.
struct RowsCopy {
  const unsigned char* src;
  unsigned char* dst;
  long long src_pitch, dst_pitch, width, height;
};
constexpr int MaxRowsCopies = 8;
struct RowsCopies {
  RowsCopy c[MaxRowsCopies];
  int n;
};

// copy_rows_kernel makes every copy of cs, one launch for the tensors a
// padded entry point copies in (or out) where a cudaMemcpy2DAsync each
// would launch one per tensor: a 4-byte word per thread per step where
// the copy's addresses, pitches and width allow, else a byte.
template <int WORD>
__global__ void __launch_bounds__(256) copy_rows_kernel(RowsCopies cs) {
  const long long first = blockIdx.x * 256ll + threadIdx.x, step = 256ll * gridDim.x;
  for (int i = 0; i < cs.n; ++i) {
    const RowsCopy c = cs.c[i];
    const bool words = (reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) | c.src_pitch | c.dst_pitch | c.width) % WORD == 0;
    const long long per = words ? c.width / WORD : c.width, n = per * c.height;
    for (long long k = first; k < n; k += step) {
      const long long r = k / per, j = k % per;
      if (words) {
        MIRAGE_STG(reinterpret_cast<unsigned int*>(c.dst + r * c.dst_pitch)[j]) =
            MIRAGE_LDG(reinterpret_cast<const unsigned int*>(c.src + r * c.src_pitch)[j]);
      } else {
        MIRAGE_STG(c.dst[r * c.dst_pitch + j]) = MIRAGE_LDG(c.src[r * c.src_pitch + j]);
      }
    }
  }
}

// copy_rows launches copy_rows_kernel on stream with enough blocks for
// the largest copy's words, up to four waves of an H100's SMs.
inline cudaError_t copy_rows(const RowsCopies& cs, cudaStream_t stream) {
  long long most = 0;
  for (int i = 0; i < cs.n; ++i) most = most > cs.c[i].width * cs.c[i].height ? most : cs.c[i].width * cs.c[i].height;
  if (most == 0) return cudaSuccess;
  const long long blocks = (most / 4 + 255) / 256;
  return launch(copy_rows_kernel<4>, dim3(static_cast<unsigned>(blocks < 1 ? 1 : blocks > 528 ? 528 : blocks)), dim3(256), 0, stream, cs);
}

}  // namespace mirage

#endif  // MIRAGE_RUNTIME_CUH

// ---------------------------------------------------------------------------
// Section 6: matmuls through cuBLASLt
// ---------------------------------------------------------------------------
//
// The code mirage emits defines MIRAGE_CUBLASLT when a pre-defined matmul
// runs through cuBLASLt, the CUDA toolkit's matmul library (its skinny,
// split-K GEMMs move weights at PyTorch's speed); such code links with
// -lcublasLt. The emulator's cublasLt.h implements the entry points used
// here on the CPU. Guarded on its own: a program that includes several
// emitted files (mirage tune's) gets it when any of them defines it first.
#if defined(MIRAGE_CUBLASLT) && !defined(MIRAGE_RUNTIME_CUBLASLT)
#define MIRAGE_RUNTIME_CUBLASLT
#include <cublasLt.h>

#include <initializer_list>
#include <map>
#include <mutex>
#include <tuple>

namespace mirage {

// LtWorkspaceBytes is the workspace every cuBLASLt matmul is given (the
// emitted code reserves it in the program's workspace): what PyTorch gives
// cuBLAS on Hopper, so that the heuristic may pick the same split-K kernels.
constexpr size_t LtWorkspaceBytes = size_t(32) << 20;

// LtPlan is what one matmul shape needs: its descriptors and the
// algorithm the heuristic chose, made once per shape and alignment.
struct LtPlan {
  cublasStatus_t status = CUBLAS_STATUS_NOT_INITIALIZED;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
};

// lt_handle is the cuBLASLt handle of the current device, made at its first
// matmul (cublasLtCreate allocates no device memory) and kept; nullptr when
// that failed (tried again at the next call). Callers hold lt_mutex().
inline std::mutex& lt_mutex() {
  static std::mutex mu;
  return mu;
}
inline cublasLtHandle_t lt_handle(int device) {
  static std::map<int, cublasLtHandle_t> handles;
  cublasLtHandle_t& h = handles[device];
  if (h == nullptr && cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
  return h;
}

template <typename T> constexpr cudaDataType_t lt_type();
template <> constexpr cudaDataType_t lt_type<__half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t lt_type<__nv_bfloat16>() { return CUDA_R_16BF; }
template <> constexpr cudaDataType_t lt_type<float>() { return CUDA_R_32F; }

// lt_layout is a column-major rows x cols layout of batch matrices.
inline cublasStatus_t lt_layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int rows, int cols, int batch) {
  cublasStatus_t st = cublasLtMatrixLayoutCreate(l, t, rows, cols, rows);
  if (st != CUBLAS_STATUS_SUCCESS || batch == 1) return st;
  const int32_t count = batch;
  const int64_t stride = static_cast<int64_t>(rows) * cols;
  st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  return cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
}

// lt_plan makes the plan of a row-major C[M][N] = A[M][K] · B[K][N]: in
// cuBLAS's column-major terms C^T = B^T · A^T, so B is the first operand.
inline LtPlan lt_plan(cublasLtHandle_t handle, cudaDataType_t t, int M, int N, int K, int batch, uint32_t align) {
  LtPlan p;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  const uint64_t ws = LtWorkspaceBytes;
  p.status = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (p.status == CUBLAS_STATUS_SUCCESS) p.status = lt_layout(&p.a, t, N, K, batch);
  if (p.status == CUBLAS_STATUS_SUCCESS) p.status = lt_layout(&p.b, t, K, M, batch);
  if (p.status == CUBLAS_STATUS_SUCCESS) p.status = lt_layout(&p.c, t, N, M, batch);
  if (p.status == CUBLAS_STATUS_SUCCESS) p.status = cublasLtMatmulPreferenceCreate(&pref);
  if (p.status == CUBLAS_STATUS_SUCCESS)
    p.status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (p.status == CUBLAS_STATUS_SUCCESS) p.status = cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
  if (p.status == CUBLAS_STATUS_SUCCESS)
    p.status = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  if (p.status == CUBLAS_STATUS_SUCCESS && found == 0) p.status = CUBLAS_STATUS_NOT_SUPPORTED;
  if (p.status == CUBLAS_STATUS_SUCCESS) p.algo = result.algo;
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (p.status != CUBLAS_STATUS_SUCCESS) {  // nothing of a failed plan is kept
    if (p.desc != nullptr) cublasLtMatmulDescDestroy(p.desc);
    for (cublasLtMatrixLayout_t l : {p.a, p.b, p.c})
      if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
  return p;
}

// lt_error is the cudaError_t an entry point returns for a cuBLASLt status.
inline cudaError_t lt_error(cublasStatus_t st) {
  switch (st) {
    case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
    case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUBLAS_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;  // not a sticky launch failure: the context is fine
  }
}

// lt_align is the largest power of two up to 256 dividing every address
// and batch stride, in bytes: what the heuristic may assume.
inline uint32_t lt_align(std::initializer_list<uintptr_t> xs) {
  uint32_t a = 256;
  for (uintptr_t x : xs)
    while (a > 1 && x % a != 0) a /= 2;
  return a;
}

// lt_matmul runs C[b] = A[b] · B[b] (+ R[b] when R is not null) for
// row-major A [M][K], B [K][N], C and R [M][N], b < batch, on stream
// through cuBLASLt, fp32 accumulation (R is the library's C, with beta 1);
// workspace holds LtWorkspaceBytes. Each device's handle and each shape's
// plan (per device and alignment) are made at their first call (host work
// only: no allocation, no synchronisation) and kept for the process, so
// later calls, a CUDA graph's capture among them, only launch; a failed
// plan is not kept, and is tried again.
template <typename T>
cudaError_t lt_matmul(T* C, const T* A, const T* B, const T* R, int M, int N, int K, int batch, void* workspace,
                      cudaStream_t stream) {
  if (M == 0) return cudaSuccess;  // a dynamic m of 0 rows
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return cudaErrorInvalidDevice;
  const uintptr_t es = sizeof(T);
  const T* const Cin = R != nullptr ? R : C;
  const uint32_t align = lt_align({reinterpret_cast<uintptr_t>(A), reinterpret_cast<uintptr_t>(B),
                                   reinterpret_cast<uintptr_t>(C), reinterpret_cast<uintptr_t>(Cin),
                                   batch > 1 ? es * M * K : 256, batch > 1 ? es * K * N : 256,
                                   batch > 1 ? es * M * N : 256});
  static std::map<std::tuple<int, int, int, int, int, int, uint32_t>, LtPlan> plans;
  LtPlan p;
  cublasLtHandle_t handle;
  {
    std::lock_guard<std::mutex> lock(lt_mutex());
    handle = lt_handle(device);
    if (handle == nullptr) return cudaErrorNotSupported;
    const auto key = std::make_tuple(device, static_cast<int>(lt_type<T>()), M, N, K, batch, align);
    auto it = plans.find(key);
    if (it == plans.end()) {
      p = lt_plan(handle, lt_type<T>(), M, N, K, batch, align);
      if (p.status != CUBLAS_STATUS_SUCCESS) return lt_error(p.status);
      it = plans.emplace(key, p).first;
    }
    p = it->second;
  }
  const float one = 1.0f, zero = 0.0f;
  return lt_error(cublasLtMatmul(handle, p.desc, &one, B, p.a, A, p.b, R != nullptr ? &one : &zero, Cin, p.c, C, p.c,
                                 &p.algo, workspace, LtWorkspaceBytes, stream));
}

}  // namespace mirage
#endif  // MIRAGE_CUBLASLT
