package check

import (
	"errors"
	"fmt"
	"github.com/mirage-go/mirage/target"
	"io"
	"slices"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Dynamic checks every graph of the document b against d, the program
// (from the file aPath) with its rows m marked, at the m each graph's
// inputs have. It writes a verdict per graph and one for all, and returns
// whether every graph agrees.
func Dynamic(w io.Writer, d *driver.Dynamic, aPath string, b *driver.Input, opts Options) (bool, error) {
	opts, err := opts.normalized()
	if err != nil {
		return false, err
	}
	if opts.Method == Emu {
		return false, fmt.Errorf("--method emu with --dynamic: --engine runs the dynamic entry point in the CPU emulator")
	}
	graphs, err := atTheirRows(d, aPath, b)
	if err != nil {
		return false, err
	}
	var at *programAt
	if opts.Method == FF && len(graphs) > 0 {
		largest := slices.MaxFunc(graphs, func(x, y atM) int { return x.m - y.m })
		if at, err = newProgramAt(largest.a.Graph, largest.m, opts); err != nil {
			return false, fmt.Errorf("%s at m = %d: %w", aPath, largest.m, err)
		}
	}
	differ, undecided := 0, 0
	for i, g := range graphs {
		fmt.Fprintf(w, "graph %d, m = %d: ", i, g.m)
		var same bool
		if opts.Method == FF {
			same, err = at.verify(w, g.m, g.a, g.b)
		} else {
			same, err = floats(w, g.a, g.b, opts.Seed, opts.MaxBytes)
		}
		if errors.Is(err, errNoVerdict) { // this graph's; the others still have theirs
			fmt.Fprintf(w, "%v\n", err)
			undecided++
			continue
		}
		if err != nil {
			return false, err
		}
		if !same {
			differ++
		}
	}
	if differ > 0 {
		fmt.Fprintf(w, "%d of %d graph(s) differ from the program at their m\n", differ, len(graphs))
		return false, nil
	}
	if undecided > 0 {
		return false, fmt.Errorf("no verdict on %d of %d graph(s) of %s (said above)", undecided, len(graphs), b.Path)
	}
	fmt.Fprintf(w, "all %d graph(s) are the program at their m\n", len(graphs))
	return true, nil
}

// atM is a graph of the document and the program at the graph's m.
type atM struct {
	m    int
	a, b Named
}

// atTheirRows pairs every graph of b with the program at its m, checking
// them all before any is verified.
func atTheirRows(d *driver.Dynamic, aPath string, b *driver.Input) ([]atM, error) {
	if d == nil || d.Program == nil {
		return nil, fmt.Errorf("%s: no program with its rows marked", aPath)
	}
	ins, _ := d.Program.DynamicDims()
	k := slices.IndexFunc(ins, func(d int) bool { return d >= 0 })
	if k < 0 {
		return nil, fmt.Errorf("%s: the program has no dynamic input", aPath)
	}
	var graphs []atM
	for i, e := range b.File.Graphs {
		gb := e.Graph
		if len(gb.Inputs()) != len(ins) {
			return nil, fmt.Errorf("%s: graph %d has %d inputs, the program %d", b.Path, i, len(gb.Inputs()), len(ins))
		}
		s := gb.Tensors[gb.Inputs()[k]].Shape
		if s.Rank() <= ins[k] {
			return nil, fmt.Errorf("%s: graph %d's input %d is %v, with no dim %d for m", b.Path, i, k, s, ins[k])
		}
		m := s.Dim(ins[k])
		if m < d.Lo {
			return nil, fmt.Errorf("%s: graph %d has m = %d rows, below the range's %d", b.Path, i, m, d.Lo)
		}
		ga, err := d.Program.Bind(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", aPath, err)
		}
		if err := sameInputs(ga, gb); err != nil {
			return nil, fmt.Errorf("%s at m = %d and graph %d of %s: %v", aPath, m, i, b.Path, err)
		}
		graphs = append(graphs, atM{m, Named{aPath, ga, target.Arch{}}, Named{b.Path, gb, DocumentArch(b)}})
	}
	return graphs, nil
}

// programAt holds the program's fingerprints for the graphs of one m at a
// time. The program at the largest m is evaluated first and kept in a
// pool: at a smaller m the program is evaluated on the first rows of its
// inputs (ffverify.Pool.Rows) rather than on inputs drawn again, still on
// its own, so that no verdict rests on its rows being independent.
type programAt struct {
	check       Options // FF, normalized
	largestRows int
	pool        *ffverify.Pool     // the program at largestRows, under the key ""; empty where it would pass the memory limit
	rows        int                // the m of v; 0 before the first graph
	v           *ffverify.Verifier // the program at rows; nil where it would pass the memory limit
}

// newProgramAt evaluates largest, the program at its largest m, on every
// draw, unless that would pass the memory limit.
func newProgramAt(largest *kernel.Graph, m int, check Options) (*programAt, error) {
	full, err := ffverify.New(largest, check.ff())
	if err != nil && !memlimit.IsOver(err) {
		return nil, err
	}
	p := &programAt{check: check, largestRows: m, pool: ffverify.NewPool()}
	p.pool.Keep("", full)
	return p, nil
}

// verify verifies b against a, the program at m rows. Where keeping the
// program's fingerprints on every draw, or checking b beside them, would
// pass the memory limit, it checks b alone as a static check does (one
// draw at a time).
func (p *programAt) verify(w io.Writer, m int, a, b Named) (bool, error) {
	if p.rows != m {
		p.rows, p.v = 0, nil // the previous m's fingerprints go first
		var v *ffverify.Verifier
		var err error
		switch full := p.pool.Kept(""); {
		case full != nil && m == p.largestRows:
			v = full
		case full != nil:
			v, err = p.pool.Rows("", a.Graph)
		}
		if v == nil && err == nil { // none kept, or m inside an outer dim: not the first rows
			v, err = ffverify.New(a.Graph, p.check.ff())
		}
		if err != nil && !memlimit.IsOver(err) {
			return false, fmt.Errorf("%s at m = %d: %w", a.Path, m, err)
		}
		p.rows, p.v = m, v
	}
	if p.v == nil {
		return p.alone(w, a, b)
	}
	r, err := p.v.Verify(b.Graph)
	if memlimit.IsOver(err) {
		return p.alone(w, a, b)
	}
	if err != nil {
		return false, fmt.Errorf("%s and %s: %w", a.Path, b.Path, err)
	}
	return verdict(w, r, p.v.Options(), a, b, p.check)
}

// alone checks b against a one draw at a time, within the memory limit:
// the fingerprints kept so far are let go first, and the graphs after it
// make their own.
func (p *programAt) alone(w io.Writer, a, b Named) (bool, error) {
	p.pool.Drop("")
	p.v = nil
	return fields(w, a, b, p.check)
}
