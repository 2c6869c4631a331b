package main

import "syscall"

// sysProcAttr puts the bridge in its own process group, so that a Ctrl-C
// in the terminal reaches only the demo, which then stops the bridge with
// SIGTERM; and has the kernel send SIGTERM to the bridge if the demo dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
