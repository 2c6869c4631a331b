package main

import "syscall"

// childAttr makes the kernel kill a child (a consumer, a bridge) when the
// parent dies, so that an interrupted run leaves none behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
