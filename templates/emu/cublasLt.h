// cublasLt.h for mirage's CPU emulator: the few cuBLASLt entry points that
// mirage_runtime.cuh's lt_matmul calls, with the library's signatures,
// computing on the CPU what the library computes on a GPU:
//
//   D = alpha · A · B + beta · C
//
// for column-major layouts (rows, cols, leading dimension, strided batches),
// no transposes, fp16/bf16/fp32 storage and fp32 accumulation, each sum
// taken in order of k and rounded once to D's type. It checks what the
// library checks and mirage relies on: operands' shapes agree, the
// workspace is as large as the chosen algorithm needs, and pointers are
// aligned as the preference promised. Streams run in order on the host, as
// the emulator's kernels do.
#ifndef MIRAGE_EMU_CUBLASLT_H
#define MIRAGE_EMU_CUBLASLT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType_t;
typedef cudaDataType_t cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;

typedef enum {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
} cublasLtMatrixLayoutAttribute_t;

typedef enum {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
} cublasLtMatmulPreferenceAttributes_t;

struct mirage_emu_lt_context {};
struct mirage_emu_lt_desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
};
struct mirage_emu_lt_layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int64_t stride;
};
struct mirage_emu_lt_pref {
  uint64_t workspace;
  uint32_t align[4];  // A, B, C, D
};
typedef mirage_emu_lt_context* cublasLtHandle_t;
typedef mirage_emu_lt_desc* cublasLtMatmulDesc_t;
typedef mirage_emu_lt_layout* cublasLtMatrixLayout_t;
typedef mirage_emu_lt_pref* cublasLtMatmulPreference_t;

typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

namespace mirage_emu {

// lt_workspace is what the emulated algorithm asks of the workspace: a
// split-K GEMM's partial sums (4 splits of fp32), as the library's skinny
// GEMMs need, so that a caller who gives less than it promised is caught;
// where they would not fit in what the preference allows, the library has
// kernels that need none, and so does the emulator.
inline size_t lt_workspace(const mirage_emu_lt_layout& d, uint64_t allowed) {
  const size_t split = d.rows * d.cols * 4 * 4;
  return split <= allowed ? split : 0;
}

inline float lt_load(const void* p, cudaDataType_t t, size_t i) {
  switch (t) {
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

inline void lt_store(void* p, cudaDataType_t t, size_t i, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

inline bool lt_type_ok(cudaDataType_t t) { return t == CUDA_R_16F || t == CUDA_R_16BF || t == CUDA_R_32F; }

inline size_t lt_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

}  // namespace mirage_emu

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  if (h == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  static mirage_emu_lt_context ctx;
  *h = &ctx;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }

inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                               cudaDataType_t scale) {
  if (d == nullptr || compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  *d = new mirage_emu_lt_desc{compute, scale};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType t, uint64_t rows,
                                                 uint64_t cols, int64_t ld) {
  if (l == nullptr || !mirage_emu::lt_type_ok(t) || ld < static_cast<int64_t>(rows)) return CUBLAS_STATUS_INVALID_VALUE;
  *l = new mirage_emu_lt_layout{t, rows, cols, ld, 1, 0};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a,
                                                       const void* buf, size_t n) {
  if (l == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      if (n != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&l->batch, buf, n);
      return l->batch >= 1 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      if (n != sizeof(int64_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&l->stride, buf, n);
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *p = new mirage_emu_lt_pref{0, {256, 256, 256, 256}};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a, const void* buf,
                                                           size_t n) {
  if (p == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    if (n != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p->workspace, buf, n);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
    if (n != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, n);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

// The emulated heuristic has one algorithm; its descriptor records the
// workspace it needs and the alignment it was chosen for.
inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                                     cublasLtMatmulPreference_t p, int requested,
                                                     cublasLtMatmulHeuristicResult_t* results, int* found) {
  if (h == nullptr || d == nullptr || a == nullptr || b == nullptr || c == nullptr || dd == nullptr || p == nullptr ||
      requested <= 0 || results == nullptr || found == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  *found = 0;
  if (a->rows != c->rows || b->cols != c->cols || a->cols != b->rows || c->rows != dd->rows || c->cols != dd->cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  const size_t ws = mirage_emu::lt_workspace(*dd, p->workspace);
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = ws;
  for (int i = 0; i < 4; ++i) results[0].algo.data[1 + i] = p->align[i];
  results[0].workspaceSize = ws;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* A,
                                     cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b,
                                     const void* beta, const void* C, cublasLtMatrixLayout_t c, void* D,
                                     cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t* algo, void* workspace,
                                     size_t workspaceBytes, cudaStream_t) {
  if (h == nullptr || d == nullptr || alpha == nullptr || beta == nullptr || a == nullptr || b == nullptr ||
      c == nullptr || dd == nullptr || algo == nullptr || A == nullptr || B == nullptr || D == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (a->rows != c->rows || b->cols != c->cols || a->cols != b->rows || c->rows != dd->rows || c->cols != dd->cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  const int32_t batch = dd->batch;
  if (a->batch != batch || b->batch != batch || c->batch != batch) return CUBLAS_STATUS_INVALID_VALUE;
  if (workspaceBytes < algo->data[0] || (algo->data[0] > 0 && workspace == nullptr)) return CUBLAS_STATUS_INVALID_VALUE;
  const void* ptrs[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if (reinterpret_cast<uintptr_t>(ptrs[i]) % algo->data[1 + i] != 0) return CUBLAS_STATUS_INVALID_VALUE;
  float al, be;
  std::memcpy(&al, alpha, sizeof al);
  std::memcpy(&be, beta, sizeof be);
  // The workspace is the library's scratch: the emulator spoils what it
  // was given, so that a caller relying on its contents shows.
  if (workspace != nullptr) std::memset(workspace, 0xff, algo->data[0]);
  const uint64_t M = dd->rows, N = dd->cols, K = a->cols;
  for (int32_t q = 0; q < batch; ++q)
    for (uint64_t j = 0; j < N; ++j)
      for (uint64_t i = 0; i < M; ++i) {
        float s = 0.0f;
        for (uint64_t k = 0; k < K; ++k)
          s += mirage_emu::lt_load(A, a->type, q * a->stride + k * a->ld + i) *
               mirage_emu::lt_load(B, b->type, q * b->stride + j * b->ld + k);
        float v = al * s;
        if (be != 0.0f) v += be * mirage_emu::lt_load(C, c->type, q * c->stride + j * c->ld + i);
        mirage_emu::lt_store(D, dd->type, q * dd->stride + j * dd->ld + i, v);
      }
  return CUBLAS_STATUS_SUCCESS;
}

#endif  // MIRAGE_EMU_CUBLASLT_H
