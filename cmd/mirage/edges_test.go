package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
