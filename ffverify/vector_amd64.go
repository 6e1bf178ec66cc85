//go:build !purego

package ffverify

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 forms.
var useAVX2 = cpu.X86.HasAVX2

// mulAdd4 is mulAdd4Generic, four elements at a time in AVX2 registers
// where the CPU has them: the products of a skinny matmul are the bulk of a
// verifier's work at model shapes, and one VPMULUDQ does four of them.
// Not inlined: its entry is where matmul may be preempted (fillVector).
//
//go:noinline
func mulAdd4(c, b0, b1, b2, b3 []elem, a *[4]elem) {
	n := len(c)
	if !useAVX2 || n < 4 {
		mulAdd4Generic(c, b0, b1, b2, b3, a)
		return
	}
	v := n &^ 3
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n] // bounds checks before the assembly reads
	mulAdd4AVX2(&c[0], &b0[0], &b1[0], &b2[0], &b3[0], a, v)
	if v < n {
		mulAdd4Generic(c[v:], b0[v:], b1[v:], b2[v:], b3[v:], a)
	}
}

// mulAdd4AVX2 is mulAdd4Generic on the n elements (a positive multiple of
// four) at c and b0..b3. Like fillUniformAVX2, the runtime cannot preempt
// it: matmul calls it on panels of matmulCols.
//
//go:noescape
func mulAdd4AVX2(c, b0, b1, b2, b3 *elem, a *[4]elem, n int)

// fillUniform is fillUniformGeneric, four elements at a time in AVX2
// registers where the CPU has them: SplitMix64's 64-bit products and the
// high words of uniform's as sums of 32-bit ones.
func fillUniform(v []elem, key uint64) {
	n := 0
	if useAVX2 {
		for len(v)-n >= 4 {
			end := n + min(fillChunk, (len(v)-n)&^3)
			fillVector(v[n:end], key+uint64(n)*inputStride)
			n = end
		}
	}
	fillUniformGeneric(v[n:], key+uint64(n)*inputStride)
}

// fillVector is fillUniformAVX2 on v, whose length is a positive multiple
// of four. It is where fillUniform may be preempted: the runtime preempts
// a goroutine at the entry of a Go function that calls another, not in
// assembly nor (in practice) between two calls of it.
//
//go:noinline
func fillVector(v []elem, key uint64) {
	stride := uint64(inputStride) // wrapping, as in uniform's keys
	start := [4]uint64{key, key + stride, key + 2*stride, key + 3*stride}
	fillUniformAVX2(&v[0], len(v), &start, 4*stride)
}

// fillUniformAVX2 is fillUniformGeneric on the n elements (a positive
// multiple of four) at v, whose keys start at start and step by step.
//
//go:noescape
func fillUniformAVX2(v *elem, n int, start *[4]uint64, step uint64)
