package driver

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The search rounds: the parts of a partition searched by a pool of
// workers that share the time left, and the parts that did not fuse cut
// and searched again, ahead of the next round where they can be.

// maxRounds bounds how often parts that did not fuse are split again.
const maxRounds = 3

// searchRounds searches the parts of groups (Partition's, before cut);
// then it splits the parts that did not fuse (splitAgain) into smaller
// ones and searches those, while time is left. It returns the final
// partition and each part's outcome.
func (d *run) searchRounds(ctx context.Context, groups [][]int) ([]Part, []*outcome, error) {
	for round := 0; ; round++ {
		parts := cut(d.ix, groups)
		outs := make([]*outcome, len(parts))
		var todo []*outcome
		for k, p := range parts {
			o, err := d.outcomeOf(p)
			if err != nil {
				return nil, nil, err
			}
			outs[k] = o
			if !d.resultOf(o).done && !slices.Contains(todo, o) {
				todo = append(todo, o)
			}
		}
		var ahead func(*outcome) []*outcome
		if round+1 < maxRounds {
			ahead = func(o *outcome) []*outcome { return d.cutAhead(groups, parts, outs, o) }
		}
		if ahead != nil && !d.opts.NoSeeds {
			todo = d.withPieces(groups, parts, outs, todo)
		}
		if !d.opts.NoSeeds {
			todo = d.coveredFirst(parts, outs, todo)
		}
		d.searchAll(ctx, todo, ahead)
		if round+1 == maxRounds || d.interrupted() {
			return parts, outs, nil
		}
		next, changed := d.nextGroups(groups, outs, nil)
		if !changed {
			return parts, outs, nil
		}
		next = recompute(d.ix, next, d.limits)
		// With the search time over, the next round is taken only where
		// cutAhead has searched every part of it already.
		if d.searchOver() && !d.searchedAll(next) {
			return parts, outs, nil
		}
		groups = next
	}
}

// searchedAll reports whether the search of every part of groups has
// ended.
func (d *run) searchedAll(groups [][]int) bool {
	for _, p := range cut(d.ix, groups) {
		if o, err := d.outcomeOf(p); err != nil || !d.resultOf(o).done {
			return false
		}
	}
	return true
}

// nextGroups is groups as the next round searches them, each cut again
// where its part's search says so (cutAgain): every group's, or only
// those of outcome only (unless nil). changed reports whether one was cut.
func (d *run) nextGroups(groups [][]int, outs []*outcome, only *outcome) (next [][]int, changed bool) {
	for k, grp := range groups {
		if only != nil && outs[k] != only {
			next = append(next, grp)
			continue
		}
		pieces := d.cutAgain(grp, d.resultOf(outs[k]), groups)
		if len(pieces) == 1 && len(grp) > 1 {
			if p := d.pieces(grp, groups); d.piecesWin(groups, k, p, outs) {
				pieces = p
			}
		}
		next = append(next, pieces...)
		changed = changed || len(pieces) > 1
	}
	return next, changed
}

// cutAgain is the groups that group grp, whose part's search gave r, is
// searched as in the next round: its pieces where splitAgain says so,
// else grp alone. The ops grp shares with another of groups (copies that
// recompute made: a norm that two parts read) stay out of the cut: a piece
// of copies alone would be gone again once recompute copies them back into
// the pieces that read them, and the part with it.
func (d *run) cutAgain(grp []int, r result, groups [][]int) [][]int {
	if len(grp) < 2 || !splitAgain(r, searchable(d.ix, grp, d.limits(grp), false)) {
		return [][]int{grp}
	}
	return d.pieces(grp, groups)
}

// pieces is group grp of groups cut into smaller groups, as cutAgain cuts
// it; grp alone where it cannot be.
func (d *run) pieces(grp []int, groups [][]int) [][]int {
	own := slices.DeleteFunc(slices.Clone(grp), func(o int) bool {
		for _, other := range groups {
			if !slices.Equal(other, grp) && slices.Contains(other, o) {
				return true
			}
		}
		return false
	})
	if len(own) < 2 {
		return [][]int{grp}
	}
	tighter := func(ops []int) Limits {
		l := d.limits(ops)
		l.Ops = len(own) - 1
		return l
	}
	return split(d.ix, own, tighter, !d.opts.NoSeeds, d.searchOver)
}

// piecesWin reports whether cutting groups[k] (outs[k] its part's
// outcome) into pieces makes the partition faster by the estimates of
// searches that have ended already: every part of the partition with the
// cut (after recompute) and without it must be searched, and the first's
// answers together must beat the second's by minGain. A part that stays
// whole by splitAgain (its fused forms slower than its ops, or its search
// out of time) holds its pieces' forms in principle, but its enumeration
// need not reach them: a 7B model's final norm, LM head and softmax at one
// token had a best fused form at 156.5 µs, its ops at 116.7, and its two
// pieces, searched ahead of it (withPieces), fused at 96.7 and 6.9.
func (d *run) piecesWin(groups [][]int, k int, pieces [][]int, outs []*outcome) bool {
	if len(pieces) < 2 {
		return false
	}
	total := func(os []*outcome) (float64, bool) {
		sum := 0.0
		for _, o := range os {
			r := d.resultOf(o)
			if !r.done {
				return 0, false
			}
			sum += r.estimatedUs
		}
		return sum, true
	}
	whole, ok := total(outs)
	if !ok {
		return false
	}
	var cutOuts []*outcome
	for _, p := range cut(d.ix, recompute(d.ix, slices.Concat(groups[:k], pieces, groups[k+1:]), d.limits)) {
		o, err := d.outcomeOf(p)
		if err != nil {
			return false
		}
		cutOuts = append(cutOuts, o)
	}
	split, ok := total(cutOuts)
	return ok && split < whole*(1-minGain)
}

// minGain is the share of a partition's estimate that cutting a part must
// save (piecesWin): less is within what stitching the parts moves.
const minGain = 0.01

// cutAhead starts the next round early for the parts whose search, o's,
// has just ended: where they are to be cut again, it cuts them as the next
// round will (the other groups as they are) and returns the outcomes of
// that partition's new parts that have not been searched. So a part that
// cannot fuse is cut, and its pieces searched, beside the round's longer
// searches (an attention part's enumeration can take most of the budget)
// rather than after them. The next round finds those outcomes done,
// shared by the parts' hashes; a part that its whole partition builds
// otherwise (the recomputed norms of several cuts) is searched then.
func (d *run) cutAhead(groups [][]int, parts []Part, outs []*outcome, o *outcome) []*outcome {
	if d.searchOver() {
		return nil
	}
	next, changed := d.nextGroups(groups, outs, o)
	if !changed {
		return nil
	}
	fresh := d.unsearched(parts, next)
	if d.opts.NoSeeds || len(fresh) == 0 {
		return fresh
	}
	// The new parts that no rule covers get their covered pieces ahead of
	// them, as a round's own parts do.
	regrouped := recompute(d.ix, next, d.limits)
	nparts := cut(d.ix, regrouped)
	nouts := make([]*outcome, len(nparts))
	for k, p := range nparts {
		var err error
		if nouts[k], err = d.outcomeOf(p); err != nil {
			return fresh
		}
	}
	return d.coveredFirst(nparts, nouts, d.withPieces(regrouped, nparts, nouts, fresh))
}

// coveredFirst is queue, searches of parts among parts (outs their
// outcomes) and pieces of them, with the parts that no seed rule covers
// last, in their order: the others have a fused answer within seconds,
// and a bare enumeration can take a whole share of the time (in a pool of
// one worker, a round of one part, the expert's projection of a MoE layer
// waited 12 s behind its router's).
func (d *run) coveredFirst(parts []Part, outs []*outcome, queue []*outcome) []*outcome {
	bare := map[*outcome]bool{}
	for k, p := range parts {
		bare[outs[k]] = !d.ix.coverageOfPart(p).premise
	}
	slices.SortStableFunc(queue, func(a, b *outcome) int {
		switch {
		case bare[a] == bare[b]:
			return 0
		case bare[b]:
			return -1
		}
		return 1
	})
	return queue
}

// unsearched is the outcomes of the parts of partition next (groups
// before recompute) that are not among the round's parts and have not
// been searched: the parts it shares with the round's are searched,
// running or queued already.
func (d *run) unsearched(parts []Part, next [][]int) []*outcome {
	old := map[string]bool{}
	for _, p := range parts {
		old[p.key()] = true
	}
	var fresh []*outcome
	for _, p := range cut(d.ix, recompute(d.ix, next, d.limits)) {
		if old[p.key()] {
			continue
		}
		po, err := d.outcomeOf(p)
		if err != nil { // the next round reports it
			continue
		}
		if !d.resultOf(po).done && !slices.Contains(fresh, po) {
			fresh = append(fresh, po)
		}
	}
	return fresh
}

// withPieces is todo, the round's searches, with the pieces of each part
// that no seed rule covers queued before it: those the next round cuts
// the part into if its search finds nothing (splitAgain), when a rule
// covers every one. They have a fused answer at once, where the part's
// own enumeration may end with none complete (a final norm, the LM head
// and a softmax over the vocabulary: 45M states in a minute), and the
// next round takes them then; if the part fuses, they cost the seconds
// they took.
func (d *run) withPieces(groups [][]int, parts []Part, outs []*outcome, todo []*outcome) []*outcome {
	var out []*outcome
	for k, grp := range groups {
		o := outs[k]
		if !slices.Contains(todo, o) || slices.Contains(out, o) {
			continue
		}
		if !d.ix.coverageOfPart(parts[k]).premise {
			pieces := d.cutAgain(grp, result{}, groups)
			covered := len(pieces) > 1
			for _, p := range pieces {
				covered = covered && coverageOf(d.ix, p).premise
			}
			if covered {
				for _, p := range d.unsearched(parts, slices.Concat(groups[:k], pieces, groups[k+1:])) {
					if !slices.Contains(out, p) && !slices.Contains(todo, p) {
						out = append(out, p)
					}
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// splitAgain reports whether a part whose search gave r is cut into
// smaller parts for the next round: one the search found no fused form of
// is, whether its enumeration ended or ran out of time (its pieces, each
// searched in less time, can only add fused forms); one that fused stays
// whole; one whose fused forms are slower than its ops stays whole when
// the enumeration's limits hold it (within: its smaller parts can only do
// worse) or it ran out of time (a longer search may find a faster form),
// and is cut when only a seed rule's cover let it past them: its seeds,
// the rule's one kernel, lost, and a cut (the norm apart from the
// projections) may fuse.
func splitAgain(r result, within bool) bool {
	switch {
	case r.fused:
		return false
	case r.slower:
		return !within && !r.timedOut
	}
	return true
}

// searchAll searches the outcomes' programs, up to Workers at a time. Each
// gets an equal share of the time the workers have left: until the search
// deadline for this one and those idle, from its search's deadline for
// each one busy, shared among this search and those still waiting. (A
// part that does not fuse at all is found out early, as its search runs
// out of states.) As each search
// ends, ahead (unless nil) gives outcomes to search next, in the same
// pool: the pieces of a part that did not fuse, cut at once (cutAhead),
// which take the time it left. When ctx ends it returns at once: the
// searches still running are left to end on their own, their results
// unused, and start nothing more.
func (d *run) searchAll(ctx context.Context, todo []*outcome, ahead func(*outcome) []*outcome) {
	var (
		mu     sync.Mutex
		wake   = sync.NewCond(&mu)
		queue  = slices.Clone(todo)
		queued = map[*outcome]bool{}
		busy   = map[*outcome]time.Time{} // the searches running, to their deadlines
		closed bool                       // searchAll has returned
	)
	for _, o := range todo {
		queued[o] = true
	}
	pool := min(len(todo), d.opts.Workers)
	workers := max(1, d.opts.Workers/max(1, pool))
	next := func() {
		mu.Lock()
		defer mu.Unlock()
		for {
			for len(queue) == 0 && len(busy) > 0 && !closed {
				wake.Wait()
			}
			if len(queue) == 0 || closed {
				wake.Broadcast()
				return
			}
			o := queue[0]
			queue = queue[1:]
			left := time.Until(d.searchEnd)
			free := left * time.Duration(pool-len(busy))
			for _, end := range busy {
				free += max(0, d.searchEnd.Sub(end))
			}
			deadline := time.Now().Add(min(left, free/time.Duration(len(queue)+1)))
			busy[o] = deadline
			mu.Unlock()
			d.search(ctx, o, deadline, workers)
			mu.Lock()
			delete(busy, o)
			if ahead != nil && !closed && ctx.Err() == nil {
				for _, n := range ahead(o) {
					if !queued[n] {
						queued[n] = true
						queue = append(queue, n)
					}
				}
			}
			wake.Broadcast()
		}
	}
	var g sync.WaitGroup
	for range pool {
		g.Go(next)
	}
	done := make(chan struct{})
	go func() { g.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	mu.Lock()
	closed = true
	wake.Broadcast()
	mu.Unlock()
}
