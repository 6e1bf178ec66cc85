//go:build !purego

#include "textflag.h"

// lanes(name, v) defines name<>, 32 bytes holding v in each 64-bit lane:
// an operand of the vector instructions below.
#define lanes(name, v) \
	DATA name<>+0(SB)/8, v \
	DATA name<>+8(SB)/8, v \
	DATA name<>+16(SB)/8, v \
	DATA name<>+24(SB)/8, v \
	GLOBL name<>(SB), RODATA|NOPTR, $32

// The constants of the two reductions (see reduce below): 2³² ≡ 5010 and
// 2³¹ ≡ 2505 (mod P), 2³² ≡ 5012 and 2³⁰ ≡ 1253 (mod Q).
lanes(fold32P, $5010)
lanes(fold31P, $2505)
lanes(low31, $0x7fffffff)
lanes(modP, $2147481143)
lanes(fold32Q, $5012)
lanes(fold30Q, $1253)
lanes(low30, $0x3fffffff)
lanes(modQ, $1073740571)

// reduce(s, t, fold32, shift, fold, low, mod) leaves s mod m in s, for s
// any uint64 per lane and m = 2^shift - fold, a prime below 2³¹ with
// fold32 = 2³² mod m: s ≡ (s mod 2³²) + (s >> 32)·fold32 < 2⁴⁵, then
// ≡ (that mod 2^shift) + (that >> shift)·fold < 2m, then at most one m
// off, which the unsigned 32-bit minimum of z and z - m takes (z - m wraps
// above z when z < m). Y8 holds the 32-bit mask; t is scratch.
#define reduce(s, t, fold32, shift, fold, low, mod) \
	VPSRLQ $32, s, t \
	VPAND Y8, s, s \
	VPMULUDQ fold32, t, t \
	VPADDQ t, s, s \
	VPSRLQ $shift, s, t \
	VPAND low, s, s \
	VPMULUDQ fold, t, t \
	VPADDQ t, s, s \
	VPSUBD mod, s, t \
	VPMINUD t, s, s

// func mulAdd4AVX2(c, b0, b1, b2, b3 *elem, a *[4]elem, n int)
//
// An elem is a 64-bit lane: residue p in its low half, q in its high half.
// VPMULUDQ multiplies the low halves of its lanes, so the q products take
// operands shifted down by 32 bits.
TEXT ·mulAdd4AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DX
	MOVQ b0+8(FP), R8
	MOVQ b1+16(FP), R9
	MOVQ b2+24(FP), R10
	MOVQ b3+32(FP), R11
	MOVQ a+40(FP), AX
	MOVQ n+48(FP), CX
	SHLQ $3, CX // bytes

	VPBROADCASTQ 0(AX), Y0 // a0: p products
	VPBROADCASTQ 8(AX), Y1
	VPBROADCASTQ 16(AX), Y2
	VPBROADCASTQ 24(AX), Y3
	VPSRLQ $32, Y0, Y4 // a0 >> 32: q products
	VPSRLQ $32, Y1, Y5
	VPSRLQ $32, Y2, Y6
	VPSRLQ $32, Y3, Y7
	VPCMPEQD Y8, Y8, Y8
	VPSRLQ $32, Y8, Y8 // 0x00000000ffffffff per lane

	XORQ SI, SI
loop:
	VMOVDQU (R8)(SI*1), Y9
	VPMULUDQ Y9, Y0, Y10 // Σ p products
	VPSRLQ $32, Y9, Y9
	VPMULUDQ Y9, Y4, Y11 // Σ q products

	VMOVDQU (R9)(SI*1), Y9
	VPMULUDQ Y9, Y1, Y12
	VPADDQ Y12, Y10, Y10
	VPSRLQ $32, Y9, Y9
	VPMULUDQ Y9, Y5, Y12
	VPADDQ Y12, Y11, Y11

	VMOVDQU (R10)(SI*1), Y9
	VPMULUDQ Y9, Y2, Y12
	VPADDQ Y12, Y10, Y10
	VPSRLQ $32, Y9, Y9
	VPMULUDQ Y9, Y6, Y12
	VPADDQ Y12, Y11, Y11

	VMOVDQU (R11)(SI*1), Y9
	VPMULUDQ Y9, Y3, Y12
	VPADDQ Y12, Y10, Y10
	VPSRLQ $32, Y9, Y9
	VPMULUDQ Y9, Y7, Y12
	VPADDQ Y12, Y11, Y11

	VMOVDQU (DX)(SI*1), Y9
	VPAND Y8, Y9, Y12
	VPADDQ Y12, Y10, Y10
	VPSRLQ $32, Y9, Y9
	VPADDQ Y9, Y11, Y11

	reduce(Y10, Y12, fold32P<>(SB), 31, fold31P<>(SB), low31<>(SB), modP<>(SB))
	reduce(Y11, Y13, fold32Q<>(SB), 30, fold30Q<>(SB), low30<>(SB), modQ<>(SB))

	VPSLLQ $32, Y11, Y11
	VPOR Y11, Y10, Y10
	VMOVDQU Y10, (DX)(SI*1)

	ADDQ $32, SI
	CMPQ SI, CX
	JB loop

	VZEROUPPER
	RET

// SplitMix64's multipliers, as 32-bit halves, the key of uniform's Q
// residue, and the moduli.
DATA splitmix<>+0(SB)/8, $0x1ce4e5b9
DATA splitmix<>+8(SB)/8, $0xbf58476d
DATA splitmix<>+16(SB)/8, $0x133111eb
DATA splitmix<>+24(SB)/8, $0x94d049bb
DATA splitmix<>+32(SB)/8, $0x5851f42d4c957f2d
DATA splitmix<>+40(SB)/8, $2147481143
DATA splitmix<>+48(SB)/8, $1073740571
GLOBL splitmix<>(SB), RODATA|NOPTR, $56

// mul64(x, lo, hi, t1, t2, t3) sets x to the low 64 bits of x times the
// constant whose 32-bit halves are lo and hi: xl·lo + (xh·lo + xl·hi)·2³².
#define mul64(x, lo, hi, t1, t2, t3) \
	VPMULUDQ lo, x, t1 \
	VPSRLQ $32, x, t2 \
	VPMULUDQ lo, t2, t2 \
	VPMULUDQ hi, x, t3 \
	VPADDQ t3, t2, t2 \
	VPSLLQ $32, t2, t2 \
	VPADDQ t2, t1, x

// mix(x, t1, t2, t3) is field.go's mix (SplitMix64's finaliser).
#define mix(x, t1, t2, t3) \
	VPSRLQ $30, x, t1 \
	VPXOR t1, x, x \
	mul64(x, Y0, Y1, t1, t2, t3) \
	VPSRLQ $27, x, t1 \
	VPXOR t1, x, x \
	mul64(x, Y2, Y3, t1, t2, t3) \
	VPSRLQ $31, x, t1 \
	VPXOR t1, x, x

// mulhi(x, m, t, r) sets r to the high 64 bits of x·m, m below 2³²:
// (xh·m + (xl·m >> 32)) >> 32, exact since floors nest.
#define mulhi(x, m, t, r) \
	VPMULUDQ m, x, t \
	VPSRLQ $32, t, t \
	VPSRLQ $32, x, r \
	VPMULUDQ m, r, r \
	VPADDQ t, r, r \
	VPSRLQ $32, r, r

// func fillUniformAVX2(v *elem, n int, start *[4]uint64, step uint64)
TEXT ·fillUniformAVX2(SB), NOSPLIT, $0-32
	MOVQ v+0(FP), DI
	MOVQ n+8(FP), CX
	SHLQ $3, CX // bytes
	MOVQ start+16(FP), AX
	VMOVDQU (AX), Y8 // the keys of the next four elements
	VPBROADCASTQ step+24(FP), Y7
	MOVQ $splitmix<>(SB), AX
	VPBROADCASTQ 0(AX), Y0
	VPBROADCASTQ 8(AX), Y1
	VPBROADCASTQ 16(AX), Y2
	VPBROADCASTQ 24(AX), Y3
	VPBROADCASTQ 32(AX), Y6
	VPBROADCASTQ 40(AX), Y4
	VPBROADCASTQ 48(AX), Y5

	XORQ SI, SI
fill:
	VMOVDQA Y8, Y9       // h
	VPXOR Y6, Y8, Y10    // h ^ the Q key
	mix(Y9, Y11, Y12, Y13)
	mix(Y10, Y11, Y12, Y13)
	mulhi(Y9, Y4, Y11, Y14)  // p
	mulhi(Y10, Y5, Y11, Y15) // q
	VPSLLQ $32, Y15, Y15
	VPOR Y15, Y14, Y14
	VMOVDQU Y14, (DI)(SI*1)
	VPADDQ Y7, Y8, Y8

	ADDQ $32, SI
	CMPQ SI, CX
	JB fill

	VZEROUPPER
	RET
