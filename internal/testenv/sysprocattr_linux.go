package testenv

import "syscall"

// sysProcAttr makes the kernel SIGKILL the child when the test process
// dies, so an aborted `go test` (timeout panic, ^C, crash) does not leave
// etcd or kube-apiserver running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
