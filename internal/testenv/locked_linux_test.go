package testenv

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The main thread is never ended, even when a goroutine returns locked to
// it: keeping the main goroutine on it means the goroutines below never run
// there, and the hazard TestStartLocked shows always happens.
func init() { runtime.LockOSThread() }

// TestStartLocked: a child with Pdeathsig dies when the thread that forked
// it ends, which Go does to a thread whose goroutine returns while locked
// to it; StartLocked keeps the forking thread until the child is reaped.
func TestStartLocked(t *testing.T) {
	sleeper := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = sysProcAttr()
		return c
	}
	// startFromEndingThread runs start on a goroutine that returns locked
	// to its thread, so that Go ends the thread afterwards.
	startFromEndingThread := func(start func() error) error {
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			errc <- start()
		}()
		return <-errc
	}

	// The hazard: a plain Start from such a goroutine.
	plain := sleeper()
	if err := startFromEndingThread(plain.Start); err != nil {
		t.Fatal(err)
	}
	plainDone := make(chan error, 1)
	go func() { plainDone <- plain.Wait() }()
	select {
	case err := <-plainDone:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the child ended with %v, want SIGKILL from Pdeathsig", err)
		}
	case <-time.After(10 * time.Second):
		_ = plain.Process.Kill()
		t.Error("a child forked by a thread that ended is still running: Pdeathsig did not fire (the reason for StartLocked is gone?)")
	}

	// StartLocked from the same kind of goroutine: the child lives on.
	locked := sleeper()
	var waited <-chan error
	if err := startFromEndingThread(func() (err error) {
		waited, err = StartLocked(locked)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		t.Fatalf("a child started with StartLocked ended when its caller's thread did: %v", err)
	case <-time.After(time.Second):
	}
	_ = locked.Process.Kill()
	<-waited
}
