//go:build !unix

package subprocess

import "os/exec"

// ownGroup leaves cmd as exec.CommandContext made it: killing the process
// alone is what the platform offers.
func ownGroup(*exec.Cmd) {}
