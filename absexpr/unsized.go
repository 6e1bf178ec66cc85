package absexpr

// Unsized is e with every size forgotten: sum(n, a) is a, and rms(n, a)
// is rms(1, a). In the model of the axioms (normal.go) forgetting sizes
// sets every monomial's size to 1, which commutes with every op (sizes
// only multiply), maps the targets' pieces to the pieces of the unsized
// targets, and keeps equal normal forms equal: so an expression that is
// a subexpression of a target (or may equal one) has an unsized image
// that is a subexpression of (or may equal) an unsized target. A search
// can decide on unsized expressions, with an oracle made from the
// unsized targets, what no choice of sizes (tile shapes, for-loop
// ranges) can make possible.
func Unsized(e *Expr) *Expr {
	return unsized(e, map[*Expr]*Expr{})
}

func unsized(e *Expr, done map[*Expr]*Expr) *Expr {
	if u, ok := done[e]; ok {
		return u
	}
	var u *Expr
	switch e.op {
	case OpVar:
		u = e
	case OpSum:
		u = unsized(e.args[0], done)
	case OpRms:
		u = Rms(1, unsized(e.args[0], done))
	default:
		args := make([]*Expr, len(e.args))
		changed := false
		for i, a := range e.args {
			args[i] = unsized(a, done)
			changed = changed || args[i] != a
		}
		switch {
		case !changed:
			u = e
		case ops[e.op].bounded:
			u = orPanic(bounded(e.op, e.lo, e.hi, args))
		default:
			u = apply(e.op, args)
		}
	}
	done[e] = u
	return u
}
