package e2e

import "syscall"

// sysProcAttr makes the kernel SIGKILL a bridge when the test process dies,
// so an aborted `go test` leaves no bridge running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
