package e2e

import (
	"os/exec"
	"syscall"
)

// sysProcAttr makes the kernel SIGKILL a bridge when the test process dies,
// so an aborted `go test` leaves no bridge running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processGroup runs cmd in a process group of its own, all of which its
// context's end kills: make's go build too, not only make.
func processGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
