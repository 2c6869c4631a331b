package informers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestWatchErrorsLogOnceAndRemind: a failure that repeats as the reflector
// retries is one line, then a reminder after watchErrorReminder; a new
// cause is a new line; the routine end of a watch is no line at all.
func TestWatchErrorsLogOnceAndRemind(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	now := time.Unix(1000, 0)
	w := &watchErrors{now: func() time.Time { return now }}

	forbidden := fmt.Errorf("failed to list *v1.Secret: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: no rule")))
	for range 5 {
		w.handle(logger, forbidden)
		now = now.Add(30 * time.Second)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "permission denied") || !strings.Contains(lines[0], "secrets is forbidden") {
		t.Fatalf("five failures in 2.5 minutes: %d lines %q, want one saying permission denied", len(lines), lines)
	}
	w.handle(logger, apierrors.NewResourceExpired("too old resource version: 1 (2)"))
	w.handle(logger, fmt.Errorf("watch: %w", apierrors.NewResourceExpired("resource version too old")))
	if len(lines) != 1 {
		t.Fatalf("routine ends of a watch were logged: %q", lines[1:])
	}
	now = now.Add(watchErrorReminder)
	w.handle(logger, forbidden)
	if len(lines) != 2 || !strings.Contains(lines[1], `"failuresSinceLastLine"=5`) {
		t.Fatalf("after %v the same failure: %q, want a reminder counting 5 failures since the first line", watchErrorReminder, lines[1:])
	}
	refused := errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	w.handle(logger, refused)
	w.handle(logger, refused)
	if len(lines) != 3 || strings.Contains(lines[2], "permission denied") || !strings.Contains(lines[2], "connection refused") {
		t.Fatalf("a new cause: %q, want one line naming it", lines[2:])
	}
}
