package frontend

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// boundCases are programs that run into a bound of the front-end: each must
// end with an error at its line, not a hang or an exhausted memory.
var boundCases = []struct {
	name string
	src  string
	line int
	want string
}{
	{"string doubled", src("s = 'x'", "for i in range(40):", "    s = s + s"), 3, "builds more than 64 MiB of strings, lists and other values"},
	{"string doubled in place", src("s = 'x'", "for i in range(40):", "    s += s"), 3, "builds more than 64 MiB"},
	{"list doubled in place", src("l = [0]", "for i in range(40):", "    l += l"), 3, "builds more than 64 MiB"},
	{"list extended by itself", src("l = [0]", "for i in range(40):", "    l.extend(l)"), 3, "builds more than 64 MiB"},
	{"string repeated in place", src("s = 'x'", "for i in range(40):", "    s *= 2"), 3, "builds more than 64 MiB"},
	{"list repeated", src("z = [0] * (1 << 29)"), 1, "builds more than 64 MiB"},
	{"list comprehension of large strings", src("l = ['x' * 1000000 for i in range(100000)]"), 1, "builds more than 64 MiB"},
	{"list comprehension of a billion elements", src("l = [i for i in range(1000000000)]"), 1, "ran for more than 10000000 steps"},
	{"list of a range", src("l = list(range(2147483647))"), 1, "builds more than 64 MiB"},
	{"sorted range", src("x = 1", "l = sorted(range(2147483647))"), 2, "builds more than 64 MiB"},
	{"join", src("s = 'x'", "for i in range(40):", "    s = ''.join([s, s])"), 3, "builds more than 64 MiB"},
	{"join of a repeated string", src("s = 'x' * 1000000", "t = ','.join([s] * 1000)"), 2, "builds more than 64 MiB"},
	{"join as a value", src("j = ''.join", "s = 'x'", "for i in range(40):", "    s = j([s, s])"), 4, "builds more than 64 MiB"},
	{"join by getattr", src("j = getattr('', 'join')", "s = 'x'", "for i in range(40):", "    s = j([s, s])"), 4, "builds more than 64 MiB"},
	{"replace", src("s = 'x'", "for i in range(40):", "    s = s.replace('x', 'xx')"), 3, "builds more than 64 MiB"},
	{"format", src("s = 'x'", "for i in range(40):", "    s = '{}{}'.format(s, s)"), 3, "builds more than 64 MiB"},
	{"percent", src("s = 'x'", "for i in range(40):", "    s = '%s%s' % (s, s)"), 3, "builds more than 64 MiB"},
	{"int squared", src("n = 3", "for i in range(40):", "    n = n * n"), 3, "builds more than 64 MiB"},
	{"int shifted", src("n = 1", "while True:", "    n = n << 500"), 3, "builds more than 64 MiB"},
	{"indexed target with a call", src("d = {'k': 'x'}", "def k():", "    return 'k'", "for i in range(40):", "    d[k()] += d['k']"), 5, "builds more than 64 MiB"},
	{"list printed", src("l = [0]", "for i in range(40):", "    l = [l, l]", "s = str(l)"), 4, "builds more than 64 MiB"},
	{"list formatted", src("l = [0]", "for i in range(40):", "    l = [l, l]", "s = '{}'.format(l)"), 4, "builds more than 64 MiB"},
	{"slices of a list kept", src("l = [0] * 1000000", "keep = [l[:] for i in range(100)]"), 2, "builds more than 64 MiB"},
	{"reversed strings kept", src("s = 'x' * 1000000", "keep = [s[::-1] for i in range(100)]"), 2, "builds more than 64 MiB"},
	{"items of a dict kept", src("d = {i: i for i in range(100000)}", "keep = [d.items() for i in range(100)]"), 2, "builds more than 64 MiB"},
	{"splits kept", src("s = 'x ' * 1000000", "keep = [s.split() for i in range(100)]"), 2, "builds more than 64 MiB"},
	{"upper cases kept", src("s = 'x' * 1000000", "keep = [s.upper() for i in range(100)]"), 2, "builds more than 64 MiB"},
	{"star arguments kept", src("l = [0] * 1000000", "def f(*a):", "    return a", "keep = [f(*l) for i in range(100)]"), 4, "builds more than 64 MiB"},
	{"deep list printed", src("l = []", "for i in range(2000):", "    l = [l]", "print(l)"), 4, "the value nests more than 1000 deep"},
}

func TestBounds(t *testing.T) {
	for _, tt := range boundCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("prog.py", []byte(tt.src), Options{Stdout: io.Discard})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Filename != "prog.py" || e.Line != tt.line || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("err = %v\nwant prog.py:%d: ...%s...", err, tt.line, tt.want)
			}
		})
	}
}

func TestMaxAlloc(t *testing.T) {
	for _, tt := range []struct {
		maxAlloc int64
		lines    []string
		line     int // 0: the program loads
		want     string
	}{
		{1000, []string{"s = 'x' * 1000"}, 0, ""},
		{1000, []string{"s = 'x' * 1001"}, 5, "the program builds more than 1000 bytes of strings"},
		{1000, []string{"s = 'x' * 600", "t = s + s"}, 6, "more than 1000 bytes"},
		{1000, []string{"l = [0] * 62"}, 0, ""},
		{1000, []string{"l = [0] * 63"}, 5, "more than 1000 bytes"},
		{0, []string{"s = 'x' * (64 << 20)"}, 0, ""},
		{0, []string{"s = 'x' * (64 << 20)", "t = s + 'y'"}, 6, "more than 64 MiB"},
	} {
		lines := append(tt.lines, "Y = g.exp(X)")
		_, err := Load("prog.py", []byte(withHeader(lines...)), Options{Stdout: io.Discard, MaxAlloc: tt.maxAlloc})
		var e *Error
		switch {
		case tt.line == 0 && err != nil:
			t.Errorf("MaxAlloc %d, %q: %v", tt.maxAlloc, tt.lines, err)
		case tt.line != 0 && (!errors.As(err, &e) || e.Line != tt.line || !strings.Contains(e.Msg, tt.want)):
			t.Errorf("MaxAlloc %d, %q: err = %v, want prog.py:%d: ...%s...", tt.maxAlloc, tt.lines, err, tt.line, tt.want)
		}
	}
}

func TestSourceSize(t *testing.T) {
	prog := withHeader("Y = g.exp(X)")
	fits := prog + "#" + strings.Repeat("x", MaxSourceSize-len(prog)-2) + "\n"
	tooLarge := prog + "#" + strings.Repeat("x", MaxSourceSize-len(prog)-1) + "\n"
	if len(fits) != MaxSourceSize || len(tooLarge) != MaxSourceSize+1 {
		t.Fatalf("sizes %d, %d", len(fits), len(tooLarge))
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		src string
		ok  bool
	}{{fits, true}, {tooLarge, false}} {
		path := filepath.Join(dir, "big.py")
		if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err1 := Load(path, []byte(tt.src), Options{Stdout: io.Discard})
		_, err2 := LoadFile(path, Options{Stdout: io.Discard})
		for _, err := range []error{err1, err2} {
			if ok := err == nil; ok != tt.ok {
				t.Errorf("%d bytes: err = %v, want ok = %v", len(tt.src), err, tt.ok)
			}
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.Filename != path || e.Line != 0 || !strings.Contains(e.Msg, "larger than 1 MiB")) {
				t.Errorf("%d bytes: err = %v, want %s: ...larger than 1 MiB...", len(tt.src), err, path)
			}
		}
	}
}

// TestGuardKeepsMeaning runs programs that use each checked operation both
// as the loader runs them and in plain Starlark, and compares what they
// print and the errors they end with.
func TestGuardKeepsMeaning(t *testing.T) {
	for _, prog := range []string{
		src("a = [1]", "b = a", "b += [2]", "b += (3,)", "print(a, b, a == b)"),
		src("s = 'ab' * 2 + 'c'", "s += 'd'", "s *= 2", "n = 1", "n += 2", "n <<= 3", "print(s, n, 3 * 'x', 2 * [0], 1 + 2.5)"),
		src("print('%s-%d %r' % ('x', 3, 'y'), '%(a)s' % {'a': [1]}, '%d' % 4, 7 % 3, 7.5 % 2)"),
		src("print('{}{}'.format(1, 'z'), '{a}'.format(a=2), ','.join(['p', 'q']), 'aXa'.replace('a', 'bb'), 'aaa'.replace('a', 'b', 2))"),
		src("d = {'k': [1]}", "def key():", "    print('key')", "    return 'k'", "d[key()] += [2]", "print(d)"),
		src("class_ = {'v': 1}", "def get():", "    print('get')", "    return [class_]", "get()[0]['v'] += 5", "print(class_)"),
		src("n = 1 << 70", "print(n * n, n + n, n << 3, 1 << 2)"),
		src("print(list(range(3)) + sorted([3, 1]), tuple([1]), list(reversed([1, 2])), enumerate(['a']), zip([1], [2]), dict([(1, 2)]), set([1, 1]))"),
		src("j = getattr(',', 'join')", "f = '-'.join", "print(j(['1', '2']), f(['a', 'b']), getattr([], 'x', 'default'))"),
		src("l = [1]", "l.extend([2])", "s = set([1])", "print(s.union([2]), s.intersection([1]), l, {'a': 1} | {'b': 2})"),
		src("l = []", "l.append(l)", "print(str(l), repr('q'), str([1, (2,), {3: 4}]))"),
		src("x = 3", "while x > 0:", "    x -= 1", "print(x, [y + y for y in 'ab'.elems()], (lambda a, b=[1] + [2]: a + b)([0]))"),
		src("l = [1, 2, 3]", "s = 'abcd'", "k = 2", "print(l[1:], l[::-1], l[::k], s[1:3], s[::-1], s[::k], (1, 2)[:1], range(5)[1:], l[:][0])"),
		src("d = {'a': 1}", "print('a b  c'.split(), 'a,b'.split(','), 'a,b'.rsplit(',', 1), 'x\\ny'.splitlines(), 'a-b'.partition('-'), ' X '.strip().lower(), d.items(), d.keys(), d.values())"),
		src("def f(*a, **k):", "    return a, k", "print(f(*[1, 2], **{'x': 3}), f(*(4,)), max(*[1, 5]))"),
		src("print(1 + 'a')"),
		src("print([1] * 'x')"),
		src("print('%d' % 'x')"),
		src("print(''.join([1]))"),
		src("print((1).join)"),
		src("x = 1", "x += 'a'"),
		src("print([1][::0])"),
		src("def f(*a):", "    return a", "print(f(*1))"),
		src("def f(**k):", "    return k", "print(f(**[1]))"),
		src("print({}.items(1))"),
	} {
		var want bytes.Buffer
		th := &starlark.Thread{Print: func(_ *starlark.Thread, msg string) { want.WriteString(msg + "\n") }}
		_, err := starlark.ExecFileOptions(fileOptions, th, "prog.py", prog, nil)
		wantErr := ""
		if ev, ok := err.(*starlark.EvalError); ok {
			wantErr = ev.Msg
		} else if err != nil {
			t.Fatalf("%s: %v", prog, err)
		}

		var got bytes.Buffer
		_, err = Load("prog.py", []byte(src("import mirage as mi", "g = mi.new_kernel_graph()", "Y = g.exp(g.new_input(dims=(4,)))")+prog), Options{Stdout: &got})
		gotErr := ""
		if err != nil {
			gotErr = err.(*Error).Msg
		}
		if got.String() != want.String() || gotErr != wantErr {
			t.Errorf("%s\nprinted %q, error %q\nStarlark printed %q, error %q", prog, got.String(), gotErr, want.String(), wantErr)
		}
	}
}
