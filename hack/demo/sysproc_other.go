//go:build !linux

package main

import "syscall"

// sysProcAttr returns nil: parent-death signals are Linux-only, and a
// Ctrl-C in the terminal then reaches the bridge directly, which stops on
// SIGINT as on SIGTERM.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
