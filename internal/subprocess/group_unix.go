//go:build unix

package subprocess

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd's process in a new process group, which Cancel kills.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
