package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

type waitOptions struct {
	attemptTimeout time.Duration
	logEvery       time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	observer       func(error)
}

// WaitOption configures WaitForStream.
type WaitOption func(*waitOptions) error

// WithAttemptTimeout bounds one EnsureStream attempt (default 10s). An
// attempt that runs out of time is retried like any unavailability.
func WithAttemptTimeout(d time.Duration) WaitOption {
	return func(o *waitOptions) error {
		if d <= 0 {
			return fmt.Errorf("sink: attempt timeout must be positive, got %v", d)
		}
		o.attemptTimeout = d
		return nil
	}
}

// WithLogEvery sets how often, at most, WaitForStream logs that it is still
// waiting (default 5s). The first failure is logged at once.
func WithLogEvery(d time.Duration) WaitOption {
	return func(o *waitOptions) error {
		if d <= 0 {
			return fmt.Errorf("sink: log interval must be positive, got %v", d)
		}
		o.logEvery = d
		return nil
	}
}

// WithAttemptObserver calls f with the error of every failed attempt,
// including a final configuration error, e.g. to count them in a metric.
// f is called from WaitForStream's goroutine.
func WithAttemptObserver(f func(error)) WaitOption {
	return func(o *waitOptions) error { o.observer = f; return nil }
}

// withWaitBackoff shortens the backoff, so that tests need not wait.
func withWaitBackoff(min, max time.Duration) WaitOption {
	return func(o *waitOptions) error { o.minBackoff, o.maxBackoff = min, max; return nil }
}

// WaitForStream calls EnsureStream until it succeeds, the error is one that
// retrying cannot fix, or ctx ends. Unavailability of JetStream (no
// responders, a cluster without a meta leader or quorum, a server restarting
// or short of resources, timeouts) is waited out with backoff from 500ms to
// 5s, so that a bridge started before JetStream is ready does not crash
// loop; see retryable for which errors count as that. While it waits it logs
// one line at most every WithLogEvery. A configuration error, such as
// ErrStreamSubjects, ErrStreamRetention or a stream configuration the server
// refuses, is returned at once. When ctx ends, the returned error wraps ctx's error.
func WaitForStream(ctx context.Context, js StreamManager, cfg jetstream.StreamConfig, need string, opts ...WaitOption) (*jetstream.StreamInfo, error) {
	o := waitOptions{attemptTimeout: 10 * time.Second, logEvery: 5 * time.Second, minBackoff: 500 * time.Millisecond, maxBackoff: 5 * time.Second}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	logger := klog.FromContext(ctx)
	start := time.Now()
	var lastLog time.Time
	var lastErr error
	backoff := o.minBackoff
	for attempts := 1; ; attempts++ {
		if ctx.Err() != nil {
			return nil, stoppedWaiting(ctx, cfg.Name, lastErr)
		}
		attemptCtx, cancel := context.WithTimeout(ctx, o.attemptTimeout)
		info, err := EnsureStream(attemptCtx, js, cfg, need)
		cancel()
		if err == nil {
			if lastErr != nil {
				logger.Info("JetStream is available", "stream", cfg.Name, "waited", time.Since(start).Round(time.Millisecond), "attempts", attempts)
			}
			return info, nil
		}
		if ctx.Err() != nil {
			// The attempt failed because we are stopping, not because of
			// JetStream: report what the previous attempts saw.
			return nil, stoppedWaiting(ctx, cfg.Name, lastErr)
		}
		lastErr = err
		if o.observer != nil {
			o.observer(err)
		}
		if !retryable(err) {
			return nil, err
		}
		if lastLog.IsZero() || time.Since(lastLog) >= o.logEvery {
			lastLog = time.Now()
			logger.Info("Waiting for JetStream", "stream", cfg.Name, "err", err, "waited", time.Since(start).Round(time.Millisecond), "attempts", attempts)
		}
		select {
		case <-ctx.Done():
			return nil, stoppedWaiting(ctx, cfg.Name, lastErr)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, o.maxBackoff)
	}
}

func stoppedWaiting(ctx context.Context, stream string, lastErr error) error {
	if lastErr == nil {
		return fmt.Errorf("sink: stopped waiting for JetStream stream %s: %w", stream, ctx.Err())
	}
	return fmt.Errorf("sink: stopped waiting for JetStream stream %s: %w (last attempt: %v)", stream, ctx.Err(), lastErr)
}

// JetStream API error codes (nats-server's server/errors.json) that report
// a passing state of the system rather than a request it refuses.
var transientCodes = map[jetstream.ErrorCode]bool{
	10004: true, // JSClusterIncompleteErr: incomplete results
	10005: true, // JSClusterNoPeersErrF: no suitable peers for placement, e.g. while peers restart
	10008: true, // JSClusterNotAvailErr: JetStream system temporarily unavailable (no meta leader)
	10009: true, // JSClusterNotLeaderErr: JetStream cluster can not handle request
	10023: true, // JSInsufficientResourcesErr: insufficient resources
	10028: true, // JSMemoryResourcesExceededErr: insufficient memory resources available
	10035: true, // JSNoAccountErr: account not found, while account resolution catches up
	10047: true, // JSStorageResourcesExceededErr: insufficient storage resources available
	10075: true, // JSPeerRemapErr: peer remap failed
	10077: true, // JSStreamStoreFailedF: the store could not be created (disk trouble)
	10118: true, // JSStreamOfflineErr: the stream has no leader
	10167: true, // JSStreamTooManyRequests
	10202: true, // JSClusterServerMemberChangeInflightErr: cluster member change in progress
}

// retryable reports whether err from EnsureStream can go away by itself.
// What nats.go's errors really mean (v1.55):
//
//   - Stream and CreateStream return nats.ErrNoResponders as is when nothing
//     serves $JS.API; only AccountInfo turns it into
//     jetstream.ErrJetStreamNotEnabled. Nobody answering is what a server
//     without JetStream, a JetStream still starting, a server restarting and
//     a cluster between meta leaders all look like, so both are retried: a
//     server that never gets JetStream keeps the bridge waiting and logging
//     rather than crash looping.
//   - jetstream.ErrJetStreamNotEnabledForAccount (API error 10039) is only
//     ever produced from an explicit server answer: the server runs
//     JetStream and says this account has none. That is configuration, so
//     it is returned.
//   - Timeouts (nats.ErrTimeout, the attempt's own deadline) and connection
//     trouble (disconnected, reconnecting) are retried; a closed connection
//     never comes back, so it is returned.
//   - API errors are retried only for the codes in transientCodes; any
//     other answer from the server is about the request (invalid stream
//     configuration, subjects overlapping another stream, a name in use
//     with another configuration, replicas the server cannot have).
//   - Errors nats.go raises before asking the server (an invalid stream
//     name, a feature the server lacks), ErrStreamSubjects and
//     ErrStreamRetention are the caller's to fix.
func retryable(err error) bool {
	switch {
	case errors.Is(err, ErrStreamSubjects),
		errors.Is(err, ErrStreamRetention),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrInvalidConnection),
		errors.Is(err, nats.ErrBadSubject):
		return false
	case errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return transientCodes[apiErr.ErrorCode]
	}
	var jsErr jetstream.JetStreamError
	if errors.As(err, &jsErr) {
		return false
	}
	// What is left comes from the connection (nats.ErrDisconnected,
	// nats.ErrConnectionReconnecting, ...), which reconnects by itself.
	return true
}
