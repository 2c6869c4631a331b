package benchkit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestPacedCallsEachOnceAndReportsProgress(t *testing.T) {
	var calls [50]atomic.Int32
	var sent atomic.Int64
	err := Paced(context.Background(), len(calls), 1000, 4, func(_ context.Context, k int) error {
		calls[k].Add(1)
		return nil
	}, func(n int) { sent.Store(int64(n)) })
	if err != nil {
		t.Fatal(err)
	}
	for k := range calls {
		if n := calls[k].Load(); n != 1 {
			t.Errorf("call %d made %d times", k, n)
		}
	}
	if sent.Load() != int64(len(calls)) {
		t.Errorf("progress said %d sent, want %d", sent.Load(), len(calls))
	}
}

func TestPacedStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var made atomic.Int32
	err := Paced(context.Background(), 1000, 1000, 1, func(_ context.Context, k int) error {
		made.Add(1)
		if k == 3 {
			return boom
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	// One worker: the calls after the failing one are never handed over,
	// but one may already have been taken when it failed.
	if n := made.Load(); n > 5 {
		t.Errorf("%d calls made after the fourth failed", n)
	}
}
