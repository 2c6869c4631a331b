//go:build !linux

package testenv

import "syscall"

// sysProcAttr returns nil: parent-death signals are Linux-only, so on other
// systems children of a crashed test process must be cleaned up by hand.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
