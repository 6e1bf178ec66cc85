package ffverify

import "slices"

// A kernel that factors a row-wise scale out of a product computes
// X·W where the program computes N·W with N = X/rms(X) (the Mirage
// rewrite: rms_norm(X)·W = (X·W)/rms(X)): a product the program never
// made, of a LLaMA-70B weight (8192 x 28672, 3.8 G multiply-adds a draw).
// Its rows are the memo's N·W rows times X's scales, exactly in the field:
// where a whole product's left operand is, row by row, a multiple of the
// left operand of one the memo keeps with the same right operand, the
// product is that one's rows scaled (m·k + m·n operations), not computed.
//
// The kept product may have more rows: a dynamic program's buckets check
// the same program at fewer rows (DESIGN §9), whose left operands are the
// first rows of the largest bucket's (X[:m], and rms_norm(X[:m]), which is
// rms_norm(X)[:m]); their products are that one's first rows.

// maxLefts bounds the whole products of one right operand that scaled
// looks through.
const maxLefts = 4

// noteLeft remembers the whole product under key, which the memo keeps
// with its left operand (product.left), for scaled; the names of products
// the memo has forgotten go.
func (ps *products) noteLeft(key wholeKey) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.lefts == nil {
		ps.lefts = map[operandKey][]wholeKey{}
	}
	l := slices.DeleteFunc(ps.lefts[key.b], func(k wholeKey) bool { _, ok := ps.memo[k]; return !ok })
	if len(l) == maxLefts {
		l = l[1:]
	}
	ps.lefts[key.b] = append(l, key)
}

// scaled writes into dst the whole product a·b under key from one the
// memo keeps of b with a left operand whose rows a's are multiples of,
// and reports whether there was one.
func (ps *products) scaled(dst *tensor, key wholeKey, a *tensor) bool {
	type kept struct{ left, product *tensor }
	var found []kept
	ps.mu.Lock()
	for _, k := range ps.lefts[key.b] {
		p, ok := ps.memo[k]
		// With the same right operand, only the rows can differ: a
		// left operand that is the first rows of k's (rowPrefix, no batch
		// above 1 to interleave them) has the first rows of its product.
		if !ok || !rowPrefix(a.shape, k.a.shape) {
			continue
		}
		select {
		case <-p.ready:
			if p.t != nil {
				found = append(found, kept{p.left, p.t})
			}
		default: // being computed
		}
	}
	ps.mu.Unlock()
	k, n := a.shape.Last(), dst.shape.Last()
	for _, f := range found {
		c, ok := rowScales(a.v, f.left.v[:len(a.v)], k)
		if !ok {
			continue
		}
		for r, s := range c {
			src, out := f.product.v[r*n:][:n], dst.v[r*n:][:n]
			for j, v := range src {
				out[j] = v.mul(s)
			}
		}
		ps.scaledHits.Add(1)
		return true
	}
	return false
}

// rowScales returns, for a and b of rows of k values, the c_r with
// row r of a = c_r · row r of b, and whether every row has one.
func rowScales(a, b []elem, k int) ([]elem, bool) {
	c := make([]elem, len(a)/k)
	for r := range c {
		ra, rb := a[r*k:][:k], b[r*k:][:k]
		// The scale from the first value nonzero in both residues of b's
		// row (each residue is its own field); a row of b without one is
		// matched only where a's is zero too (c = 0) or not at all.
		j := 0
		for j < k && (rb[j].p == 0 || rb[j].q == 0) {
			j++
		}
		var s elem
		if j < k {
			s = ra[j].mul(rb[j].inv())
		}
		for x := range ra {
			if ra[x] != rb[x].mul(s) {
				return nil, false
			}
		}
		c[r] = s
	}
	return c, true
}
