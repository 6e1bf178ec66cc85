//go:build unix

package subprocess

import (
	"context"
	"testing"
	"time"
)

// Ending the context ends what the process started too: a shell whose
// child sleeps 30 s, holding the output pipe, returns at once. (With
// exec.CommandContext alone, CombinedOutput waits the 30 s.)
func TestEndKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, "sh", "-c", "sleep 30 & echo started; wait")
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the cancelled command succeeded: %q", out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("CombinedOutput returned after %v: the shell's child outlived the cancel", took)
	}
}

// A command that ends by itself is as exec's.
func TestCommandRuns(t *testing.T) {
	out, err := Command(context.Background(), "sh", "-c", "echo ok").Output()
	if err != nil || string(out) != "ok\n" {
		t.Errorf("sh -c 'echo ok': %q, %v", out, err)
	}
}
