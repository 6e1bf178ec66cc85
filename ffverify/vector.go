package ffverify

// The two loops that take most of a verifier's time at model shapes, a
// skinny matmul's multiply-adds and the drawing of large inputs, in plain
// Go; vector_amd64 has their AVX2 forms, which the tests hold to these.

// mulAdd4Generic sets c[j] to c[j] + Σ_l a[l]·b_l[j] for the four rows
// b0..b3, per residue, with one reduction per element: a reduced residue
// plus four products of residues fits in a uint64 (see modP). It is the
// definition mulAdd4's vector forms must match.
func mulAdd4Generic(c, b0, b1, b2, b3 []elem, a *[4]elem) {
	a0p, a1p, a2p, a3p := uint64(a[0].p), uint64(a[1].p), uint64(a[2].p), uint64(a[3].p)
	a0q, a1q, a2q, a3q := uint64(a[0].q), uint64(a[1].q), uint64(a[2].q), uint64(a[3].q)
	b0, b1, b2, b3 = b0[:len(c)], b1[:len(c)], b2[:len(c)], b3[:len(c)]
	for j, cj := range c {
		sp := uint64(cj.p) + a0p*uint64(b0[j].p) + a1p*uint64(b1[j].p) + a2p*uint64(b2[j].p) + a3p*uint64(b3[j].p)
		sq := uint64(cj.q) + a0q*uint64(b0[j].q) + a1q*uint64(b1[j].q) + a2q*uint64(b2[j].q) + a3q*uint64(b3[j].q)
		c[j] = elem{uint32(sp % modP), uint32(sq % modQ)}
	}
}

// fillUniformGeneric sets v[i] to uniform(key + i·inputStride): input
// values by position (trial.input), the definition fillUniform's vector
// forms must match.
func fillUniformGeneric(v []elem, key uint64) {
	for i := range v {
		v[i] = uniform(key + uint64(i)*inputStride)
	}
}

// fillChunk bounds the elements of one call of fillUniformAVX2 (about
// 50µs): the runtime cannot preempt assembly, and a garbage collection
// stops the world until every goroutine yields, so a 45M-element input in
// one call held the whole process for 0.3s.
const fillChunk = 1 << 14
