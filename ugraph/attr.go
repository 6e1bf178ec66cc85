package ugraph

// Canonical returns a with the fields that kind k does not use cleared, so
// that two ops of the same kind with the same meaning have equal Attr values
// (which the search's hashing relies on).
func Canonical(k OpKind, a Attr) Attr {
	info := k.Info()
	var c Attr
	switch info.Class {
	case ClassReduction, ClassNorm, ClassConcat:
		c.Dim = a.Dim
	case ClassAccum:
		c.Accum = a.Accum
	}
	copy(c.Scalars[:info.Scalars], a.Scalars[:info.Scalars])
	return c
}
