package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirage-go/mirage/internal/atomicfile"
)

// runChild runs the command line in a process of its own and returns its
// exit status and stderr; a run that has not ended after a minute (one
// that hangs on a FIFO, or reads /dev/zero until memory runs out) is
// killed and fails the test. The minute is a hang's bound, not a speed.
func runChild(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	c := startMirage(t, env, args...)
	done := make(chan int, 1)
	go func() { done <- c.wait() }()
	select {
	case code := <-done:
		return code, c.stderrString()
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running after a minute; killed\n%s", args, c.stderrString())
		return 0, ""
	}
}

// Every file the tool reads is a regular file read up to a cap: /dev/zero
// (linked in, or named) and FIFOs, as any input, are refused at once with
// exit status 2 and the file's name.
func TestHostileInputFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zero := func(name string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	program := examplePath("rmsnorm_matmul.py")
	shards := filepath.Dir(zero("shards/p.shard-1-of-2.json"))
	history := filepath.Dir(fifo("history/history.jsonl"))
	zeroHistory := filepath.Dir(zero("zhistory/history.jsonl"))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"merge, a shard linked to /dev/zero", []string{"merge", shards, "-o", filepath.Join(dir, "out")}, "p.shard-1-of-2.json: not a regular file (a character device)"},
		{"bench --compare /dev/zero", []string{"bench", "--only-paths", program, "--compare", "/dev/zero", "-o", filepath.Join(dir, "b")}, "/dev/zero: not a regular file"},
		{"bench --compare FIFO", []string{"bench", "--only-paths", program, "--compare", fifo("base.json"), "-o", filepath.Join(dir, "b")}, "base.json: not a regular file (a named pipe)"},
		{"bench --history, a FIFO", []string{"bench", "--history", history}, "history.jsonl: not a regular file (a named pipe)"},
		{"bench --history, /dev/zero", []string{"bench", "--history", zeroHistory}, "history.jsonl: not a regular file"},
		{"bench, a FIFO program", []string{"bench", "--only-paths", fifo("team/layer.py"), "-o", filepath.Join(dir, "b")}, "layer.py: not a program"},
		{"show, a FIFO program", []string{"show", fifo("prog.py")}, "prog.py: not a regular file (a named pipe)"},
		{"show, a FIFO μGraph", []string{"show", fifo("g.ugraph.json")}, "g.ugraph.json: not a regular file (a named pipe)"},
		{"verify, a μGraph linked to /dev/zero", []string{"verify", program, zero("z.ugraph.json")}, "z.ugraph.json: not a regular file"},
		{"superopt --profile /dev/zero", []string{"superopt", program, "--profile", "/dev/zero", "-o", filepath.Join(dir, "s")}, "--profile: /dev/zero: not a regular file"},
		{"superopt --profile FIFO", []string{"superopt", program, "--profile", fifo("profile.json"), "-o", filepath.Join(dir, "s")}, "profile.json: not a regular file (a named pipe)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runChild(t, nil, tt.args...)
			if code != exitUnusable || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUnusable, tt.want)
			}
		})
	}
	for _, out := range []string{"out", "b", "s"} {
		if _, err := os.Stat(filepath.Join(dir, out)); err == nil {
			t.Errorf("a refused run wrote %s", out)
		}
	}
}

// An empty path, as a path flag or an argument, is unusable input: it
// would otherwise read as the flag left out (an empty --compare comparing
// with nothing and passing, an empty --history running the whole suite) or as the
// working directory. Nothing is run or written.
func TestEmptyPaths(t *testing.T) {
	program, err := filepath.Abs(examplePath("rmsnorm_matmul.py"))
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "frontend", "testdata", "scripts", "rmsnorm_args.py"))
	t.Chdir(t.TempDir()) // where a run taking '' for . would write
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--only-paths", program, "--compare", ""}, "--compare '': an empty path"},
		{[]string{"bench", "--history", ""}, "--history '': an empty path"},
		{[]string{"bench", "--only-paths", program, "-o", ""}, "--out '': an empty path"},
		{[]string{"bench", "--only-paths", program, "--profile="}, "--profile '': an empty path"},
		{[]string{"bench", ""}, "argument 1 is ''"},
		{[]string{"superopt", program, "-o", ""}, "--out '': an empty path"},
		{[]string{"superopt", program, "--cache", ""}, "--cache '': an empty path"},
		{[]string{"superopt", program, "--profile", ""}, "--profile '': an empty path"},
		{[]string{"superopt", program, "--shard", "0/2", "--shard-dir", ""}, "--shard-dir '': an empty path"},
		{[]string{"superopt", ""}, "argument 1 is ''"},
		{[]string{"merge", ""}, "argument 1 is ''"},
		{[]string{"merge", "shards", "-o", ""}, "--out '': an empty path"},
		{[]string{"emit", program, "-o", ""}, "--out '': an empty path"},
		{[]string{"show", ""}, "argument 1 is ''"},
		{[]string{"eval", ""}, "argument 1 is ''"},
		{[]string{"verify", program, ""}, "argument 2 is ''"},
		{[]string{"verify", "--engine-dir", "", program, program}, "--engine-dir '': an empty path"},
		{[]string{"show", "--cpuprofile", "", program}, "--cpuprofile '': an empty path"},
		// Other string flags: '' is no value of theirs either.
		{[]string{"superopt", program, "--buckets", "", "-o", "out"}, "--buckets '': an empty value"},
		{[]string{"superopt", program, "--config", "", "-o", "out"}, "--config '': an empty value"},
		{[]string{"emit", program, "--name", "", "-o", "out"}, "--name '': an empty value"},
		{[]string{"emit", program, "--name", "../x", "-o", "out"}, `--name "../x": a name, not a path`},
		{[]string{"verify", "--method", "", program, program}, "--method '': an empty value"},
		{[]string{"tune", "--program", "", "x.ugraph.json"}, "--program '': an empty value"},
	}
	for _, tt := range tests {
		code, stdout, stderr := mirage(t, tt.args...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, stdout, stderr, exitUnusable, tt.want)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("refused runs wrote %v", entries)
	}
	// A program's own arguments after -- may be empty strings.
	if code, _, stderr := mirage(t, "show", script, "--", "--file", ""); code != exitOK {
		t.Errorf("an empty program argument: exit %d, %s", code, stderr)
	}
}

// Two programs whose names a C identifier reads alike (my-layer and
// my_layer; 日本 and 中文, both __) write the same CUDA files: the second
// into the same directory is refused before its search, with exit status
// 2, and the first program's set stays whole.
func TestNamesThatCollide(t *testing.T) {
	src := func(n int) string {
		return fmt.Sprintf("import mirage as mi\ngraph = mi.new_kernel_graph()\nA = graph.new_input(dims=(8, %d), dtype=mi.float16)\nB = graph.new_input(dims=(8, %d), dtype=mi.float16)\ngraph.mark_output(graph.mul(graph.silu(A), B))\n", n, n)
	}
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct{ first, second, cname string }{
		{"my-layer", "my_layer", "my_layer"},
		{"日本", "中文", "__"},
	} {
		out := filepath.Join(dir, "out-"+tt.cname)
		first, second := write(tt.first+".py", 1024), write(tt.second+".py", 512)
		if code, _, stderr := mirage(t, "superopt", first, "-o", out, "--no-cache", "--time-limit", "20s"); code != exitOK {
			t.Fatalf("superopt %s: exit %d: %s", tt.first, code, stderr)
		}
		code, stdout, stderr := mirage(t, "superopt", second, "-o", out, "--no-cache", "--time-limit", "20s")
		want := fmt.Sprintf("%s.cu and %s.h in %s belong to %s's set (%s.manifest.json)", tt.cname, tt.cname, out, tt.first, tt.first)
		if code != exitUnusable || !strings.Contains(stderr, want) || stdout != "" || strings.Contains(stderr, "searched") {
			t.Errorf("superopt %s after %s: exit %d, stdout %q, stderr %q; want 2 and %q, before any search", tt.second, tt.first, code, stdout, stderr, want)
		}
		if _, err := atomicfile.CheckSet(out, tt.first+".manifest.json"); err != nil {
			t.Errorf("%s's set: %v", tt.first, err)
		}
		if _, err := os.Stat(filepath.Join(out, tt.second+".ugraph.json")); err == nil {
			t.Errorf("%s's μGraph was written", tt.second)
		}
		// --no-emit writes no CUDA: nothing collides.
		if code, _, stderr := mirage(t, "superopt", second, "-o", out, "--no-cache", "--time-limit", "20s", "--no-emit"); code != exitOK {
			t.Errorf("superopt --no-emit %s: exit %d: %s", tt.second, code, stderr)
		}
		// The first program again with --no-emit: its earlier CUDA goes
		// with the rest of its previous set (left there, it would pass
		// for the new document's); then back as it was.
		if code, _, stderr := mirage(t, "superopt", first, "-o", out, "--no-cache", "--time-limit", "20s", "--no-emit"); code != exitOK {
			t.Errorf("superopt --no-emit %s: exit %d: %s", tt.first, code, stderr)
		}
		for _, name := range []string{tt.cname + ".cu", tt.cname + ".h"} {
			if _, err := os.Stat(filepath.Join(out, name)); err == nil {
				t.Errorf("superopt --no-emit %s left its earlier %s", tt.first, name)
			}
		}
		if names, err := atomicfile.CheckSet(out, tt.first+".manifest.json"); err != nil || !slices.Equal(names, []string{tt.first + ".ugraph.json"}) {
			t.Errorf("after --no-emit, %s's set holds %v (%v)", tt.first, names, err)
		}
		if code, _, stderr := mirage(t, "superopt", first, "-o", out, "--no-cache", "--time-limit", "20s"); code != exitOK {
			t.Fatalf("superopt %s again: exit %d: %s", tt.first, code, stderr)
		}
		// emit names its set by the program, as superopt does: the second
		// program's CUDA would take the first's files.
		emitted := filepath.Join(dir, "emit-"+tt.cname)
		if code, _, stderr := mirage(t, "emit", first, "-o", emitted); code != exitOK {
			t.Fatalf("emit %s: exit %d: %s", tt.first, code, stderr)
		}
		if code, _, stderr := mirage(t, "emit", second, "-o", emitted); code != exitUnusable || !strings.Contains(stderr, "belong to "+tt.first+"'s set") {
			t.Errorf("emit %s after %s: exit %d, %q", tt.second, tt.first, code, stderr)
		}
		if code, _, stderr := mirage(t, "emit", second, "-o", emitted, "--name", tt.cname+"_2"); code != exitOK {
			t.Errorf("emit %s --name: exit %d: %s", tt.second, code, stderr)
		}
		if _, err := atomicfile.CheckSet(emitted, tt.first+".manifest.json"); err != nil {
			t.Errorf("emit: %s's set: %v", tt.first, err)
		}
		// emit of the first program's own document into its superopt
		// directory replaces the CUDA in its set, whose manifest still
		// lists the document.
		doc := filepath.Join(out, tt.first+".ugraph.json")
		if code, _, stderr := mirage(t, "emit", doc, "-o", out); code != exitOK {
			t.Errorf("emit of %s's document into its own directory: exit %d: %s", tt.first, code, stderr)
		}
		if names, err := atomicfile.CheckSet(out, tt.first+".manifest.json"); err != nil || !slices.Contains(names, tt.first+".ugraph.json") || !slices.Contains(names, tt.cname+".cu") {
			t.Errorf("after emit, %s's set holds %v (%v); want its document and CUDA", tt.first, names, err)
		}
	}
}

// An output set is never left mixed. bench's -o with history.jsonl,
// results.json or latest.md there as a directory fails before the run,
// writing nothing, and superopt's with one of its files as a directory
// before its search; superopt whose rename of NAME.h fails midway (an
// immutable file) leaves the previous set whole, its manifest included.
func TestOutputSetsNeverMixed(t *testing.T) {
	team := writeTeam(t)
	for _, name := range []string{"history.jsonl", "results.json", "latest.md"} {
		out := filepath.Join(t.TempDir(), "results")
		if err := os.MkdirAll(filepath.Join(out, name), 0o755); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := mirage(t, "bench", "--only-paths", filepath.Join(team, "silu_mul.py"), "-o", out)
		if code != exitUnusable || !strings.Contains(stderr, name+" is a directory") || strings.Contains(stderr, "bench: silu_mul") {
			t.Errorf("%s a directory: exit %d, stdout %q, stderr %q; want 2 before the run", name, code, stdout, stderr)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 1 {
			t.Errorf("%s a directory: -o holds %v", name, entries)
		}
	}
	// superopt's files likewise: refused before the search.
	for _, name := range []string{"silu_mul.ugraph.json", "silu_mul.cu", "silu_mul.manifest.json"} {
		out := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(filepath.Join(out, name), 0o755); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := mirage(t, "superopt", filepath.Join(team, "silu_mul.py"), "-o", out, "--no-cache", "--time-limit", "20s")
		if code != exitUnusable || !strings.Contains(stderr, name+" is a directory: the run writes a file there") || strings.Contains(stderr, "part (") {
			t.Errorf("superopt with %s a directory: exit %d, stdout %q, stderr %q; want 2 before the search", name, code, stdout, stderr)
		}
	}

	dir := t.TempDir()
	program := filepath.Join(dir, "layer.py")
	os.WriteFile(program, []byte(teamPrograms["silu_mul.py"]), 0o644)
	out := filepath.Join(dir, "out")
	if code, _, stderr := mirage(t, "superopt", program, "-o", out, "--no-cache", "--time-limit", "20s"); code != exitOK {
		t.Fatalf("superopt: exit %d: %s", code, stderr)
	}
	before := snapshotDir(t, out)
	header := filepath.Join(out, "layer.h")
	if err := exec.Command("chattr", "+i", header).Run(); err != nil {
		t.Skipf("chattr +i (needs root and a file system that has it): %v", err)
	}
	defer exec.Command("chattr", "-i", header).Run()
	os.WriteFile(program, []byte(strings.ReplaceAll(teamPrograms["silu_mul.py"], "1024", "512")), 0o644)
	code, _, stderr := mirage(t, "superopt", program, "-o", out, "--no-cache", "--time-limit", "20s")
	if code != exitUnusable || !strings.Contains(stderr, "layer.h") {
		t.Errorf("superopt with layer.h immutable: exit %d, %s", code, stderr)
	}
	if after := snapshotDir(t, out); !maps.Equal(before, after) {
		t.Errorf("the output set went from %v to %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	if _, err := atomicfile.CheckSet(out, "layer.manifest.json"); err != nil {
		t.Errorf("the previous set: %v", err)
	}
}

// snapshotDir is a directory's files and their contents.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range es {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		m[e.Name()] = string(data)
	}
	return m
}

// Large inputs keep the budget: a 40,000-op program and a program with
// 1,000 buckets, each under --time-limit and each interrupted by SIGTERM,
// end with their answer (exit 0) and a whole output set. (How soon they
// end is measured by hand, not here.)
func TestLargeInputsEndWithTheirAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	dir := t.TempDir()
	ops := filepath.Join(dir, "ops.py")
	os.WriteFile(ops, []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
for i in range(10000):
    X = g.relu(g.mul(g.exp(g.matmul(X, W)), X))
g.mark_output(X)
`), 0o644)
	buckets := filepath.Join(dir, "buckets.py")
	os.WriteFile(buckets, []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W))
`), 0o644)
	var sizes []string
	for b := 1; b <= 1000; b++ {
		sizes = append(sizes, fmt.Sprint(b))
	}
	dynamic := []string{"--dynamic", "X:0=1..1000", "--buckets", strings.Join(sizes, ",")}
	for _, tt := range []struct {
		name    string
		args    []string
		sigterm bool
		want    string // in stdout
	}{
		// 40,000 ops: this case is about a run that cannot finish
		// inside its limit. Once the stitched answers' checks shared
		// their parts' products, 10,000 ops could finish inside 4 s
		// (3.8 s here), and CI's machine ran all of 20,000 in 4.0 s;
		// 40,000 take 10 s here, seven times 1.5 s.
		{"40,000 ops, --time-limit", []string{ops, "--time-limit", "1500ms"}, false, "(stopped: time limit)"},
		{"40,000 ops, SIGTERM", []string{ops}, true, "(stopped: interrupted)"},
		{"1,000 buckets, --time-limit", append([]string{buckets, "--time-limit", "4s"}, dynamic...), false, "1000 bucket(s)"},
		{"1,000 buckets, SIGTERM", append([]string{buckets}, dynamic...), true, "(stopped: interrupted)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			c := startMirage(t, nil, append([]string{"superopt", "-o", out, "--no-cache"}, tt.args...)...)
			if tt.sigterm {
				c.waitForStderr(t, "time budget")
				time.Sleep(time.Second) // well inside either run, on a faster machine too
				c.cmd.Process.Signal(syscall.SIGTERM)
			}
			done := make(chan int, 1)
			go func() { done <- c.wait() }()
			var code int
			select {
			case code = <-done:
			case <-time.After(5 * time.Minute):
				c.cmd.Process.Kill()
				t.Fatalf("still running after 5 minutes\n%s", c.stderrString())
			}
			if code != exitOK || !strings.Contains(c.stdout.String(), tt.want) {
				t.Errorf("exit %d, stdout %q; want 0 and %q\n%s", code, firstLine(c.stdout.String()), tt.want, c.stderrString())
			}
			name := strings.TrimSuffix(filepath.Base(tt.args[0]), ".py")
			if files, err := atomicfile.CheckSet(out, name+".manifest.json"); err != nil || len(files) != 4 {
				t.Errorf("the output set: %v, %v", files, err)
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// A dynamic range as wide as cuBLASLt takes: an fp32 matmul's m up to
// 8388608 rows. On the runtime's SIMT GEMM (16 rows a block of grid.y,
// 65535 of them) the emitted code stopped at 1048560 and such a range
// was refused before any search (driver's TestCheckLowers keeps that
// check, on OwnGEMM's code); through cuBLASLt the whole range lowers, and
// superopt writes one entry point for it.
func TestDynamicRangeOfCuBLASLt(t *testing.T) {
	dir := t.TempDir()
	program := filepath.Join(dir, "p.py")
	os.WriteFile(program, []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 256), dtype=mi.float32)
W = g.new_input(dims=(256, 256), dtype=mi.float32)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W))
`), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := mirage(t, "superopt", program, "--dynamic", "X:0=1..8388608", "--time-limit", "5s", "-o", out, "--no-cache")
	if code != exitOK || !strings.Contains(stdout, "CUDA, one entry point for m in 1..8388608") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and one entry point for the range", code, stdout, stderr)
	}
	h, err := os.ReadFile(filepath.Join(out, "p.h"))
	if err != nil || !strings.Contains(string(h), "#define MIRAGE_P_M_MAX 8388608") || !strings.Contains(string(h), "-lcublasLt") {
		t.Errorf("p.h: %v, want m up to 8388608 and cuBLASLt linked:\n%s", err, h)
	}
}

// A flag a command does not have is explained: a typo of one of its own
// (the nearest), a flag of other commands (which), and for a command that
// reads programs, where a program's own arguments go; so is a count of
// files it does not take.
func TestUnknownFlags(t *testing.T) {
	prog := examplePath("rmsnorm_matmul.py")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"superopt", prog, "--time-limt", "30s"}, "unknown flag: --time-limt (did you mean --time-limit?)"},
		{[]string{"show", prog, "--estimat"}, "unknown flag: --estimat (did you mean --estimate?)"},
		{[]string{"show", prog, "-o", "d"}, "unknown shorthand flag: 'o' in -o (a flag of mirage bench, emit, merge, superopt and tune, not of show; a program's own arguments go after --: mirage show FILE -- --bs 8)"},
		{[]string{"emit", prog, "--time-limit", "30s"}, "unknown flag: --time-limit (a flag of mirage bench and superopt, not of emit; a program's own arguments go after --"},
		{[]string{"superopt", prog, "--bs", "8"}, "unknown flag: --bs (a program's own arguments go after --: mirage superopt FILE -- --bs 8)"},
		{[]string{"bench", "--candidate", "3"}, "unknown flag: --candidate (a flag of mirage emit, eval, show and verify, not of bench)"},
		{[]string{"version", "--zzz"}, "unknown flag: --zzz"},
		// And a count of files a command does not take.
		{[]string{"eval"}, "eval takes one file (usage: mirage eval FILE"},
		{[]string{"show", prog, "16"}, "show takes one file, not 2 (usage: mirage show FILE [-- PROGRAM-ARGS] [flags]; a program's own arguments go after --"},
		{[]string{"verify", prog}, "verify takes two files (usage: mirage verify A B"},
	} {
		code, stdout, stderr := mirage(t, tt.args...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, stdout, stderr, exitUnusable, tt.want)
		}
	}
}

// A set's manifest given where a μGraph document is wanted says so.
func TestManifestIsNoDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.manifest.json")
	os.WriteFile(path, []byte(`{"owner": "p", "files": []}`), 0o644)
	for _, cmd := range []string{"emit", "show", "eval"} {
		if code, _, stderr := mirage(t, cmd, path); code != exitUnusable || !strings.Contains(stderr, "is the manifest of a set of files") || !strings.Contains(stderr, "NAME.ugraph.json") {
			t.Errorf("%s of a manifest: exit %d, %q", cmd, code, stderr)
		}
	}
}
