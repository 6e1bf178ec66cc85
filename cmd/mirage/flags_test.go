package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnusableFlags: a numeric flag out of its range is a usage error
// (exit status 2) that names the flag, found before any work starts.
func TestUnusableFlags(t *testing.T) {
	prog := examplePath("rmsnorm_matmul.py")
	out := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"superopt", "--time-limit", "-5s"}, "--time-limit -5s: want 0 or more"},
		{[]string{"superopt", "--max-candidates", "-1"}, "--max-candidates -1: want 0 or more"},
		{[]string{"superopt", "--max-states", "-1"}, "--max-states -1: want 0 or more"},
		{[]string{"superopt", "--workers", "0"}, "--workers 0: want at least 1"},
		{[]string{"bench", "--workload", "rmsnorm_matmul", "--time-limit", "-1s"}, "--time-limit -1s: want 0 or more"},
		{[]string{"bench", "--workload", "rmsnorm_matmul", "--workers", "0"}, "--workers 0: want at least 1"},
		{[]string{"verify", "--trials", "0", prog}, "--trials 0: want at least 1"},
		{[]string{"verify", "--candidate", "-1", prog}, "no candidate -1"},
		{[]string{"show", "--candidate", "-1"}, "no candidate -1"},
		{[]string{"eval", "--candidate", "-1"}, "no candidate -1"},
	} {
		args := append(tt.args, prog)
		switch args[0] {
		case "superopt":
			args = append(args, "--no-cache", "--no-emit", "-o", out)
		case "bench":
			args = append(args[:len(args)-1], "-o", out)
		}
		code, _, stderr := mirage(t, args...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("mirage %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), code, stderr, exitUnusable, tt.want)
		}
	}
}

// TestUnusableProgram: a program that runs away, or is too large to read,
// stops with exit status 2 and an error at its line.
func TestUnusableProgram(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		src, want string
	}{
		{"import mirage as mi\ns = 'x'\nfor i in range(40):\n    s = s + s\n", "prog.py:4: the program builds more than 64 MiB of strings, lists and other values"},
		{"import mirage as mi\nx = 1\nwhile True:\n    pass\n", "prog.py:3: the program ran for more than 10000000 steps; an endless loop?"},
		{"import mirage as mi\nl = ['x' * 1000000 for i in range(100000)]\n", "prog.py:2: the program builds more than 64 MiB"},
		{"import mirage as mi\n#" + strings.Repeat("x", 1<<20) + "\n", "prog.py: the program is larger than 1 MiB"},
	} {
		path := filepath.Join(dir, "prog.py")
		if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := mirage(t, "show", path)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("mirage show %.60q...: exit %d, stderr %q; want exit %d and %q", tt.src, code, stderr, exitUnusable, tt.want)
		}
	}
}
