package cuda

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// cExpr checks the C text of an index expression as a C compiler types it:
// it returns the value of the text with the variables of env, and an error
// where an int-typed sum or product may exceed a C int, given each
// variable's largest value in most (signed overflow: undefined, in
// practice a wrap that reads far outside a tile). Constants past an int
// are long long, as C types such literals; so is static_cast<long long>.
type cExpr struct {
	s    string
	pos  int
	env  map[string]int64 // values to compute with
	most map[string]int64 // largest values, for the overflow check
}

// value is a subexpression: its value, its largest value and its type.
type value struct {
	v, most int64
	long    bool
}

func (p *cExpr) fail(format string, args ...any) {
	panic(fmt.Sprintf("%q at %d: %s", p.s, p.pos, fmt.Sprintf(format, args...)))
}

func (p *cExpr) skip() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *cExpr) eat(tok string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *cExpr) checked(v value) value {
	if !v.long && v.most > maxInt {
		p.fail("an int reaches %d", v.most)
	}
	return v
}

func (p *cExpr) sum() value {
	v := p.product()
	for {
		switch {
		case p.eat("+"):
			w := p.product()
			v = p.checked(value{v.v + w.v, v.most + w.most, v.long || w.long})
		case p.eat("-"):
			w := p.product()
			v = value{v.v - w.v, v.most, v.long || w.long}
		default:
			return v
		}
	}
}

func (p *cExpr) product() value {
	v := p.factor()
	for {
		var op byte
		switch {
		case p.eat("*"):
			op = '*'
		case p.eat("/"):
			op = '/'
		case p.eat("%"):
			op = '%'
		default:
			return v
		}
		w := p.factor()
		long := v.long || w.long
		switch op {
		case '*':
			v = p.checked(value{v.v * w.v, v.most * w.most, long})
		case '/':
			v = value{v.v / w.v, v.most / w.most, long}
		case '%':
			v = value{v.v % w.v, min(v.most, w.most-1), long}
		}
	}
}

func (p *cExpr) factor() value {
	switch {
	case p.eat("static_cast<long long>("):
		v := p.sum()
		if !p.eat(")") {
			p.fail("want )")
		}
		v.long = true
		return v
	case p.eat("("):
		v := p.sum()
		if !p.eat(")") {
			p.fail("want )")
		}
		return v
	}
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && (unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos])) || p.s[p.pos] == '_') {
		p.pos++
	}
	tok := p.s[start:p.pos]
	if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return value{n, n, n > maxInt}
	}
	most, ok := p.most[tok]
	if !ok {
		p.fail("unknown name %q", tok)
	}
	return value{p.env[tok], most, false}
}

// evalC returns the value of the C text s and an error if it overflows an
// int (see cExpr).
func evalC(s string, env, most map[string]int64) (v int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p := &cExpr{s: s, env: env, most: most}
	v = p.sum().v
	if p.skip(); p.pos != len(p.s) {
		p.fail("trailing text")
	}
	return v, nil
}

// An index expression prints as C that computes its value without an int
// overflowing, in 64 bits where it may pass 2^31 (found by review: the
// origin of a block's tile in a [65536, 65536] tensor was bx * 16777216
// in int), and as before, in int, where it cannot.
func TestExprPrintsInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"bx", "by", "it", "r", "v"}
	for trial := range 20000 {
		most := map[string]int64{}
		env := map[string]int64{}
		vars := make([]*expr, len(names))
		for i, n := range names {
			hi := 1 + rng.IntN(1<<(1+rng.IntN(16)))
			vars[i] = vr(n, hi)
			most[n], env[n] = int64(hi-1), int64(rng.IntN(hi))
		}
		x := cst(0)
		for range 1 + rng.IntN(4) {
			term := mul(vars[rng.IntN(len(vars))], 1<<rng.IntN(31)+rng.IntN(3))
			switch rng.IntN(4) {
			case 0:
				term = div(term, 1+rng.IntN(64))
			case 1:
				term = mod(term, 1+rng.IntN(1<<20))
			}
			x = add(x, term)
		}
		s := x.String()
		got, err := evalC(s, env, most)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		ienv := map[string]int{}
		for n, v := range env {
			ienv[n] = int(v)
		}
		if want := int64(x.eval(ienv)); got != want {
			t.Fatalf("trial %d: %s = %d, want %d (env %v)", trial, s, got, want, env)
		}
	}
	for _, tt := range []struct {
		x    *expr
		want string
	}{
		{add(mul(vr("bx", 256), 16777216), mul(vr("it", 1024), 64)), "static_cast<long long>(bx) * 16777216 + it * 64"},
		{add(mul(vr("r", 4), 1<<30), vr("j", 64)), "static_cast<long long>(r) * 1073741824 + j"},
		{add(mul(vr("bx", 2), 1<<30), mul(vr("by", 3), 1<<30-1)), "static_cast<long long>(bx * 1073741824) + by * 1073741823"},
		{add(mul(vr("bx", 256), 4096), vr("j", 64)), "bx * 4096 + j"},
	} {
		if got := tt.x.String(); got != tt.want {
			t.Errorf("%s, want %s", got, tt.want)
		}
	}
}

// The offsets the emitted code computes into device tensors of 2^31
// elements or more stay exact (found by review: three such kernels).
func TestOffsetsIntoLargeTensors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		most      map[string]int64
	}{
		{"rows of a [65536, 65536] input, grid 256", `{"format":"mirage-ugraph","version":1,"name":"bc","graphs":[{"ops":[
{"op":"input","shape":[65536,65536],"dtype":"float16"},
{"op":"customized","in":[0],"block":{"grid":[256,1,1],"block_dim":[128,1,1],"forloop_range":1024,"reduction_dimx":64,"ops":[
 {"op":"input","shape":[65536,65536],"dtype":"float16","imap":[0,-1,-1],"fmap":1},
 {"op":"exp","in":[0]},
 {"op":"forloop_accum","in":[1],"accum":"none"},
 {"op":"output","in":[2],"omap":[0,-1,-1]}]}}],"outputs":[1]}]}`,
			map[string]int64{"bx": 255, "it": 1023, "r": 255, "v": 7, "j": 63}},
		{"a [65536, 65536] matmul output, grid 512x512", `{"format":"mirage-ugraph","version":1,"name":"bo","graphs":[{"ops":[
{"op":"input","shape":[65536,64],"dtype":"float16"},
{"op":"input","shape":[64,65536],"dtype":"float16"},
{"op":"customized","in":[0,1],"block":{"grid":[512,512,1],"block_dim":[128,1,1],"forloop_range":1,"reduction_dimx":64,"ops":[
 {"op":"input","shape":[65536,64],"dtype":"float16","imap":[0,-1,-1],"fmap":-1},
 {"op":"input","shape":[64,65536],"dtype":"float16","imap":[-1,1,-1],"fmap":-1},
 {"op":"matmul","in":[0,1]},
 {"op":"forloop_accum","in":[2],"accum":"none"},
 {"op":"output","in":[3],"omap":[0,1,-1]}]}}],"outputs":[2]}]}`,
			map[string]int64{"bx": 511, "by": 511, "it": 0, "r": 127, "v": 7, "j": 127}},
		{"rows of 2^30 elements, tile [4, 64]", `{"format":"mirage-ugraph","version":1,"name":"br","graphs":[{"ops":[
{"op":"input","shape":[4,1073741824],"dtype":"float16"},
{"op":"customized","in":[0],"block":{"grid":[1,1,1],"block_dim":[128,1,1],"forloop_range":16777216,"reduction_dimx":64,"ops":[
 {"op":"input","shape":[4,1073741824],"dtype":"float16","imap":[-1,-1,-1],"fmap":1},
 {"op":"forloop_accum","in":[0],"accum":"sum"},
 {"op":"output","in":[1],"omap":[-1,-1,-1]}]}}],"outputs":[1]}]}`,
			map[string]int64{"bx": 0, "it": 16777215, "r": 3, "v": 7, "j": 63}},
	} {
		f, err := kernel.Decode(strings.NewReader(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res, err := Emit("big", f.Graphs[0].Graph, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checked := 0
		for _, line := range strings.Split(string(res.Files[0].Data), "\n") {
			// A pointer into a device tensor: "src + OFFSET" or "= tN + OFFSET".
			for _, lead := range []string{"src + ", " = t0 + ", " = t1 + ", " = t2 + ", " = t3 + "} {
				i := strings.Index(line, lead)
				if i < 0 {
					continue
				}
				off := line[i+len(lead):]
				depth, end := 0, len(off)
			scan:
				for k, c := range off {
					switch {
					case c == '(':
						depth++
					case c == ')' && depth == 0, (c == ';' || c == ',' || c == ':') && depth == 0:
						end = k
						break scan
					case c == ')':
						depth--
					}
				}
				env := map[string]int64{}
				if _, err := evalC(off[:end], env, tc.most); err != nil {
					t.Errorf("%s: %s: %v", tc.name, strings.TrimSpace(line), err)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Errorf("%s: no offset into a device tensor found", tc.name)
		}
	}
}

// BenchmarkEmitChain emits a chain of 20,000 exps: codegen's lookups of
// each op's launch are to stay near linear in the ops (found by review:
// scans made emit quadratic, 40 s at 40,000 ops, past superopt's limit).
// go test ./codegen/cuda -run XXX -bench EmitChain
func BenchmarkEmitChain(b *testing.B) {
	g := kernel.New()
	t, err := g.AddInput(ugraph.MustShape(16, 64), ugraph.Float16)
	if err != nil {
		b.Fatal(err)
	}
	for range 20000 {
		if t, err = g.Add(ugraph.OpExp, ugraph.Attr{}, t); err != nil {
			b.Fatal(err)
		}
	}
	if err := g.MarkOutput(t); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Emit("chain", g, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
