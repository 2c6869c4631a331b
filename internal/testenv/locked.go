package testenv

import (
	"os/exec"
	"runtime"
)

// StartLocked starts cmd and waits for it on one goroutine locked to its OS
// thread, and returns Wait's result on the channel.
//
// Why: the children get Pdeathsig (sysProcAttr), and the kernel sends it
// when the thread that forked the child exits, not the process
// (golang/go#27505). Go ends a thread whose goroutine returns while locked
// to it, as the e2e pod network helpers do on purpose; had that thread
// forked etcd earlier, etcd was SIGKILLed mid-run, without a line in its
// log. Locked until the child is reaped, the forking thread outlives it.
func StartLocked(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
