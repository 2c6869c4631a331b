//go:build !linux

package main

import "syscall"

// childAttr is nil where there is no parent-death signal; the benchmark
// reads /proc, and measures on Linux only.
func childAttr() *syscall.SysProcAttr { return nil }
