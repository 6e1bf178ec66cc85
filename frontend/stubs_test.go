package frontend

import (
	"bytes"
	"strings"
	"testing"
)

// Timing code as Mirage's scripts write it runs with the inert time and
// torch stubs: a stub's value compares as NaN does (false), in min and max
// too, and % and format print it as nan.
func TestTimingCodeWithStubs(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import time",
		"import torch",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(16, 256), dtype=mi.float16)",
		"g.mark_output(g.exp(X))",
		"best = 1e9",
		"for i in range(3):",
		"    t0 = time.time()",
		"    torch.cuda.synchronize()",
		"    dt = time.time() - t0",
		"    if dt < best:",
		"        best = dt",
		"    if dt > 10 or dt >= 10 or dt <= 0:",
		"        fail('a stub compared true')",
		"start = time.perf_counter()",
		"while time.perf_counter() - start < 1.0:",
		"    fail('the loop ran')",
		"print('%f' % best)",
		`print("%.3f" % 1.5)`,
		`print("{:.3f}".format(best))`,
		`print("{:.2f} ms".format(dt * 1000))`,
		`print("%.3f ms, %5.1f%%" % (dt, 12.34))`,
		"print(min(best, dt), max([dt, 2.5]), min(dt, 1, key=lambda x: x))", // as with NaN: the first is kept
		"msg = 'took %.1f'",
		"msg %= 2.25",
		"print(msg, 1 < 2, 'a' < 'b', [1] < [2])",
	)
	var out bytes.Buffer
	if _, err := Load("timing.py", []byte(prog), Options{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	want := "1000000000.000000\n1.500\n1000000000.000\nnan ms\nnan ms,  12.3%\n1e+09 <inert time.time()> <inert time.time()>\ntook 2.2 True True True\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	// An ordered comparison of values that do not compare is still an
	// error at its line.
	_, err := Load("bad.py", []byte(src("import mirage as mi", "g = mi.new_kernel_graph()", "g.mark_output(g.exp(g.new_input(dims=(4,))))", "x = 1 < 'a'")), Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.py:4:") || !strings.Contains(err.Error(), "int < string not implemented") {
		t.Errorf("1 < 'a': %v", err)
	}
}
