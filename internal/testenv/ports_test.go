package testenv

import (
	"context"
	"errors"
	"testing"
)

// A start that lost its port to another process is retried on new ports,
// at most three times in all; any other failure is not retried.
func TestStartOnFreePortsRetriesOnlyABindRace(t *testing.T) {
	lost := errors.New("kube-apiserver exited unexpectedly (exit status 1); log x:\n    listen tcp 127.0.0.1:35783: bind: address already in use")
	for _, tc := range []struct {
		name            string
		failures        []error
		wantStarts      int
		wantRepicks     int
		wantErrContains error
	}{
		{name: "lost twice, then bound", failures: []error{lost, lost}, wantStarts: 3, wantRepicks: 2},
		{name: "lost three times", failures: []error{lost, lost, lost, lost}, wantStarts: 3, wantRepicks: 2, wantErrContains: lost},
		{name: "another failure", failures: []error{errNoSuchFlag}, wantStarts: 1, wantRepicks: 0, wantErrContains: errNoSuchFlag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			starts, repicks := 0, 0
			err := startOnFreePorts(context.Background(), func(context.Context) error {
				starts++
				if starts <= len(tc.failures) {
					return tc.failures[starts-1]
				}
				return nil
			}, func() error { repicks++; return nil })
			if starts != tc.wantStarts || repicks != tc.wantRepicks {
				t.Errorf("%d starts and %d repicks, want %d and %d", starts, repicks, tc.wantStarts, tc.wantRepicks)
			}
			if !errors.Is(err, tc.wantErrContains) {
				t.Errorf("err %v, want %v", err, tc.wantErrContains)
			}
		})
	}
}

var errNoSuchFlag = errors.New("kube-apiserver exited unexpectedly (exit status 1); log x:\n    unknown flag: --no-such-flag")
