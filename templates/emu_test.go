package templates

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// conversions is a C++ program that checks the emulator's fp16 and bf16
// conversions exhaustively against what IEEE rounding demands, then prints
// the bits of many conversions, so that the same program built against
// another cuda_fp16.h (the CUDA toolkit's) can be compared with it.
const conversions = `#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

static int failures = 0;
static void fail(const char* what, uint32_t a, uint32_t b) {
  if (failures++ < 20) std::printf("FAIL %s %08x %08x\n", what, a, b);
}
static uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

static uint16_t h16(float f) { __half h = __float2half_rn(f); uint16_t u; std::memcpy(&u, &h, 2); return u; }
static float f16(uint16_t u) { __half h; std::memcpy(&h, &u, 2); return __half2float(h); }
static uint16_t b16(float f) { __nv_bfloat16 h = __float2bfloat16_rn(f); uint16_t u; std::memcpy(&u, &h, 2); return u; }
static float fb16(uint16_t u) { __nv_bfloat16 h; std::memcpy(&h, &u, 2); return __bfloat162float(h); }

// check verifies a 16-bit format given its decoder and rounding: every
// pattern round-trips, and between neighbours the midpoint goes to the even
// one and anything past it to the nearer one.
template <typename Enc, typename Dec> static void check(const char* name, Enc enc, Dec dec, uint32_t inf) {
  for (uint32_t u = 0; u < 65536; u++) {
    float f = dec(uint16_t(u));
    bool nan = (u & 0x7fff) > inf;
    if (nan != std::isnan(f)) fail(name, u, bits(f));
    uint16_t back = enc(f);
    if (nan ? back != 0x7fff : back != u) fail(name, u, back);
  }
  for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
    for (uint32_t u = 0; u < inf; u++) {  // u and u+1 are finite or infinity
      float lo = dec(uint16_t(sign | u)), hi = dec(uint16_t(sign | (u + 1)));
      if (std::isinf(hi)) continue;  // see the overflow checks below
      float mid = float((double(lo) + double(hi)) / 2);  // exact in float
      uint32_t even = sign | ((u & 1) ? u + 1 : u);
      if (enc(mid) != even) fail(name, sign | u, enc(mid));
      if (enc(std::nextafter(mid, lo)) != (sign | u)) fail(name, sign | u, enc(std::nextafter(mid, lo)));
      if (enc(std::nextafter(mid, hi)) != (sign | (u + 1))) fail(name, sign | u, enc(std::nextafter(mid, hi)));
    }
  }
}

int main() {
  check("fp16", h16, f16, 0x7c00);
  check("bf16", b16, fb16, 0x7f80);
  // Overflow: the largest half is 65504; half-way to 65536 rounds to even,
  // which is infinity.
  if (h16(65519.0f) != 0x7bff || h16(65520.0f) != 0x7c00 || h16(-1e9f) != 0xfc00) fail("fp16 overflow", h16(65520.0f), 0);
  if (b16(from_bits(0x7f7fffff)) != 0x7f80 || b16(from_bits(0x7f7f7fff)) != 0x7f7f) fail("bf16 overflow", 0, 0);
  // Below the smallest half subnormal, 2^-24: half of it and less is zero.
  if (h16(std::ldexp(1.0f, -25)) != 0 || h16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) != 1 || h16(-1e-30f) != 0x8000) fail("fp16 underflow", 0, 0);
  // __half2 and __nv_bfloat162 hold x at the lower address.
  __half2 h2 = __floats2half2_rn(1.0f, 2.0f);
  __nv_bfloat162 b2 = __floats2bfloat162_rn(1.0f, 2.0f);
  uint16_t h2b[2], b2b[2];
  std::memcpy(h2b, &h2, 4);
  std::memcpy(b2b, &b2, 4);
  if (sizeof(h2) != 4 || h2b[0] != 0x3c00 || h2b[1] != 0x4000 || b2b[0] != 0x3f80 || b2b[1] != 0x4000) fail("pairs", h2b[0], h2b[1]);
  if (failures) return 1;
  // The bits of conversions over a spread of floats, for comparison.
  uint32_t x = 12345;
  for (int i = 0; i < 200000; i++) {
    x = x * 1664525u + 1013904223u;
    float f = from_bits(x);
    std::printf("%04x %04x\n", h16(f), b16(f));
  }
  return 0;
}
`

// buildConversions compiles the program with the include directory inc
// first on the path, and returns its output.
func buildConversions(t *testing.T, gxx, inc string) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "conv.cpp")
	if err := os.WriteFile(src, []byte(conversions), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "conv")
	if out, err := exec.Command(gxx, "-std=c++17", "-O1", "-Wall", "-I"+inc, src, "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("g++ -I %s: %v\n%s", inc, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v\n%.2000s", inc, err, out)
	}
	return out
}

// TestEmulatorConversions checks the emulator's own cuda_fp16.h and
// cuda_bf16.h: exhaustively against IEEE rounding, and, where the CUDA
// toolkit's headers are installed (CI installs them), bit for bit against
// the toolkit's on 200,000 floats.
func TestEmulatorConversions(t *testing.T) {
	gxx, err := EmulatorCompiler()
	if err != nil {
		t.Fatal(err)
	}
	emu := t.TempDir()
	if err := WriteEmulator(emu); err != nil {
		t.Fatal(err)
	}
	ours := buildConversions(t, gxx, emu)
	for _, inc := range []string{"/usr/include", "/usr/local/cuda/include"} {
		if _, err := os.Stat(filepath.Join(inc, "cuda_fp16.h")); err != nil {
			continue
		}
		t.Logf("comparing with %s/cuda_fp16.h", inc)
		if theirs := buildConversions(t, gxx, inc); !bytes.Equal(ours, theirs) {
			t.Errorf("the emulator's conversions differ from %s's", inc)
		}
	}
}
