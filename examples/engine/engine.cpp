// engine.cpp: a decode loop as an inference engine runs one, over a layer
// that mirage superopt --dynamic emitted (NAME.cu, NAME.h).
//
// The engine allocates every buffer once, for the most rows the layer takes
// (M_MAX), uploads the weights once, and then, step after step, calls the
// one entry point with however many tokens that step brings: m changes at
// every call, and the tensors hold exactly m rows (no padding).
//
// Build (NAME is the layer's name, as in mirage_NAME):
//   GPU:      nvcc -O2 -arch=sm_90 -DMIRAGE_PROGRAM=NAME -include NAME.h engine.cpp NAME.cu -o engine
//             (and -lcublasLt where NAME.h says to link it)
//   emulator: g++ -std=c++17 -O1 -DMIRAGE_EMULATE -Iemu -I. -DMIRAGE_PROGRAM=NAME
//             -include NAME.h -x c++ engine.cpp NAME.cu -o engine
// Run:
//   engine INPUTS REFERENCE M1 M2 ...
// INPUTS holds every input at M_MAX rows (float32, in order); step s runs
// on the first Ms rows of the dynamic inputs. REFERENCE holds, step after
// step, the outputs expected at that m (float32, in order). Each step's
// outputs must agree within 2e-2 of the largest |expected| value, and the
// rows past m of the output buffers must be untouched. Exit 0 when every
// step does, 1 otherwise, 2 for bad arguments or files.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#ifndef MIRAGE_PROGRAM
#error "build with -DMIRAGE_PROGRAM=NAME -include NAME.h"
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAMED(suffix) CAT(CAT(mirage_, MIRAGE_PROGRAM), suffix)
#define ENTRY CAT(mirage_, MIRAGE_PROGRAM)
#define WORKSPACE NAMED(_workspace_bytes)
#define TENSORS NAMED(_tensors)
#define M_RANGE NAMED(_m_range)
#define IN_OUT NAMED(_inputs_outputs)

namespace {

// The header's table: per input, then per output, {element bytes, elements
// per row of m (0: no m), elements at any m (0: it has m), element type
// (MIRAGE_DTYPE_*)}.
constexpr int kTensors = sizeof(TENSORS) / sizeof(TENSORS[0]);

long long elements(int t, long long m) { return TENSORS[t][1] ? TENSORS[t][1] * m : TENSORS[t][2]; }

// to_device converts float32 values to the tensor's element type.
std::vector<unsigned char> to_device(int t, const float* x, long long n) {
  const long long size = TENSORS[t][0];
  std::vector<unsigned char> out(n * size);
  for (long long i = 0; i < n; i++) {
    switch (TENSORS[t][3]) {
      case MIRAGE_DTYPE_FLOAT32:
        std::memcpy(&out[i * 4], &x[i], 4);
        break;
      case MIRAGE_DTYPE_BFLOAT16: {
        __nv_bfloat16 b = __float2bfloat16_rn(x[i]);
        std::memcpy(&out[i * 2], &b, 2);
        break;
      }
      default: {
        __half h = __float2half_rn(x[i]);
        std::memcpy(&out[i * 2], &h, 2);
      }
    }
  }
  return out;
}

float from_device(int t, const unsigned char* p, long long i) {
  switch (TENSORS[t][3]) {
    case MIRAGE_DTYPE_FLOAT32: {
      float f;
      std::memcpy(&f, p + i * 4, 4);
      return f;
    }
    case MIRAGE_DTYPE_BFLOAT16: {
      __nv_bfloat16 b;
      std::memcpy(&b, p + i * 2, 2);
      return __bfloat162float(b);
    }
    default: {
      __half h;
      std::memcpy(&h, p + i * 2, 2);
      return __half2float(h);
    }
  }
}

bool check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) std::fprintf(stderr, "engine: %s: %s\n", what, cudaGetErrorString(err));
  return err == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: engine INPUTS REFERENCE M1 M2 ...\n");
    return 2;
  }
  // The header's constants: the inputs come first in the table.
  const int n_inputs = IN_OUT[0];
  const long long m_min = M_RANGE[0], m_max = M_RANGE[1];

  // Allocate once, for m_max rows; upload every input once (an engine's
  // weights stay; its activations are rewritten per step, here the first m
  // rows of the same data).
  FILE* in = std::fopen(argv[1], "rb");
  FILE* ref = std::fopen(argv[2], "rb");
  if (!in || !ref) {
    std::fprintf(stderr, "engine: cannot open %s or %s\n", argv[1], argv[2]);
    return 2;
  }
  std::vector<void*> dev(kTensors);
  for (int t = 0; t < kTensors; t++) {
    const long long n = elements(t, m_max);
    if (!check(cudaMalloc(&dev[t], n * TENSORS[t][0]), "cudaMalloc")) return 2;
    if (t < n_inputs) {
      std::vector<float> x(n);
      if (std::fread(x.data(), 4, n, in) != static_cast<size_t>(n)) {
        std::fprintf(stderr, "engine: %s is too short\n", argv[1]);
        return 2;
      }
      std::vector<unsigned char> d = to_device(t, x.data(), n);
      if (!check(cudaMemcpy(dev[t], d.data(), d.size(), cudaMemcpyHostToDevice), "cudaMemcpy")) return 2;
    }
  }
  size_t ws_bytes = 0;
  for (long long m = m_min; m <= m_max; m++) ws_bytes = ws_bytes > WORKSPACE(m) ? ws_bytes : WORKSPACE(m);
  void* ws = nullptr;
  if (ws_bytes && !check(cudaMalloc(&ws, ws_bytes), "cudaMalloc")) return 2;
  cudaStream_t stream;
  if (!check(cudaStreamCreate(&stream), "cudaStreamCreate")) return 2;
  std::vector<const void*> inputs(dev.begin(), dev.begin() + n_inputs);
  std::vector<void*> outputs(dev.begin() + n_inputs, dev.end());

  int failed = 0;
  for (int s = 3; s < argc; s++) {
    const long long m = std::atoll(argv[s]);
    // Poison the outputs: a row past m that changes was written.
    for (int t = n_inputs; t < kTensors; t++) cudaMemset(dev[t], 0xff, elements(t, m_max) * TENSORS[t][0]);
#ifdef MIRAGE_EMULATE
    // In the emulator, the rows past m are out of bounds for this step, as
    // they are for a caller that allocated exactly m rows: a kernel that
    // touches one fails the program.
    if (m >= m_min && m <= m_max) {
      for (int t = 0; t < kTensors; t++) {
        if (TENSORS[t][1] == 0) continue;
        const long long row = TENSORS[t][1] * TENSORS[t][0];
        mirage_emu::fence(static_cast<unsigned char*>(dev[t]) + m * row, (m_max - m) * row);
      }
    }
#endif
#ifndef MIRAGE_EMULATE
    // On a GPU, the step's time: a first call (warm-up), then the timed one.
    cudaEvent_t t0, t1;
    float ms = 0;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    ENTRY(outputs.data(), inputs.data(), m, ws, stream);
    cudaEventRecord(t0, stream);
#endif
    cudaError_t err = ENTRY(outputs.data(), inputs.data(), m, ws, stream);
#ifdef MIRAGE_EMULATE
    mirage_emu::unfence();
#else
    cudaEventRecord(t1, stream);
    cudaEventSynchronize(t1);
    cudaEventElapsedTime(&ms, t0, t1);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
#endif
    if (m < m_min || m > m_max) {
      // Outside the range: an error code and no launch.
      std::printf("m=%lld: outside %lld..%lld: %s\n", m, m_min, m_max, err == cudaSuccess ? "accepted (wrong)" : "refused");
      std::fflush(stdout);
      failed += err == cudaSuccess;
      continue;
    }
    if (!check(err, "the entry point") || !check(cudaStreamSynchronize(stream), "the step")) {
      failed++;
      continue;
    }
    // As enginerun's compare: the largest error relative to the largest
    // finite |want|; a non-finite value where the reference has a finite
    // one (a NaN the poison left unwritten), or the reverse, fails.
    double worst = 0;
    bool past = false, nonfinite = false;
    for (int t = n_inputs; t < kTensors; t++) {
      const long long n = elements(t, m), all = elements(t, m_max);
      std::vector<unsigned char> got(all * TENSORS[t][0]);
      cudaMemcpy(got.data(), dev[t], got.size(), cudaMemcpyDeviceToHost);
      std::vector<float> want(n);
      if (std::fread(want.data(), 4, n, ref) != static_cast<size_t>(n)) {
        std::fprintf(stderr, "engine: %s is too short\n", argv[2]);
        return 2;
      }
      double scale = 0, err_max = 0;
      for (long long i = 0; i < n; i++)
        if (std::isfinite(want[i])) scale = std::fmax(scale, std::fabs(want[i]));
      for (long long i = 0; i < n; i++) {
        const double g = from_device(t, got.data(), i), w = want[i];
        if (!std::isfinite(w) || !std::isfinite(g)) {
          nonfinite |= std::isfinite(w) != std::isfinite(g);
          continue;
        }
        err_max = std::fmax(err_max, std::fabs(g - w));
      }
      worst = std::fmax(worst, scale > 0 ? err_max / scale : err_max);
      for (long long b = n * TENSORS[t][0]; b < all * TENSORS[t][0]; b++) past |= got[b] != 0xff;
    }
    const bool ok = worst <= 2e-2 && !past && !nonfinite;
    char timing[64] = "";
#ifndef MIRAGE_EMULATE
    std::snprintf(timing, sizeof timing, ", %.1f us", ms * 1000.0f);
#endif
    std::printf("m=%lld: error %.3g of max |want|%s%s%s: %s\n", m, worst, nonfinite ? ", non-finite values where finite ones belong" : "",
                past ? ", rows past m written" : "", timing, ok ? "ok" : "FAILED");
    std::fflush(stdout);  // the steps so far stay reported if a later one aborts
    failed += !ok;
  }
  cudaStreamDestroy(stream);
  for (void* p : dev) cudaFree(p);
  if (ws) cudaFree(ws);
  return failed ? 1 : 0;
}
