package absexpr

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mirage-go/mirage/absexpr/z3"
	"github.com/mirage-go/mirage/frontend"
)

// The search's real queries: testdata/search_NAME.tsv holds one line per
// distinct query that took over 20µs in a 60s search of examples/NAME.py,
// as "answer<TAB>microseconds<TAB>expression", the answer being the one the
// oracle gave before it had normal forms (Z3 with a 250ms timeout). They
// were recorded when expressions wrote a root mean square as rms(n, x);
// the loader writes each out as the derivation now does (writtenOut).

// workloadPrograms are the searched examples, with the targets Targets
// derives for them.
var workloadPrograms = []struct{ name, target string }{
	{"rmsnorm_matmul", "sum(4096, mul(div(in0, sqrt(mul(scalar, sum(4096, square(in0))))), in1))"},
	{"gated_mlp", "mul(silu(sum(4096, mul(in0, in1))), sum(4096, mul(in0, in2)))"},
	{"gqa", "sum(4096, mul(div(exp(sum(64, mul(in0, in1))), sum(4096, exp(sum(64, mul(in0, in1))))), in2))"},
}

// workloadQuery is one recorded query.
type workloadQuery struct {
	q      *Expr
	old    bool // the oracle's answer before normal forms
	micros int  // how long it took then
}

// workload is one program's recorded queries.
type workload struct {
	name    string
	target  *Expr
	queries []workloadQuery
}

var loadWorkloads = sync.OnceValues(func() ([]workload, error) {
	var ws []workload
	for _, p := range workloadPrograms {
		w := workload{name: p.name, target: MustParse(p.target)}
		f, err := os.Open(filepath.Join("testdata", "search_"+p.name+".tsv"))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), "\t")
			if len(fields) != 3 {
				f.Close()
				return nil, &os.PathError{Op: "parse", Path: f.Name(), Err: strconv.ErrSyntax}
			}
			q, err := Parse(fields[2])
			if err != nil {
				f.Close()
				return nil, err
			}
			q = writtenOut(q, map[*Expr]*Expr{})
			micros, _ := strconv.Atoi(fields[1])
			w.queries = append(w.queries, workloadQuery{q: q, old: fields[0] == "true", micros: micros})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
})

func workloads(tb testing.TB) []workload {
	tb.Helper()
	ws, err := loadWorkloads()
	if err != nil {
		tb.Fatal(err)
	}
	return ws
}

// TestWorkloadTargets checks that the targets above are what Targets
// derives for the examples.
func TestWorkloadTargets(t *testing.T) {
	for _, p := range workloadPrograms {
		prog, err := frontend.LoadFile(filepath.Join("..", "examples", p.name+".py"), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		targets, err := Targets(prog.Graph)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != 1 || targets[0].Key() != MustParse(p.target).Key() {
			t.Errorf("%s: Targets = %v, want [%s]", p.name, targets, p.target)
		}
	}
}

// TestWorkloadDecidedInGo replays the workload through the Go decisions
// alone: at least 95% of each program's queries must be decided there, and
// every query the oracle answered yes before must still be yes.
func TestWorkloadDecidedInGo(t *testing.T) {
	for _, w := range workloads(t) {
		ix := newTargetIndex([]*Expr{w.target})
		var decided, yeses, newYes int
		for _, wq := range w.queries {
			got, ok := ix.decide(wq.q)
			if !ok {
				t.Logf("%s: left to Z3: %s", w.name, wq.q)
				continue
			}
			decided++
			if got {
				yeses++
			}
			switch {
			case wq.old && !got:
				t.Errorf("%s: %s was a subexpression and is not any more", w.name, wq.q)
			case !wq.old && got:
				newYes++
				t.Logf("%s: new yes: %s", w.name, wq.q)
			}
		}
		n := len(w.queries)
		t.Logf("%s: %d queries, %d decided in Go (%.1f%%), %d yes (%d new)", w.name, n, decided, 100*float64(decided)/float64(n), yeses, newYes)
		if decided*100 < n*95 {
			t.Errorf("%s: %d of %d queries decided in Go, want at least 95%%", w.name, decided, n)
		}
	}
}

// TestWorkloadAgreesWithZ3 asks Z3 the workload's queries and compares its
// answers with the Go decisions. Z3 with the axioms never answers sat here
// (it proves, or it gives up), so agreement means: what Z3 proves, Go says
// yes to; and what Go says yes to, Z3 proves or gives up on, never refutes.
// By default it asks every query the oracle answered yes before and every
// 40th of the others; MIRAGE_Z3_WORKLOAD=all asks them all (minutes).
func TestWorkloadAgreesWithZ3(t *testing.T) {
	requireZ3(t)
	if testing.Short() {
		t.Skip("asks Z3 hundreds of queries")
	}
	everything := os.Getenv("MIRAGE_Z3_WORKLOAD") == "all"
	for _, w := range workloads(t) {
		o, err := NewOracle([]*Expr{w.target}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var qs []workloadQuery
		for i, wq := range w.queries {
			if everything || wq.old || i%40 == 0 {
				qs = append(qs, wq)
			}
		}
		type tally struct{ goYes, goNo, goUndecided int }
		var (
			mu     sync.Mutex
			counts = map[z3.Result]*tally{z3.Unsat: {}, z3.Sat: {}, z3.Unknown: {}}
			next   = make(chan workloadQuery)
			wg     sync.WaitGroup
		)
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for wq := range next {
					got, decided := o.index.decide(wq.q)
					r, err := o.prove(wq.q)
					if err != nil {
						t.Error(err)
						continue
					}
					mu.Lock()
					c := counts[r]
					switch {
					case !decided:
						c.goUndecided++
					case got:
						c.goYes++
					default:
						c.goNo++
					}
					mu.Unlock()
					if decided && (r == z3.Unsat && !got || r == z3.Sat && got) {
						t.Errorf("%s: %s: Z3 says %v, Go says %v", w.name, wq.q, r, got)
					}
				}
			}()
		}
		for _, wq := range qs {
			next <- wq
		}
		close(next)
		wg.Wait()
		o.Close()
		for _, r := range []z3.Result{z3.Unsat, z3.Sat, z3.Unknown} {
			c := counts[r]
			t.Logf("%s: of %d queries asked, Z3 %v on %d: Go yes %d, no %d, undecided %d",
				w.name, len(qs), r, c.goYes+c.goNo+c.goUndecided, c.goYes, c.goNo, c.goUndecided)
		}
	}
}

// BenchmarkWorkload replays each program's recorded queries through a fresh
// oracle, as the search asks them: one op is one replay, oracle included.
//
//	go test ./absexpr -run '^$' -bench Workload -benchtime 5x
func BenchmarkWorkload(b *testing.B) {
	requireZ3(b)
	for _, w := range workloads(b) {
		b.Run(w.name, func(b *testing.B) {
			var st Stats
			for b.Loop() {
				o, err := NewOracle([]*Expr{w.target}, Options{})
				if err != nil {
					b.Fatal(err)
				}
				for _, wq := range w.queries {
					if _, err := o.IsSubexpr(wq.q); err != nil {
						b.Fatal(err)
					}
				}
				st = o.Stats()
				o.Close()
			}
			b.ReportMetric(float64(len(w.queries)), "queries/op")
			b.ReportMetric(float64(st.FastYes+st.FastNo)/float64(len(w.queries))*100, "%go")
			b.ReportMetric(float64(st.Z3Calls), "z3calls/op")
			b.ReportMetric(float64(st.Z3Time.Microseconds())/1000, "z3ms/op")
		})
	}
}

// writtenOut is e with every rms(n, x) written out as the derivation
// writes a root mean square (rootMeanSquare). The recorded queries hold no
// square, sqrt or scalar of their own, so the substitution, applied to the
// targets' recorded form too, keeps each query's answer: what rms-def
// made of rms(n, x) before, the written-out form holds, with its scalar.
func writtenOut(e *Expr, done map[*Expr]*Expr) *Expr {
	if w, ok := done[e]; ok {
		return w
	}
	args := make([]*Expr, e.NumArgs())
	for i := range args {
		args[i] = writtenOut(e.Arg(i), done)
	}
	var w *Expr
	switch op := e.Op(); {
	case op == OpVar:
		w = e
	case op == OpRms:
		w = orPanic(rootMeanSquare(e.Size(), args[0]))
	case op == OpAdd:
		w = Add(args...)
	case op == OpMul:
		w = Mul(args...)
	case op == OpDiv:
		w = Div(args[0], args[1])
	case op == OpSum:
		w = Sum(e.Size(), args[0])
	case ops[op].bounded:
		w = orPanic(bounded(op, e.lo, e.hi, args))
	default:
		w = apply(op, args)
	}
	done[e] = w
	return w
}
