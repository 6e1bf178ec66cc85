// Package subprocess starts the compilers and programs mirage runs (g++,
// nvcc, an emulated or timed binary) so that ending the context ends
// everything they started.
//
// exec.CommandContext kills only the process it started: g++ ended that
// way leaves its cc1plus compiling for seconds, holding the output pipe,
// so that CombinedOutput waits for it and an interrupted mirage neither
// stops at once nor stops taking the processors.
package subprocess

import (
	"context"
	"os/exec"
)

// Command is exec.CommandContext(ctx, name, args...), but the process
// leads a process group of its own, and ctx's end kills the whole group.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	ownGroup(cmd)
	return cmd
}
