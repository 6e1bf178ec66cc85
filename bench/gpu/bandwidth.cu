// bench/gpu/bandwidth.cu: how fast grids of a given size read device memory.
//
// The cost model gives a wave on n SMs min(1, n / (SMs · memSaturation)) of
// the HBM bandwidth (memSaturation 0.5: an SM with its loads in flight
// draws about twice its even share), and each SM at most SMBandwidth
// (98 GB/s); so it ranks kernels on half the SMs beside, or above, kernels
// that fill the GPU. Nothing measured that directly. This probe does: each
// of `blocks` blocks (at most one an SM when blocks <= SMs) of `threads`
// threads streams through a buffer far larger than L2, every thread with
// `unroll` 16-byte cp.async copies in flight (a pipeline as deep), and the
// median of many timed runs gives GB/s per (blocks, threads, unroll).
//
// A second sweep measures what re-reads cost: the model's blockTime
// charges a byte that a block re-reads from L2 (the activation every block
// of a matmul reads, K and V tiles shared by a group's blocks) as much of
// the block's time as a byte from device memory, while the wave's memory
// time charges it at L2's rate. Which is right decides between a matmul on
// half the SMs and one on all of them that re-reads its activation twice
// as often (gated_mlp: 64 blocks or 128), and much of attention's
// estimate. Grids of half the SMs and of all of them read the buffer
// again, and beside it, of every 8 copies, 0 to 6 from a region of
// 64 KiB or 1 MiB that every block reads; the probe prints what a
// re-read byte adds to the time over what a byte of the buffer takes.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I templates bench/gpu/bandwidth.cu -o bandwidth
//   ./bandwidth [--mib N] [--runs R] [--json FILE] [--sms N]
//
// --sms plans the grids for N SMs instead of the device's (the emulator's
// tests, which cannot run 8 waves of an H100's 132).
//
// Each run also XORs the words it read; the probe checks them against the
// host's XOR of the buffer, so a grid that skipped part of it fails rather
// than reports a bandwidth it never reached. It builds for mirage's CPU
// emulator as well (g++ -DMIRAGE_EMULATE -I templates/emu -I templates),
// where its tests run it on a small buffer.
#include "mirage_runtime.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Quad is the 16 bytes a thread copies at once.
struct alignas(16) Quad {
  unsigned x, y, z, w;
};

// stream_read XORs every 32-bit word of p[0, n) into out, a word per
// thread: thread t reads vectors t, t + S, t + 2S, ... (S the grid's
// threads) through a U-deep cp.async pipeline of its own (U 16-byte
// slots in shared memory, slot u of every thread side by side), as the
// emitted kernels fetch their tiles: U copies stay in flight, for the
// copy into a slot is issued as soon as the thread has read the slot's
// last one. (Plain loads cannot be held in flight so: ptxas issues the
// XOR of the first as soon as the loop's fourth load or so.)
template <int U>
__global__ void __launch_bounds__(512) stream_read(const Quad* __restrict__ p, long long n, unsigned* __restrict__ out) {
  MIRAGE_DYNAMIC_SMEM(smem);
  Quad* const ring = reinterpret_cast<Quad*>(smem) + threadIdx.x;
  const int step = blockDim.x;  // from one slot of a thread to its next
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  long long next = t;  // the next vector to fetch
#pragma unroll
  for (int u = 0; u < U; ++u, next += stride) {
    if (next < n) mirage::cp_async<16>(ring + u * step, p + next);
    mirage::cp_async_commit();
  }
  unsigned acc = 0;
  int u = 0;
  for (long long i = t; i < n; i += stride, next += stride) {
    mirage::cp_async_wait<U - 1>();  // the copy into slot u is done
    const Quad v = MIRAGE_LDS(ring[u * step]);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
    if (next < n) mirage::cp_async<16>(ring + u * step, p + next);
    mirage::cp_async_commit();  // empty at the end: every thread counts the same groups
    u = u + 1 == U ? 0 : u + 1;
  }
  MIRAGE_STG(out[t]) = acc;
}

// shared_read is stream_read with part of every block's copies taken
// from s[0, ns), a region every block reads, cycled through (an
// activation that every block of a matmul reads beside its own columns of
// the weights, or K and V tiles that a group's blocks share): of every 8
// copies a thread issues, the first `eighths` come from s and the rest
// from its share of p, which it still reads whole, once. The XOR of p's
// words goes to out, checked as stream_read's; that of s's to shared_out,
// unchecked (it only keeps the reads).
template <int U>
__global__ void __launch_bounds__(512) shared_read(const Quad* __restrict__ p, long long n, const Quad* __restrict__ s, int ns, int eighths,
                                                   unsigned* __restrict__ out, unsigned* __restrict__ shared_out) {
  MIRAGE_DYNAMIC_SMEM(smem);
  Quad* const ring = reinterpret_cast<Quad*>(smem) + threadIdx.x;
  const int step = blockDim.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long own = t < n ? (n - 1 - t) / stride + 1 : 0;  // this thread's vectors of p
  const int per = 8 - eighths;                                  // of p, in a group of 8 copies
  const long long copies = own / per * 8 + (own % per ? eighths + own % per : 0);
  long long nextP = t;
  int nextS = static_cast<int>(threadIdx.x % ns);
  auto issue = [&](long long k, Quad* slot) {
    if (k >= copies) return;
    if (k % 8 < eighths) {
      mirage::cp_async<16>(slot, s + nextS);
      nextS = (nextS + blockDim.x) % ns;
    } else {
      mirage::cp_async<16>(slot, p + nextP);
      nextP += stride;
    }
  };
#pragma unroll
  for (int u = 0; u < U; ++u) {
    issue(u, ring + u * step);
    mirage::cp_async_commit();
  }
  unsigned acc = 0, accS = 0;
  int u = 0;
  for (long long k = 0; k < copies; ++k) {
    mirage::cp_async_wait<U - 1>();
    const Quad v = MIRAGE_LDS(ring[u * step]);
    if (k % 8 < eighths) {
      accS ^= v.x ^ v.y ^ v.z ^ v.w;
    } else {
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    issue(k + U, ring + u * step);
    mirage::cp_async_commit();
    u = u + 1 == U ? 0 : u + 1;
  }
  MIRAGE_STG(out[t]) = acc;
  MIRAGE_STG(shared_out[t]) = accS;
}

// sharedCopies is how many copies shared_read's threads take from s, in all.
long long sharedCopies(int blocks, int threads, long long n, int eighths) {
  const long long stride = static_cast<long long>(blocks) * threads;
  long long all = 0;
  for (long long t = 0; t < stride && t < n; ++t) {
    const long long own = (n - 1 - t) / stride + 1;
    const int per = 8 - eighths;
    all += own / per * eighths + (own % per ? eighths : 0);
  }
  return all;
}

// The shared sweep's block size and pipeline depth: the emitted matmul
// kernels' (512 threads, several 16-byte copies a thread each iteration).
constexpr int sharedThreads = 512, sharedUnroll = 8;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bandwidth: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <int U> cudaError_t launchU(int blocks, int threads, const Quad* p, long long n, unsigned* out) {
  const int smem = threads * U * static_cast<int>(sizeof(Quad));
  cudaError_t e = cudaFuncSetAttribute(stream_read<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  return mirage::launch(stream_read<U>, dim3(blocks), dim3(threads), smem, nullptr, p, n, out);
}

cudaError_t launch(int unroll, int blocks, int threads, const Quad* p, long long n, unsigned* out) {
  switch (unroll) {
  case 1: return launchU<1>(blocks, threads, p, n, out);
  case 4: return launchU<4>(blocks, threads, p, n, out);
  case 8: return launchU<8>(blocks, threads, p, n, out);
  case 16: return launchU<16>(blocks, threads, p, n, out);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launchShared(int blocks, int threads, const Quad* p, long long n, const Quad* s, int ns, int eighths, unsigned* out,
                         unsigned* sharedOut) {
  constexpr int U = sharedUnroll;
  const int smem = threads * U * static_cast<int>(sizeof(Quad));
  cudaError_t e = cudaFuncSetAttribute(shared_read<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  return mirage::launch(shared_read<U>, dim3(blocks), dim3(threads), smem, nullptr, p, n, s, ns, eighths, out, sharedOut);
}

}  // namespace

int main(int argc, char** argv) {
  long long mib = 512;
  int runs = 10, sms = 0;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) {
      mib = std::atoll(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--sms" && i + 1 < argc) {
      sms = std::atoi(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: bandwidth [--mib N] [--runs R] [--json FILE] [--sms N]\n"
                  "Reads an N MiB buffer (default 512) with grids of an eighth of the SMs to 8 waves,\n"
                  "128-512 threads a block, 1-16 16-byte cp.async copies in flight a thread; prints GB/s,\n"
                  "the median of R timed runs (default 10) each, and writes them to FILE as JSON.\n"
                  "Then grids of half the SMs and all of them read it again with 1/8 to 3/4 of their\n"
                  "copies taken from a 64 KiB or 1 MiB region every block reads, and print what a\n"
                  "re-read byte costs over a byte of the buffer (1: as much; 0: nothing).\n"
                  "--sms plans the grids for N SMs instead of the device's.\n");
      return 0;
    } else {
      std::fprintf(stderr, "usage: bandwidth [--mib N] [--runs R] [--json FILE] [--sms N]\n");
      return 2;
    }
  }
  if (mib < 1 || runs < 1 || sms < 0) {
    std::fprintf(stderr, "bandwidth: --mib and --runs must be at least 1, --sms at least 0\n");
    return 2;
  }
  if (sms == 0) check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  const long long n = mib * (1 << 20) / 16;  // vectors
  std::vector<unsigned> host(static_cast<size_t>(n) * 4);
  unsigned want = 0, x = 2463534242u;
  for (auto& w : host) {  // xorshift32: words the probe cannot guess
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    w = x, want ^= x;
  }
  Quad* p = nullptr;
  unsigned* out = nullptr;
  const int maxBlocks = 8 * sms, maxThreads = 512;
  check(cudaMalloc(reinterpret_cast<void**>(&p), n * 16), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(unsigned) * maxBlocks * maxThreads), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), n * 16, cudaMemcpyHostToDevice), "cudaMemcpy");
  std::vector<unsigned> got(static_cast<size_t>(maxBlocks) * maxThreads);
  cudaEvent_t start, end;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  // median times runs of run (after two to warm up), in ms.
  auto median = [&](auto&& run) {
    std::vector<float> ms;
    for (int r = 0; r < runs + 2; ++r) {
      check(cudaEventRecord(start), "cudaEventRecord");
      check(run(), "launch");
      check(cudaEventRecord(end), "cudaEventRecord");
      check(cudaEventSynchronize(end), "cudaEventSynchronize");
      float t = 0;
      check(cudaEventElapsedTime(&t, start, end), "cudaEventElapsedTime");
      if (r >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[ms.size() / 2]);
  };
  // readAll checks that the grid's threads read the whole buffer.
  auto readAll = [&](size_t words, const char* what, int blocks, int threads, int unroll) {
    check(cudaMemcpy(got.data(), out, sizeof(unsigned) * words, cudaMemcpyDeviceToHost), "cudaMemcpy");
    unsigned sum = 0;
    for (size_t i = 0; i < words; ++i) sum ^= got[i];
    if (sum != want) {
      std::fprintf(stderr, "bandwidth: %s%d blocks of %d threads, unroll %d: read XOR %08x, want %08x\n", what, blocks, threads, unroll, sum,
                   want);
      std::exit(1);
    }
  };

  // Grids from an eighth of the SMs to 8 waves' worth, around the half
  // (the model's saturation point) and the whole.
  std::vector<int> grids;
  for (int g : {sms / 8, sms / 4, sms / 3, sms / 2, 2 * sms / 3, 3 * sms / 4, 9 * sms / 10, sms, 2 * sms, 4 * sms, 8 * sms})
    if (g >= 1 && (grids.empty() || grids.back() != g)) grids.push_back(g);
  FILE* js = json ? std::fopen(json, "w") : nullptr;
  if (json && !js) {
    std::fprintf(stderr, "bandwidth: cannot write %s\n", json);
    return 1;
  }
  if (js) std::fprintf(js, "{\"sms\": %d, \"bytes\": %lld, \"runs\": %d, \"results\": [", sms, n * 16, runs);
  std::printf("%d SMs; %lld MiB read %d times a grid (median)\n", sms, mib, runs);
  std::printf("%7s %7s %6s %13s %9s\n", "blocks", "threads", "unroll", "KiB/SM flight", "GB/s");
  bool first = true;
  for (int threads : {128, 256, 512}) {
    for (int unroll : {1, 4, 8, 16}) {
      for (int blocks : grids) {
        const double med = median([&] { return launch(unroll, blocks, threads, p, n, out); });
        readAll(static_cast<size_t>(blocks) * threads, "", blocks, threads, unroll);
        const double gbs = med > 0 ? n * 16 / (med * 1e-3) / 1e9 : 0;
        // The copies in flight on the busiest SM: its blocks spread
        // evenly, as many resident as 2048 threads and 228 KiB of shared
        // memory (1 KiB of it the system's per block) hold (sm_90).
        const int smem = threads * unroll * 16;
        const int perSM = std::min({(blocks + sms - 1) / sms, 2048 / threads, 233472 / (smem + 1024)});
        const double flight = perSM * smem / 1024.0;
        std::printf("%7d %7d %6d %13.0f %9.0f\n", blocks, threads, unroll, flight, gbs);
        if (js) {
          std::fprintf(js, "%s\n  {\"blocks\": %d, \"threads\": %d, \"unroll\": %d, \"median_ms\": %.6f, \"gb_per_s\": %.1f}",
                       first ? "" : ",", blocks, threads, unroll, med, gbs);
          first = false;
        }
      }
    }
  }

  // Shared reads: grids of half the SMs and of all of them, each block
  // reading the whole buffer's share as above and, of every 8 copies, 0,
  // 1, 2, 4 or 6 from a region of 64 KiB or 1 MiB that every block reads
  // (L2 holds it after the first). reread_cost is what a byte of those
  // re-reads adds to the time, over what a byte of the buffer takes
  // alone: 1 if re-reads cost as much as device memory (the model's
  // blockTime charges them so), about MemBandwidth / L2Bandwidth (0.29 on
  // an H100) if they come at L2's rate, 0 if they are free.
  if (js) std::fprintf(js, "\n], \"shared\": [");
  std::printf("\nre-reads of a region every block reads (%d threads, unroll %d)\n", sharedThreads, sharedUnroll);
  std::printf("%7s %7s %10s %8s %10s %10s %12s\n", "blocks", "shared", "region KiB", "ms", "own GB/s", "all GB/s", "re-read cost");
  const long long regionMax = std::min<long long>(n, (1 << 20) / 16);
  std::vector<unsigned> region(static_cast<size_t>(regionMax) * 4);
  for (auto& w : region) x ^= x << 13, x ^= x >> 17, x ^= x << 5, w = x;
  Quad* s = nullptr;
  unsigned* sharedOut = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&s), regionMax * 16), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&sharedOut), sizeof(unsigned) * maxBlocks * maxThreads), "cudaMalloc");
  check(cudaMemcpy(s, region.data(), regionMax * 16, cudaMemcpyHostToDevice), "cudaMemcpy");
  first = true;
  for (int blocks : {std::max(1, sms / 2), sms}) {
    for (long long kib : {64LL, 1024LL}) {
      const int ns = static_cast<int>(std::min(regionMax, kib * 1024 / 16));
      double alone = 0;  // the time with no re-reads
      for (int eighths : {0, 1, 2, 4, 6}) {
        const double med = median([&] { return launchShared(blocks, sharedThreads, p, n, s, ns, eighths, out, sharedOut); });
        readAll(static_cast<size_t>(blocks) * sharedThreads, "shared reads: ", blocks, sharedThreads, sharedUnroll);
        const long long reread = sharedCopies(blocks, sharedThreads, n, eighths) * 16;
        if (eighths == 0) alone = med;
        const double own = med > 0 ? n * 16 / (med * 1e-3) / 1e9 : 0;
        const double all = med > 0 ? (n * 16 + reread) / (med * 1e-3) / 1e9 : 0;
        const double cost = reread > 0 && alone > 0 ? ((med - alone) / reread) / (alone / (n * 16)) : 0;
        std::printf("%7d %6d%% %10lld %8.3f %10.0f %10.0f %12.2f\n", blocks, eighths * 100 / 8, ns * 16LL / 1024, med, own, all, cost);
        if (js) {
          std::fprintf(js,
                       "%s\n  {\"blocks\": %d, \"threads\": %d, \"unroll\": %d, \"shared_eighths\": %d, \"region_bytes\": %d, "
                       "\"reread_bytes\": %lld, \"median_ms\": %.6f, \"own_gb_per_s\": %.1f, \"all_gb_per_s\": %.1f, \"reread_cost\": %.3f}",
                       first ? "" : ",", blocks, sharedThreads, sharedUnroll, eighths, ns * 16, reread, med, own, all, cost);
          first = false;
        }
      }
    }
  }
  if (js) {
    std::fprintf(js, "\n]}\n");
    std::fclose(js);
  }
  cudaFree(s);
  cudaFree(sharedOut);
  cudaFree(p);
  cudaFree(out);
  return 0;
}
