// cuda_runtime.h for mirage's CPU emulator: a stand-in for the CUDA runtime
// under which the code mirage emits compiles with a host C++17 compiler and
// runs on the CPU, so that tests can check it against the float64
// interpreter on a machine without a GPU. Build with
//
//   g++ -std=c++17 -DMIRAGE_EMULATE -I<dir of this file> ... NAME.cu
//
// Blocks run one after another. Each CUDA thread of a block is a coroutine
// (ucontext) on the one OS thread; __syncthreads and the warp collectives
// (shuffles, ldmatrix, mma.sync) switch between them. The collectives follow
// the PTX ISA's fragment layouts, written here independently of the runtime's
// use of them. What the emulator checks, aborting with a message:
//   - barrier divergence and deadlock (threads that wait forever),
//   - warp collectives called by fewer than 32 lanes,
//   - dynamic shared memory over the kernel's limit (48 KiB unless raised
//     with cudaFuncSetAttribute), as a launch error,
//   - reads of shared memory nobody wrote: it starts filled with 0xff bytes
//     (NaN in every float type), which poisons the outputs.
// Environment: MIRAGE_EMU_ORDER=forward|reverse|greedy|greedy-reverse|random
// (which thread runs next when one blocks; races show up as different or
// NaN outputs, see run_block), and
// MIRAGE_EMU_CPASYNC=lazy|eager (cp.async copies land at the wait, or at
// once), and MIRAGE_EMU_COUNTERS=FILE (count each launch's memory accesses
// and append them to FILE; see "access counters" below).
#ifndef MIRAGE_EMU_CUDA_RUNTIME_H
#define MIRAGE_EMU_CUDA_RUNTIME_H

#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__ __restrict

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x, y, z;
};
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorLaunchFailure = 719,
  cudaErrorInvalidDevice = 101,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef struct mirage_emu_stream* cudaStream_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };

namespace mirage_emu {

[[noreturn]] inline void fail(const std::string& msg) {
  std::fprintf(stderr, "mirage emulator: %s\n", msg.c_str());
  std::abort();
}

template <typename T> struct is_bf16 : std::false_type {};
template <> struct is_bf16<__nv_bfloat16> : std::true_type {};

struct Copy {
  void* dst;
  const void* src;
  int bytes, src_bytes;
  void run() const {
    std::memcpy(dst, src, src_bytes);
    std::memset(static_cast<char*>(dst) + src_bytes, 0, bytes - src_bytes);
  }
};

enum Wait { Running, AtBlock, AtWarp, Done };

// One lane's access at a site: bytes 0 when the lane skipped it (a
// cp.async that zero-fills), so that its later accesses stay aligned with
// the other lanes'.
struct Access {
  uintptr_t addr;
  uint32_t bytes;
};

// Context switches: a few instructions on x86-64 (callee-saved registers
// and the stack pointer); ucontext elsewhere (much slower: it saves the
// signal mask with a system call).
#if defined(__x86_64__)
extern "C" void mirage_emu_switch(void** save_sp, void* load_sp);
asm(R"(
.text
.weak mirage_emu_switch
.type mirage_emu_switch,@function
mirage_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size mirage_emu_switch, .-mirage_emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");
struct Context {
  void* sp = nullptr;
};
#else
struct Context {
  ucontext_t uc;
};
#endif

struct Thread {
  Context ctx;
  std::vector<char> stack;
  uint3 idx;
  int tid;
  Wait wait = Running;
  unsigned long gen = 0;  // barrier generation waited for
  std::vector<Copy> open;
  std::vector<std::vector<Copy>> groups;
  std::vector<std::vector<Access>> trace;  // per access site, since the last barrier
  bool waited = false;                     // called grid_wait (a dependent launch's threads must first)
};

struct Warp {
  int arrived = 0;
  unsigned long gen = 0;
  // Per-lane slots of a collective, double-buffered by generation parity.
  uint64_t slot[2][32][8];
};

// --- access counters ------------------------------------------------------
//
// Under MIRAGE_EMU_COUNTERS, the runtime's access points (MIRAGE_LDG and
// its kin in mirage_runtime.cuh, cp.async, store2, add2, ldmatrix) record
// each lane's address at each access site. The lanes of a block run one
// after another between barriers, so the warp-level requests are formed
// afterwards: at each barrier and at the block's end, the k-th access of
// site S by each lane of a warp is one request, as the lanes of a warp in
// lockstep issue it. (A lane that skips an access in a divergent branch
// and takes it later would be paired with the wrong instance; the emitted
// code's guards skip trailing accesses only.)
//
// A global request moves the distinct 32-byte sectors its lanes touch, as
// DRAM serves them with no L2 (a load re-reading a sector in a later
// request counts again). Sectors are attributed to the device buffers
// that the caller named (name_buffer). Each buffer also counts its
// distinct sectors over the launch: what DRAM would move if an L2 kept
// every sector the launch touches, so that a re-read (requested twice,
// distinct once) shows as such. A shared request is served in
// phases (all 32 lanes for accesses of up to 4 bytes, half-warps for 8,
// quarter-warps for 16, a matrix per phase for ldmatrix); a phase whose
// lanes touch n distinct 4-byte words in one of the 32 banks takes n
// wavefronts, and conflicts are the wavefronts past one per phase.

enum Space : uint8_t { GlobalMem, SharedMem };
enum Dir : uint8_t { Load, Store };

struct Site {
  Space space;
  Dir dir;
};

struct Traffic {
  uint64_t requests = 0, sectors = 0, used = 0;  // used: distinct bytes the lanes asked for
  uint64_t distinct = 0;                         // distinct sectors over the launch
  std::vector<uint64_t> seen;                    // a bit per sector of the buffer: touched this launch
  uintptr_t nsectors = 0;                        // the sectors holding the buffer's bytes
};

struct Buffer {
  uintptr_t lo, hi;
  std::string name;
};

struct Counters {
  bool on = false;
  std::string path;
  std::vector<Site> sites;                           // by site id
  std::vector<int> by_counter;                       // __COUNTER__ * 2 + store -> site id + 1
  std::map<std::tuple<const char*, int, int>, int> by_line;  // (file, line, space * 2 + dir) -> site id
  std::vector<Buffer> buffers;                       // sorted by lo
  // This launch: per buffer, and last for addresses in none.
  std::vector<Traffic> load, store;
  uint64_t shared_requests = 0, shared_wavefronts = 0, shared_phases = 0, cp_async_bytes = 0;
  int launches = 0;
};

struct State {
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  int nthreads = 0, cur = -1, block_arrived = 0;
  unsigned long block_gen = 0;
  Context sched;
  std::vector<unsigned char> smem;
  uint3 block_idx{0, 0, 0};
  dim3 block_dim, grid_dim;
  std::mt19937 rng{12345};
  std::string order = "forward";
  bool lazy = true;
  cudaError_t last = cudaSuccess;
  std::map<const void*, int> max_smem;  // per kernel, raised by cudaFuncSetAttribute
  int lo = 0, hi = 0;                    // the scheduler's bounds on runnable threads
  void (*body)() = nullptr;
  Counters cnt;
  // fences are device memory no access may touch (fence): the rows past m
  // of a dynamic program's tensors, which a caller need not have.
  std::vector<std::pair<uintptr_t, uintptr_t>> fences;
  // dependent says the kernel running was launched dependent
  // (launch_dependent): on a GPU it may start before the kernel before it
  // has finished, so a thread's access to device memory before its
  // grid_wait fails here.
  bool dependent = false;
};

inline State state;
inline State& st() { return state; }
inline Thread& me() { return st().threads[st().cur]; }
inline unsigned char* dynamic_smem() { return st().smem.data(); }

inline void switch_to(Context& from, Context& to) {
#if defined(__x86_64__)
  mirage_emu_switch(&from.sp, to.sp);
#else
  swapcontext(&from.uc, &to.uc);
#endif
}

inline void yield() { switch_to(me().ctx, st().sched); }

// name_buffer names the device buffer [p, p+bytes) in the counters; the
// program that runs the emulated code calls it for its inputs, outputs
// and intermediates before the first launch.
inline void name_buffer(const void* p, size_t bytes, const std::string& name) {
  auto& b = st().cnt.buffers;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  b.push_back(Buffer{lo, lo + bytes, name});
  std::sort(b.begin(), b.end(), [](const Buffer& x, const Buffer& y) { return x.lo < y.lo; });
}

// buffer_of is the index of the named buffer holding addr, or the number
// of buffers when none does.
inline size_t buffer_of(uintptr_t addr) {
  const auto& b = st().cnt.buffers;
  auto it = std::upper_bound(b.begin(), b.end(), addr, [](uintptr_t a, const Buffer& x) { return a < x.lo; });
  if (it != b.begin() && addr < std::prev(it)->hi) return std::prev(it) - b.begin();
  return b.size();
}

inline int new_site(Space space, Dir dir) {
  st().cnt.sites.push_back(Site{space, dir});
  return static_cast<int>(st().cnt.sites.size()) - 1;
}

inline void record(int site, const void* p, uint32_t bytes) {
  auto& tr = me().trace;
  if (static_cast<size_t>(site) >= tr.size()) tr.resize(site + 1);
  tr[site].push_back(Access{reinterpret_cast<uintptr_t>(p), bytes});
}

// traced records an access of sizeof(T) bytes at p by the macro site
// numbered counter (__COUNTER__) and returns p.
// fence makes [p, p+bytes) of device memory out of bounds: an access there
// fails the program (the rows past m that a dynamic program's caller need
// not have allocated). unfence lifts every fence.
inline void fence(const void* p, size_t bytes) {
  if (bytes > 0) st().fences.emplace_back(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + bytes);
}
inline void unfence() { st().fences.clear(); }

inline void check_waited() {
  if (st().dependent && st().cur >= 0 && !me().waited)
    fail("a dependent launch's thread touched device memory before wait_for_prior_grid()");
}

inline void check_fences(const void* p, size_t bytes, Dir dir) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (const auto& f : st().fences) {
    if (a < f.second && a + bytes > f.first)
      fail(std::string(dir == Load ? "a load from" : "a store to") + " fenced device memory (a row past m)");
  }
}

template <typename T> inline T* traced(int counter, Space space, Dir dir, T* p) {
  if (space == GlobalMem) check_waited();
  if (space == GlobalMem && !st().fences.empty()) check_fences(p, sizeof(T), dir);
  Counters& c = st().cnt;
  if (!c.on) return p;
  const size_t key = 2 * static_cast<size_t>(counter) + dir;
  if (key >= c.by_counter.size()) c.by_counter.resize(key + 1, 0);
  if (c.by_counter[key] == 0) c.by_counter[key] = new_site(space, dir) + 1;
  record(c.by_counter[key] - 1, p, sizeof(T));
  return p;
}

// traced_rmw records a load and a store of *p (x += v).
template <typename T> inline T* traced_rmw(int counter, Space space, T* p) {
  traced(counter, space, Load, p);
  return traced(counter, space, Store, p);
}

inline bool in_dynamic_smem(const void* p) {
  const unsigned char* lo = st().smem.data();
  return static_cast<const unsigned char*>(p) >= lo && static_cast<const unsigned char*>(p) < lo + st().smem.size();
}

// traced_line records an access of bytes at p by the function call at
// file:line (the runtime's store2, add2, cp.async), in the space p is in.
inline void traced_line(const char* file, int line, Dir dir, const void* p, uint32_t bytes, Space space) {
  if (space == GlobalMem) check_waited();
  if (space == GlobalMem && !st().fences.empty()) check_fences(p, bytes, dir);
  Counters& c = st().cnt;
  if (!c.on) return;
  auto key = std::make_tuple(file, line, space * 2 + dir);
  auto it = c.by_line.find(key);
  if (it == c.by_line.end()) it = c.by_line.emplace(key, new_site(space, dir)).first;
  record(it->second, p, bytes);
}
inline void traced_line(const char* file, int line, Dir dir, const void* p, uint32_t bytes) {
  traced_line(file, line, dir, p, bytes, in_dynamic_smem(p) ? SharedMem : GlobalMem);
}

// wavefronts is how many wavefronts one phase of a shared request takes:
// the most distinct 4-byte words that its accesses touch in one bank.
inline uint64_t wavefronts(const Access* a, int n) {
  uintptr_t words[32 * 4];
  int m = 0;
  for (int i = 0; i < n; i++)
    for (uintptr_t w = a[i].addr / 4; w <= (a[i].addr + a[i].bytes - 1) / 4 && m < 128; w++) words[m++] = w;
  std::sort(words, words + m);
  m = static_cast<int>(std::unique(words, words + m) - words);
  int per_bank[32] = {};
  int most = 0;
  for (int i = 0; i < m; i++) most = std::max(most, ++per_bank[words[i] % 32]);
  return most;
}

// count_shared counts one warp-level shared request; lane[i] is the lane
// of a[i] (accesses sorted by lane).
inline void count_shared(const Access* a, const int* lane, int n) {
  Counters& c = st().cnt;
  uint32_t width = 0;
  for (int i = 0; i < n; i++) width = std::max(width, a[i].bytes);
  const int per_phase = width <= 4 ? 32 : width <= 8 ? 16 : 8;
  c.shared_requests++;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && lane[j] / per_phase == lane[i] / per_phase) j++;
    c.shared_wavefronts += wavefronts(a + i, j - i);
    c.shared_phases++;
    i = j;
  }
}

// mark counts sector i of a buffer (from the one holding its first byte)
// as touched this launch, once.
inline void mark(Traffic& t, uintptr_t i) {
  if (i >= t.nsectors) return;  // an access running past the buffer's end
  uint64_t& word = t.seen[i / 64];
  const uint64_t bit = uint64_t(1) << (i % 64);
  if (!(word & bit)) {
    word |= bit;
    t.distinct++;
  }
}

// count_global counts one warp-level global request: per buffer it
// touches, one request, its distinct sectors and the distinct bytes used.
inline void count_global(Dir dir, Access* a, int n) {
  Counters& c = st().cnt;
  std::vector<Traffic>& t = dir == Load ? c.load : c.store;
  std::sort(a, a + n, [](const Access& x, const Access& y) { return x.addr < y.addr; });
  // Sorted by address, the sectors and bytes not yet counted are those
  // past the last ones counted.
  bool any = false;
  uintptr_t last_sector = 0, end = 0;
  size_t last_buf = ~size_t(0);
  for (int i = 0; i < n; i++) {
    const size_t b = buffer_of(a[i].addr);
    if (b != last_buf) {
      t[b].requests++;
      last_buf = b;
    }
    const uintptr_t lo = a[i].addr, hi = a[i].addr + a[i].bytes;
    for (uintptr_t s = lo / 32; s <= (hi - 1) / 32; s++)
      if (!any || s > last_sector) {
        t[b].sectors++;
        last_sector = s;
        any = true;
        if (b < c.buffers.size()) mark(t[b], s - c.buffers[b].lo / 32);
      }
    if (hi > end) {
      t[b].used += hi - std::max(lo, end);
      end = hi;
    }
  }
}

// flush_traces forms the warp-level requests from the lanes' traces since
// the last barrier, counts them, and clears the traces.
inline void flush_traces() {
  State& s = st();
  Counters& c = s.cnt;
  if (!c.on) return;
  size_t nsites = 0;
  for (int i = 0; i < s.nthreads; i++) nsites = std::max(nsites, s.threads[i].trace.size());
  Access req[32];
  int lane[32];
  for (size_t site = 0; site < nsites; site++) {
    const Site info = c.sites[site];
    for (int w0 = 0; w0 < s.nthreads; w0 += 32) {
      const int w1 = std::min(s.nthreads, w0 + 32);
      size_t len = 0;
      for (int i = w0; i < w1; i++) {
        const auto& tr = s.threads[i].trace;
        if (site < tr.size()) len = std::max(len, tr[site].size());
      }
      for (size_t k = 0; k < len; k++) {
        int n = 0;
        for (int i = w0; i < w1; i++) {
          const auto& tr = s.threads[i].trace;
          if (site < tr.size() && k < tr[site].size() && tr[site][k].bytes > 0) {
            req[n] = tr[site][k];
            lane[n++] = i - w0;
          }
        }
        if (n == 0) continue;
        if (info.space == SharedMem) {
          count_shared(req, lane, n);
        } else {
          count_global(info.dir, req, n);
        }
      }
    }
  }
  for (int i = 0; i < s.nthreads; i++)
    for (auto& v : s.threads[i].trace) v.clear();
}

inline void json_traffic(FILE* f, const Traffic& t) {
  std::fprintf(f, "[%llu, %llu, %llu, %llu]", static_cast<unsigned long long>(t.requests),
               static_cast<unsigned long long>(t.sectors), static_cast<unsigned long long>(t.used),
               static_cast<unsigned long long>(t.distinct));
}

// write_counters appends this launch's counters to the counters file as a
// line of JSON: {"launch": N, "buffers": [{"name", "load": [requests,
// sectors, used bytes, distinct sectors], "store": [...]}, ...], "shared": [requests,
// wavefronts, phases], "cp_async_bytes": N}; the last buffer, named "",
// holds accesses outside the named ones.
inline void write_counters() {
  Counters& c = st().cnt;
  FILE* f = std::fopen(c.path.c_str(), "a");
  if (!f) fail("cannot open the counters file " + c.path);
  std::fprintf(f, "{\"launch\": %d, \"buffers\": [", c.launches);
  for (size_t b = 0; b < c.load.size(); b++) {
    std::fprintf(f, "%s{\"name\": \"%s\", \"load\": ", b ? ", " : "", b < c.buffers.size() ? c.buffers[b].name.c_str() : "");
    json_traffic(f, c.load[b]);
    std::fprintf(f, ", \"store\": ");
    json_traffic(f, c.store[b]);
    std::fprintf(f, "}");
  }
  std::fprintf(f, "], \"shared\": [%llu, %llu, %llu], \"cp_async_bytes\": %llu}\n",
               static_cast<unsigned long long>(c.shared_requests), static_cast<unsigned long long>(c.shared_wavefronts),
               static_cast<unsigned long long>(c.shared_phases), static_cast<unsigned long long>(c.cp_async_bytes));
  if (std::fclose(f) != 0) fail("cannot write the counters file " + c.path);
  c.launches++;
}

// start_counters resets the counters for a launch.
inline void start_counters() {
  Counters& c = st().cnt;
  const char* path = std::getenv("MIRAGE_EMU_COUNTERS");
  c.on = path && *path;
  if (!c.on) return;
  c.path = path;
  c.load.assign(c.buffers.size() + 1, Traffic{});
  c.store.assign(c.buffers.size() + 1, Traffic{});
  for (size_t b = 0; b < c.buffers.size(); b++) {
    // A bit per sector from the one holding lo to the one holding hi - 1.
    const Buffer& buf = c.buffers[b];
    const uintptr_t sectors = buf.hi > buf.lo ? (buf.hi - 1) / 32 - buf.lo / 32 + 1 : 0;
    for (Traffic* t : {&c.load[b], &c.store[b]}) {
      t->nsectors = sectors;
      t->seen.assign((sectors + 63) / 64, 0);
    }
  }
  c.shared_requests = c.shared_wavefronts = c.shared_phases = c.cp_async_bytes = 0;
}

inline void sync_block() {
  State& s = st();
  Thread& t = me();
  t.wait = AtBlock;
  t.gen = s.block_gen;
  if (++s.block_arrived == s.nthreads) {
    flush_traces();  // every lane's accesses before the barrier are in
    s.block_arrived = 0;
    s.block_gen++;
    s.lo = 0;
    s.hi = s.nthreads - 1;
  }
  while (t.wait == AtBlock && t.gen == s.block_gen) yield();
  t.wait = Running;
}

// warp_collective: every lane of the calling warp deposits n words; when
// all 32 have, the last to arrive runs once(slots) (which may rewrite the
// slots, e.g. with each lane's results) and each lane gets a pointer to the
// 32 lanes' slots.
template <typename F>
inline uint64_t (*warp_collective(const uint64_t* in, int n, F&& once))[8] {
  State& s = st();
  Thread& t = me();
  if (s.block_dim.x * s.block_dim.y * s.block_dim.z % 32 != 0) fail("a warp collective in a block that is not whole warps");
  Warp& w = s.warps[t.tid / 32];
  const unsigned long gen = w.gen;
  std::memcpy(w.slot[gen % 2][t.tid % 32], in, n * sizeof(uint64_t));
  t.wait = AtWarp;
  t.gen = gen;
  if (++w.arrived == 32) {
    once(w.slot[gen % 2]);
    w.arrived = 0;
    w.gen++;
    s.lo = std::min(s.lo, t.tid / 32 * 32);
    s.hi = std::max(s.hi, t.tid / 32 * 32 + 31);
  }
  while (t.wait == AtWarp && t.gen == w.gen) yield();
  t.wait = Running;
  return w.slot[gen % 2];
}

inline uint64_t (*warp_exchange(const uint64_t* in, int n))[8] {
  return warp_collective(in, n, [](uint64_t(*)[8]) {});
}

inline void entry() {
  st().body();
  me().wait = Done;
  me().open.clear();
  me().groups.clear();
#if defined(__x86_64__)
  yield();  // never resumed
  fail("a finished thread was resumed");
#endif
}

// start prepares t to run entry() on its own stack when first switched to.
inline void start(Thread& t) {
#if defined(__x86_64__)
  uintptr_t top = (reinterpret_cast<uintptr_t>(t.stack.data()) + t.stack.size()) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top - 64);
  for (int i = 0; i < 6; i++) sp[i] = nullptr;  // r15 r14 r13 r12 rbx rbp
  sp[6] = reinterpret_cast<void*>(&entry);     // where the first switch "returns" to
  sp[7] = nullptr;
  t.ctx.sp = sp;
#else
  getcontext(&t.ctx.uc);
  t.ctx.uc.uc_stack.ss_sp = t.stack.data();
  t.ctx.uc.uc_stack.ss_size = t.stack.size();
  t.ctx.uc.uc_link = &st().sched.uc;
  makecontext(&t.ctx.uc, entry, 0);
#endif
}

// run_block runs every thread of the current block to completion.
inline void run_block() {
  State& s = st();
  for (int i = 0; i < s.nthreads; i++) {
    Thread& t = s.threads[i];
    t.wait = Running;
    t.open.clear();
    t.groups.clear();
    t.waited = false;
    start(t);
  }
  auto runnable = [&](int i) {
    const Thread& t = s.threads[i];
    switch (t.wait) {
      case Done: return false;
      case AtBlock: return t.gen != s.block_gen;
      case AtWarp: return t.gen != s.warps[i / 32].gen;
      default: return true;
    }
  };
  // pick chooses the next thread to run. "greedy" runs the lowest runnable
  // thread, so that warp 0 gets as far ahead of the others as it can (a
  // read of another warp's data before a barrier then sees stale data);
  // "greedy-reverse" the highest; "forward" and "reverse" go round;
  // "random" picks at random.
  // lo and hi bound the runnable threads: none is below lo or above hi
  // (releases at barriers widen them again; see release()).
  int last = -1;
  const int kind = s.order == "greedy" ? 0 : s.order == "greedy-reverse" ? 1 : s.order == "reverse" ? 2 : s.order == "random" ? 3 : 4;
  s.lo = 0;
  s.hi = s.nthreads - 1;
  auto pick = [&]() {
    const int n = s.nthreads;
    if (kind == 0) {
      for (; s.lo < n; s.lo++)
        if (runnable(s.lo)) return s.lo;
      return -1;
    }
    if (kind == 1) {
      for (; s.hi >= 0; s.hi--)
        if (runnable(s.hi)) return s.hi;
      return -1;
    }
    const int from = kind == 3 ? std::uniform_int_distribution<int>(0, n - 1)(s.rng) : last + 1;
    for (int k = 0; k < n; k++) {
      const int i = kind == 2 ? ((last < 0 ? 0 : last) - 1 - k + 2 * n) % n : (from + k) % n;
      if (runnable(i)) return i;
    }
    return -1;
  };
  for (;;) {
    const int i = pick();
    if (i < 0) break;
    last = s.cur = i;
    switch_to(s.sched, s.threads[i].ctx);
  }
  int at_block = 0, at_warp = 0, done = 0;
  for (auto& t : s.threads) {
    at_block += t.wait == AtBlock;
    at_warp += t.wait == AtWarp;
    done += t.wait == Done;
  }
  if (done != s.nthreads) {
    fail("deadlock in block (" + std::to_string(s.block_idx.x) + "," + std::to_string(s.block_idx.y) + "," +
         std::to_string(s.block_idx.z) + "): " + std::to_string(at_block) + " threads at __syncthreads, " +
         std::to_string(at_warp) + " in warp collectives, " + std::to_string(done) + " exited");
  }
  flush_traces();
}

template <typename... P, typename... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t, A... args) {
  State& s = st();
  const char* order = std::getenv("MIRAGE_EMU_ORDER");
  s.order = order ? order : "forward";
  const char* cp = std::getenv("MIRAGE_EMU_CPASYNC");
  s.lazy = !cp || std::string(cp) != "eager";
  const unsigned n = block.x * block.y * block.z;
  int limit = 48 * 1024;
  auto it = s.max_smem.find(reinterpret_cast<const void*>(kernel));
  if (it != s.max_smem.end()) limit = it->second;
  if (n == 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    return s.last = cudaErrorInvalidConfiguration;
  }
  if (smem > static_cast<size_t>(limit)) return s.last = cudaErrorInvalidValue;
  std::tuple<P...> params(static_cast<P>(args)...);
  static std::tuple<P...>* current;
  static void (*fn)(P...);
  current = &params;
  fn = kernel;
  s.body = [] { std::apply(fn, *current); };
  s.nthreads = n;
  s.block_dim = block;
  s.grid_dim = grid;
  s.threads.resize(n);
  s.warps.assign((n + 31) / 32, Warp{});
  s.block_arrived = 0;
  start_counters();
  for (unsigned i = 0; i < n; i++) {
    Thread& t = s.threads[i];
    if (t.stack.size() < (256u << 10)) t.stack.assign(256u << 10, 0);
    t.tid = i;
    t.idx = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
  }
  // Blocks run one at a time, last first under the reverse orders: a
  // kernel whose blocks meet through device memory (a split sum's last
  // block) must not depend on which of them runs first.
  const bool backward = s.order == "greedy-reverse" || s.order == "reverse";
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  for (unsigned long long b = 0; b < blocks; b++) {
    const unsigned long long i = backward ? blocks - 1 - b : b;
    s.block_idx = uint3{static_cast<unsigned>(i % grid.x), static_cast<unsigned>(i / grid.x % grid.y),
                        static_cast<unsigned>(i / grid.x / grid.y)};
    s.smem.assign(smem, 0xff);
    run_block();
  }
  if (s.cnt.on) write_counters();
  return cudaSuccess;
}

// launch_dependent is launch for a programmatic dependent launch: the
// kernels still run one after another, but each thread must call
// grid_wait before it touches device memory (check_waited).
template <typename... P, typename... A>
cudaError_t launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
  st().dependent = true;
  const cudaError_t err = launch(kernel, grid, block, smem, stream, args...);
  st().dependent = false;
  return err;
}

// grid_wait is griddepcontrol.wait: the kernel before has finished.
inline void grid_wait() { me().waited = true; }

// --- cp.async -------------------------------------------------------------

// cp_async starts the copy of bytes (src_bytes of them from src, zeros
// after) into shared memory at dst; file and line name the call site for
// the counters.
inline void cp_async(void* dst, const void* src, int bytes, int src_bytes, const char* file, int line) {
  if (reinterpret_cast<uintptr_t>(dst) % bytes != 0 || (src_bytes > 0 && reinterpret_cast<uintptr_t>(src) % bytes != 0))
    fail("cp.async of " + std::to_string(bytes) + " bytes at a misaligned address");
  unsigned char* lo = st().smem.data();
  if (static_cast<unsigned char*>(dst) < lo || static_cast<unsigned char*>(dst) + bytes > lo + st().smem.size())
    fail("cp.async outside the dynamic shared memory");
  if (src_bytes > 0) check_waited();
  if (src_bytes > 0 && !st().fences.empty()) check_fences(src, src_bytes, Load);
  if (st().cnt.on) {
    traced_line(file, line, Load, src, src_bytes, GlobalMem);
    traced_line(file, line, Store, dst, bytes, SharedMem);
    st().cnt.cp_async_bytes += src_bytes;
  }
  Copy c{dst, src, bytes, src_bytes};
  if (st().lazy) {
    me().open.push_back(c);
  } else {
    c.run();
  }
}
inline void cp_async_commit() {
  me().groups.push_back(std::move(me().open));
  me().open.clear();
}
inline void cp_async_wait(int n) {
  auto& g = me().groups;
  while (static_cast<int>(g.size()) > n) {
    for (const Copy& c : g.front()) c.run();
    g.erase(g.begin());
  }
}

// --- warp collectives (PTX ISA layouts) -----------------------------------

inline float half_bits_to_float(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; i++) {
      __half_raw r;
      r.x = static_cast<uint16_t>(i);
      t[i] = __half2float(__half(r));
    }
    return t;
  }();
  return table[h];
}

// ldmatrix .m8n8 .b16: lanes 8i..8i+7 give the row addresses of matrix i;
// lane l receives, in register i, row l/4, columns 2(l%4) and 2(l%4)+1 of
// matrix i (the low half holds the lower column); .trans transposes.
inline void ldmatrix(uint32_t* r, int num, bool trans, const void* p) {
  uint64_t mine = reinterpret_cast<uintptr_t>(p);
  unsigned char* lo = st().smem.data();
  // The last lane to arrive counts the request: matrix i, rows of 16
  // bytes from lanes 8i..8i+7, is one phase.
  auto lanes = warp_collective(&mine, 1, [num](uint64_t (*sl)[8]) {
    Counters& c = st().cnt;
    if (!c.on) return;
    c.shared_requests++;
    for (int i = 0; i < num; i++) {
      Access rows[8];
      for (int r = 0; r < 8; r++) rows[r] = Access{static_cast<uintptr_t>(sl[8 * i + r][0]), 16};
      c.shared_wavefronts += wavefronts(rows, 8);
      c.shared_phases++;
    }
  });
  const int l = me().tid % 32;
  for (int i = 0; i < num; i++) {
    uint16_t e[2];
    for (int k = 0; k < 2; k++) {
      const int row = trans ? 2 * (l % 4) + k : l / 4;
      const int col = trans ? l / 4 : 2 * (l % 4) + k;
      const unsigned char* a = reinterpret_cast<const unsigned char*>(lanes[8 * i + row][0]);
      if (reinterpret_cast<uintptr_t>(a) % 16 != 0) fail("ldmatrix row address not 16-byte aligned");
      if (a < lo || a + 16 > lo + st().smem.size()) fail("ldmatrix outside the dynamic shared memory");
      std::memcpy(&e[k], a + 2 * col, 2);
    }
    r[i] = static_cast<uint32_t>(e[0]) | static_cast<uint32_t>(e[1]) << 16;
  }
}

// mma.m16n8k16.row.col.f32: with g = lane/4, t = lane%4, register i of a
// holds A[g + 8·(i%2)][2t + 8·(i/2) + h] (h = 0 low, 1 high); register i of b
// holds B[2t + 8i + h][g]; d[r] is D[g + 8·(r/2)][2t + r%2].
inline void mma_16816(float* d, const uint32_t* a, const uint32_t* b, bool bf16) {
  uint64_t mine[8];
  for (int i = 0; i < 4; i++) mine[i] = a[i];
  for (int i = 0; i < 2; i++) mine[4 + i] = b[i];
  for (int r = 0; r < 4; r++) {
    uint32_t bits;
    std::memcpy(&bits, &d[r], 4);
    mine[6 + r / 2] = r % 2 == 0 ? bits : (mine[6 + r / 2] | static_cast<uint64_t>(bits) << 32);
  }
  // The last lane to arrive computes D = A·B + C for the warp and leaves
  // each lane's four results in its slot.
  auto lanes = warp_collective(mine, 8, [bf16](uint64_t (*sl)[8]) {
    float A[16][16], B[16][8];
    for (int row = 0; row < 16; row++)
      for (int col = 0; col < 16; col++) {
        const int lane = (row % 8) * 4 + (col % 8) / 2, reg = row / 8 + 2 * (col / 8);
        A[row][col] = half_bits_to_float(static_cast<uint16_t>(sl[lane][reg] >> (16 * (col % 2))), bf16);
      }
    for (int k = 0; k < 16; k++)
      for (int n = 0; n < 8; n++) {
        const int lane = n * 4 + (k % 8) / 2, reg = k / 8;
        B[k][n] = half_bits_to_float(static_cast<uint16_t>(sl[lane][4 + reg] >> (16 * (k % 2))), bf16);
      }
    float out[32][4];
    for (int l = 0; l < 32; l++)
      for (int r = 0; r < 4; r++) {
        const int row = l / 4 + 8 * (r / 2), col = 2 * (l % 4) + r % 2;
        float c;
        const uint32_t bits = static_cast<uint32_t>(sl[l][6 + r / 2] >> (32 * (r % 2)));
        std::memcpy(&c, &bits, 4);
        float acc = 0.0f;
        for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
        out[l][r] = c + acc;
      }
    for (int l = 0; l < 32; l++) std::memcpy(sl[l], out[l], sizeof out[l]);
  });
  std::memcpy(d, lanes[me().tid % 32], 4 * sizeof(float));
}

template <typename T> T shfl(T v, int src_of_lane(int, int), int arg) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  uint64_t mine = 0;
  std::memcpy(&mine, &v, sizeof(T));
  auto lanes = warp_exchange(&mine, 1);
  T out;
  std::memcpy(&out, &lanes[src_of_lane(me().tid % 32, arg)][0], sizeof(T));
  return out;
}

}  // namespace mirage_emu

#define threadIdx (mirage_emu::me().idx)
#define blockIdx (mirage_emu::st().block_idx)
#define blockDim (mirage_emu::st().block_dim)
#define gridDim (mirage_emu::st().grid_dim)

inline void __syncthreads() { mirage_emu::sync_block(); }

// atomicAdd: the block's threads are coroutines that switch only at
// barriers and warp collectives, so a read-modify-write is atomic.
inline float atomicAdd(float* p, float v) {
  float old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}
// __threadfence orders a thread's writes before its later ones as other
// blocks see them; the emulator runs one block at a time, in order.
inline void __threadfence() {}

template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int m) {
  if (mask != 0xffffffffu) mirage_emu::fail("partial-warp shuffle");
  return mirage_emu::shfl<T>(v, [](int lane, int x) { return lane ^ x; }, m);
}
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src) {
  if (mask != 0xffffffffu) mirage_emu::fail("partial-warp shuffle");
  return mirage_emu::shfl<T>(v, [](int, int x) { return x; }, src);
}

inline cudaError_t cudaGetLastError() {
  cudaError_t e = mirage_emu::st().last;
  mirage_emu::st().last = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return mirage_emu::st().last; }
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }

template <typename F> cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0) return cudaErrorInvalidValue;
  if (value > 232448) return cudaErrorInvalidValue;  // an H100's opt-in limit
  mirage_emu::st().max_smem[reinterpret_cast<const void*>(kernel)] = value;
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t = nullptr) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int v, size_t n, cudaStream_t = nullptr) {
  std::memset(dst, v, n);
  return cudaSuccess;
}

// Device memory is host memory, 256-byte aligned as cudaMalloc's is; the
// stream runs every launch at once, so synchronizing has nothing to wait for.
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind k) {
  return cudaMemcpyAsync(dst, src, n, k);
}
inline cudaError_t cudaMemset(void* dst, int v, size_t n) { return cudaMemsetAsync(dst, v, n); }
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return mirage_emu::st().last; }
inline cudaError_t cudaDeviceSynchronize() { return mirage_emu::st().last; }

// Events time the host: the stream has run everything recorded before them.
struct mirage_emu_event {
  std::chrono::steady_clock::time_point at;
};
typedef mirage_emu_event* cudaEvent_t;
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new mirage_emu_event{};
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  e->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

// One device: the emulator, with an H100's compute capability, SMs, L2
// and clock for the host code that asks.
struct cudaDeviceProp {
  char name[256];
  int major, minor;
};
enum cudaDeviceAttr { cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16, cudaDevAttrL2CacheSize = 38 };
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d != 0) return cudaErrorInvalidValue;
  std::snprintf(p->name, sizeof p->name, "mirage CPU emulator");
  p->major = 9;
  p->minor = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
  if (d != 0) return cudaErrorInvalidValue;
  switch (a) {
  case cudaDevAttrClockRate: *v = 1755000; break;
  case cudaDevAttrMultiProcessorCount: *v = 132; break;
  case cudaDevAttrL2CacheSize: *v = 50 << 20; break;
  default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

#endif  // MIRAGE_EMU_CUDA_RUNTIME_H
