package informers

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watchErrorReminder is how often a failure that persists unchanged is
// logged again.
const watchErrorReminder = 10 * time.Minute

// watchErrors logs a type's list and watch failures the way an operator
// can read them: one line when a failure starts or its cause changes, one
// reminder every watchErrorReminder while it lasts, and nothing in between
// (the reflector retries with backoff, about every 30s at most; every
// failure is counted by the Observer). The routine ends of a watch
// (an expired resourceVersion, a closed stream) are not failures of the
// type and are logged at V(4), as client-go's default handler does.
type watchErrors struct {
	now func() time.Time

	mu       sync.Mutex
	last     string    // the failure last logged
	loggedAt time.Time // when
	since    int       // failures since then
}

// handle is a cache.WatchErrorHandlerWithContext that logs to logger.
func (w *watchErrors) handle(logger klog.Logger, err error) {
	if routineWatchEnd(err) {
		logger.V(4).Info("Watch closed; the informer relists", "err", err)
		return
	}
	msg := err.Error()
	w.mu.Lock()
	now := w.now()
	repeat := msg == w.last && now.Sub(w.loggedAt) < watchErrorReminder
	w.since++
	since := w.since
	if !repeat {
		w.last, w.loggedAt, w.since = msg, now, 0
	}
	w.mu.Unlock()
	if repeat {
		logger.V(2).Info("List or watch still failing", "err", err)
		return
	}
	kv := []any{"err", err}
	if since > 1 {
		kv = append(kv, "failuresSinceLastLine", since)
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		logger.Error(nil, "Cannot list or watch this type: permission denied. Nothing of it is published and /readyz names it until get, list and watch on it are granted (in the ClusterRole, or a Role in each watched namespace); retrying with backoff", kv...)
		return
	}
	logger.Error(nil, "Cannot list or watch this type; retrying with backoff, /readyz names it until it works", kv...)
}

// routineWatchEnd tells the ends of a watch that every informer meets and
// recovers from by relisting.
func routineWatchEnd(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// watchErrorHandler counts every failure with the Observer and logs it
// through w.
func (s *Source) watchErrorHandler(w *watchErrors) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		s.observer.WatchError(s.Resource, err)
		w.handle(s.logger, err)
	}
}
