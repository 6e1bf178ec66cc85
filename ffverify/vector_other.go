//go:build !amd64 || purego

package ffverify

// useAVX2 is false where there is no assembly form.
var useAVX2 = false

func mulAdd4(c, b0, b1, b2, b3 []elem, a *[4]elem) { mulAdd4Generic(c, b0, b1, b2, b3, a) }

func fillUniform(v []elem, key uint64) { fillUniformGeneric(v, key) }
