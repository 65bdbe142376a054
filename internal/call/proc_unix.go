//go:build unix

package call

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the command in a process group of its own, so that killing it ends what
// it started too (a shell's children).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
