package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The tests in this file run the command as a separate process (this test
// binary, re-executed: TestMain runs the command line when
// childEnv is set), to signal, kill and starve it.
const (
	childEnv      = "MIRAGE_TEST_RUN_COMMAND"
	childFsizeEnv = "MIRAGE_TEST_FSIZE"      // RLIMIT_FSIZE in bytes: a disk that fills up
	childSlowEnv  = "MIRAGE_TEST_SLOW_STEPS" // atomicfile.SlowSteps: room to kill mid-write
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if s := os.Getenv(childFsizeEnv); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				panic(err)
			}
			// A write past the limit then fails with EFBIG instead of
			// the process dying of SIGXFSZ: as on a full disk.
			signal.Ignore(syscall.SIGXFSZ)
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				panic(err)
			}
		}
		if s := os.Getenv(childSlowEnv); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				panic(err)
			}
			atomicfile.SlowSteps = d
		}
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child is the command line running in a process of its own.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startMirage(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], args...)}
	c.cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, lockedWriter{&c.stderr}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill() })
	return c
}

// wait waits for the process and returns its exit status (-1 when a signal
// killed it).
func (c *child) wait() int {
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		panic(err)
	}
	return c.cmd.ProcessState.ExitCode()
}

// waitForStderr waits until the child has printed want on stderr.
func (c *child) waitForStderr(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(c.stderrString(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr after 2 minutes:\n%s", want, c.stderrString())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var stderrMu sync.Mutex // the child writes stderr while the test reads it

func (c *child) stderrString() string {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	return c.stderr.String()
}

// lockedWriter serializes writes with stderrString's reads.
type lockedWriter struct{ w *bytes.Buffer }

func (l lockedWriter) Write(p []byte) (int, error) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	return l.w.Write(p)
}

// gqa searches for about 10 s on 2 cores: long enough to interrupt.
var gqa = filepath.Join("..", "..", "examples", "gqa.py")

// A first SIGINT or SIGTERM ends the search; the command then verifies and
// writes what it found, says it was interrupted and exits 0. A second
// SIGINT exits at once with 130.
func TestSuperoptSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	for _, tt := range []struct {
		name    string
		signals []os.Signal
		code    int
		env     []string
	}{
		{"SIGINT", []os.Signal{os.Interrupt}, 0, nil},
		{"SIGTERM", []os.Signal{syscall.SIGTERM}, 0, nil},
		// The second signal must come before the run has stopped and
		// written its answer: slow writes keep it at that for seconds.
		{"SIGINT twice", []os.Signal{os.Interrupt, os.Interrupt}, 130, []string{childSlowEnv + "=500ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := startMirage(t, tt.env, "superopt", gqa, "--no-cache", "--json", "--workers", "2", "--time-limit", "5m", "-o", dir)
			c.waitForStderr(t, "time budget") // the run has begun
			time.Sleep(time.Second)           // and is searching
			for _, s := range tt.signals {
				if err := c.cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
				c.waitForStderr(t, "interrupted")
			}
			code := c.wait()
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, c.stderrString())
			}
			if code != 0 {
				return
			}
			var res superoptJSON
			var stopped struct {
				Stopped string `json:"stopped"`
			}
			if err := json.Unmarshal(c.stdout.Bytes(), &res); err != nil {
				t.Fatalf("%v:\n%s", err, c.stdout.String())
			}
			json.Unmarshal(c.stdout.Bytes(), &stopped)
			if stopped.Stopped != "interrupted" {
				t.Errorf("stopped %q, want interrupted", stopped.Stopped)
			}
			if len(res.Candidates) == 0 || !checkSet(t, dir, "gqa") {
				t.Errorf("no whole output set after the interrupt: %d candidates", len(res.Candidates))
			}
		})
	}
}

// The time limit covers the whole command: a limit far shorter than gqa's
// search (6.7 s on two cores) ends it with what was verified, "stopped":
// "time limit", exit 0; the program as written is always a candidate.
func TestSuperoptTimeLimitEndsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	dir := t.TempDir()
	code, out, errOut := mirage(t, "superopt", gqa, "--no-cache", "--json", "--workers", "2", "--time-limit", "500ms", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Stopped    string `json:"stopped"`
		Candidates []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "time limit" || len(res.Candidates) == 0 {
		t.Errorf("stopped %q with %d candidates, want a time limit with candidates", res.Stopped, len(res.Candidates))
	}
	checkSet(t, dir, "gqa")
}

// checkSet checks the output set of name in dir: when its manifest exists,
// every file it lists matches it (atomicfile.CheckSet), and the μGraph
// parses. It reports whether there was a manifest.
func checkSet(t *testing.T, dir, name string) bool {
	t.Helper()
	switch _, err := atomicfile.CheckSet(dir, name+".manifest.json"); {
	case errors.Is(err, fs.ErrNotExist):
		return false
	case err != nil:
		t.Error(err)
	}
	if _, err := kernel.ReadFile(filepath.Join(dir, name+".ugraph.json")); err != nil {
		t.Errorf("the set's μGraph: %v", err)
	}
	return true
}

// temps lists the temporary files in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, e := range es {
		if strings.Contains(e.Name(), ".tmp-") {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

// checkCache checks that every entry in the cache directory is a whole
// μGraph file.
func checkCache(t *testing.T, dir string) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".ugraph.json") {
			if _, err := kernel.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				t.Errorf("cache entry %s: %v", e.Name(), err)
			}
		}
	}
}

// SIGKILL at random points of superopt leaves the output directory and the
// cache consistent: a manifest that exists matches its files, and the next
// run leaves no temporary file behind. Runs alternate between two programs
// of one name (so that a set of one is never mistaken for the other's), and
// the writes are slowed (50 ms a step, about half of a run) so that many
// kills land in them.
func TestSuperoptKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the command many times")
	}
	out, cache := t.TempDir(), t.TempDir()
	programs := []string{ntrans, ntransVariant(t)}
	args := func(i int) []string {
		a := []string{"superopt", programs[i%2], "--workers", "2", "--cache", cache, "-o", out}
		if i%4 < 2 {
			a = append(a, "--no-cache")
		}
		return a
	}
	slow := []string{childSlowEnv + "=50ms"}
	// Whole runs give the span to kill in; they fill the cache.
	start := time.Now()
	for i := range 2 {
		if c := startMirage(t, slow, args(i+2)...); c.wait() != 0 {
			t.Fatalf("the run failed: %s", c.stderrString())
		}
	}
	span := time.Since(start) / 2
	rng := rand.New(rand.NewPCG(1, 2))
	manifests := 0
	const kills = 24
	for i := range kills {
		c := startMirage(t, slow, args(i)...)
		time.Sleep(time.Duration(rng.Int64N(int64(span))))
		c.cmd.Process.Kill()
		c.wait()
		if checkSet(t, out, "ntrans") {
			manifests++
		}
		checkCache(t, cache)
	}
	t.Logf("%d of %d kills left a manifest", manifests, kills)
	if c := startMirage(t, nil, args(0)...); c.wait() != 0 {
		t.Fatalf("the run after the kills failed: %s", c.stderrString())
	}
	if !checkSet(t, out, "ntrans") {
		t.Error("no manifest after a whole run")
	}
	if tmp := temps(t, out); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	checkCache(t, cache)
}

// ntransVariant writes ntrans at other shapes, under the same name.
func ntransVariant(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ntrans.py")
	src, err := os.ReadFile(ntrans)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(src, []byte("4096"), []byte("1024")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A disk that fills up while the result is written: a non-zero exit that
// says so, the previous set intact, no temporary file left.
func TestSuperoptFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	out := t.TempDir()
	args := []string{"superopt", ntrans, "--no-cache", "--workers", "2", "-o", out}
	if c := startMirage(t, nil, args...); c.wait() != 0 {
		t.Fatalf("the first run failed: %s", c.stderrString())
	}
	before := snapshot(t, out)
	// Room for some files of the set, not all: the μGraph (2.5 kB) and the
	// header fit, the kernel (5 kB) does not.
	c := startMirage(t, []string{childFsizeEnv + "=4096"}, args...)
	code := c.wait()
	if code == 0 || !strings.Contains(c.stderrString(), "writing the result") {
		t.Fatalf("exit %d on a full disk; stderr:\n%s", code, c.stderrString())
	}
	if after := snapshot(t, out); !maps.Equal(before, after) {
		t.Errorf("the previous set changed: %v, was %v", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
}

// Runs of two programs of one name into one directory at once: each
// finished set is whole, never a mix of the two.
func TestSuperoptConcurrentRunsIntoOneDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	out := t.TempDir()
	other := ntransVariant(t)
	for range 3 {
		var cs []*child
		for _, p := range []string{ntrans, other, ntrans, other} {
			cs = append(cs, startMirage(t, nil, "superopt", p, "--no-cache", "--workers", "1", "-o", out))
		}
		for _, c := range cs {
			if code := c.wait(); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderrString())
			}
		}
		if !checkSet(t, out, "ntrans") {
			t.Fatal("no manifest")
		}
		if tmp := temps(t, out); len(tmp) > 0 {
			t.Errorf("temporary files left: %v", tmp)
		}
	}
}

// snapshot maps the names of the files in dir to their contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range es {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(data)
	}
	return m
}

// emit --counters stopped by SIGINT while the emulator builds or runs
// exits 130 and leaves no build directory behind in TMPDIR.
func TestEmitCountersInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the emulator")
	}
	if _, err := templates.EmulatorCompiler(); err != nil {
		t.Skipf("no emulator compiler: %v", err)
	}
	tmp := t.TempDir()
	prog := filepath.Join("..", "..", "examples", "llama_mlp_block.py")
	c := startMirage(t, []string{"TMPDIR=" + tmp}, "emit", prog, "--counters", "-o", t.TempDir())
	builds := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "mirage-counters-*"))
		return m
	}
	for deadline := time.Now().Add(time.Minute); len(builds()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no build directory in TMPDIR after a minute; stderr:\n%s", c.stderrString())
		}
	}
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, c.stderrString())
	}
	if !strings.Contains(c.stderrString(), "emit --counters: interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", c.stderrString())
	}
	if left := builds(); len(left) > 0 {
		t.Errorf("build directories left: %v", left)
	}
}

// superopt's verifiers keep to --max-memory: a part whose fingerprints
// need more is left unfused, saying so and how to raise the bound (the
// table cuts the long reason; the log line has it whole); the default
// bound fuses it.
func TestSuperoptMaxMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "norm_proj.py")
	if err := os.WriteFile(prog, []byte(normProj), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mirage(t, "superopt", prog, "--no-cache", "--no-emit", "--time-limit", "20s", "--max-memory", "16KiB", "-o", filepath.Join(dir, "small"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	const why = "not fused: search failed: fingerprinting the part: ffverify: program: evaluating the program (keeping its outputs on 2 draws) needs "
	if !strings.Contains(errOut, why) || !strings.Contains(errOut, "more than the limit of 16 KiB") || !strings.Contains(errOut, "(--max-memory raises the limit)") {
		t.Errorf("the log:\n%s", errOut)
	}
	if !strings.Contains(out, "no: search failed: fingerprinting the part: ffverify: program: evaluating the program (keeping its outp…") ||
		strings.Contains(out, "16 KiB") {
		t.Errorf("the table's reason, cut at 100 characters:\n%s", out)
	}
	code, out, errOut = mirage(t, "superopt", prog, "--no-cache", "--no-emit", "--time-limit", "20s", "--json", "-o", filepath.Join(dir, "default"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct{ Parts []struct{ Fused bool } }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Parts) == 0 || !res.Parts[0].Fused {
		t.Errorf("with the default bound: %+v, %v", res, err)
	}
	for _, bad := range []string{"0", "-1MiB", "lots"} {
		if code, _, errOut := mirage(t, "superopt", prog, "--max-memory", bad, "-o", filepath.Join(dir, "bad")); code != exitUnusable || !strings.Contains(errOut, "--max-memory") {
			t.Errorf("--max-memory %s: exit %d, %s", bad, code, errOut)
		}
	}
}

// A directory holding a set written by another build of mirage, whose
// runtime header differs, refuses another program's set with that reason,
// not the names' (found by review: the error blamed names that read alike
// as C identifiers, and --name, which it suggested, cannot help).
func TestSetsOfAnotherRuntimeAreNamedAsSuch(t *testing.T) {
	dir := t.TempDir()
	src := "import mirage as mi\ngraph = mi.new_kernel_graph()\nX = graph.new_input(dims=(8, 64), dtype=mi.float16)\n" +
		"W = graph.new_input(dims=(64, 64), dtype=mi.float16)\ngraph.mark_output(graph.matmul(graph.rms_norm(X, normalized_shape=(64,)), W))\n"
	a, b := filepath.Join(t.TempDir(), "rm.py"), filepath.Join(t.TempDir(), "other.py")
	for path, s := range map[string]string{a: src, b: strings.Replace(src, "(8, 64)", "(16, 64)", 1)} {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := mirage(t, "superopt", a, "--no-cache", "--time-limit", "60s", "-o", dir); code != 0 {
		t.Fatalf("superopt: exit %d: %s", code, stderr)
	}
	// As an earlier build wrote it: another runtime header, in the manifest.
	rt := filepath.Join(dir, "mirage_runtime.cuh")
	data, err := os.ReadFile(rt)
	if err != nil {
		t.Fatal(err)
	}
	old := append(data, "// an earlier build's runtime\n"...)
	if err := os.WriteFile(rt, old, 0o644); err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(dir, "rm.manifest.json")
	m, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	m = bytes.Replace(m, fmt.Appendf(nil, "%x", sha256.Sum256(data)), fmt.Appendf(nil, "%x", sha256.Sum256(old)), 1)
	if err := os.WriteFile(mpath, m, 0o644); err != nil {
		t.Fatal(err)
	}
	if !checkSet(t, dir, "rm") {
		t.Fatal("the edited set is not whole")
	}
	for _, args := range [][]string{
		{"superopt", b, "--no-cache", "--time-limit", "60s", "-o", dir},
		{"emit", filepath.Join(dir, "rm.ugraph.json"), "--name", "other", "-o", dir},
	} {
		code, _, stderr := mirage(t, args...)
		if code != 2 || !strings.Contains(stderr, "another build of mirage") || strings.Contains(stderr, "C identifier") || strings.Contains(stderr, "--name") {
			t.Errorf("%s beside a set of another runtime: exit %d:\n%s", args[0], code, stderr)
		}
	}
}

// Two programs whose C names differ only in case are refused one
// directory: their headers share the guard and macros (MIRAGE_LAYER_H), so
// a caller including both got one of them, silently (found by review).
func TestNamesDifferingInCaseShareNoDirectory(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	prog := "import mirage as mi\ngraph = mi.new_kernel_graph()\nX = graph.new_input(dims=(8, 64), dtype=mi.float16)\ngraph.mark_output(graph.exp(X))\n"
	upper, lower := filepath.Join(src, "Layer.py"), filepath.Join(src, "sub", "layer.py")
	for _, p := range []string{upper, lower} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := mirage(t, "superopt", upper, "--no-cache", "--time-limit", "10s", "-o", dir); code != 0 {
		t.Fatalf("superopt Layer: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"superopt", lower, "--no-cache", "--time-limit", "10s", "-o", dir},
		{"emit", upper, "--name", "layer", "-o", dir},
	} {
		if code, _, stderr := mirage(t, args...); code != 2 || !strings.Contains(stderr, "only in case") {
			t.Errorf("%s of layer beside Layer: exit %d: %s", args[0], code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "layer.h")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("layer.h: %v; want none", err)
	}
	// The set's own name is no twin of itself.
	if code, _, stderr := mirage(t, "emit", upper, "-o", dir); code != 0 {
		t.Errorf("emit Layer again: exit %d: %s", code, stderr)
	}
}
