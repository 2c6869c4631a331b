package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStreamSubjects is returned when an existing stream does not capture the
// bridge's subjects.
var ErrStreamSubjects = errors.New("sink: stream does not cover the bridge's subjects")

// StreamManager is the part of jetstream.JetStream EnsureStream needs.
type StreamManager interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// EnsureStream creates the stream cfg describes if it does not exist. If it
// exists, it checks that one of its subjects covers need (a subject or
// wildcard) and otherwise leaves it as its owner configured it. It makes one
// attempt; WaitForStream retries it while JetStream is unavailable.
func EnsureStream(ctx context.Context, js StreamManager, cfg jetstream.StreamConfig, need string) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = js.CreateStream(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("sink: create stream %s for %v: %w", cfg.Name, cfg.Subjects, err)
		}
		return s.CachedInfo(), nil
	case err != nil:
		return nil, fmt.Errorf("sink: look up stream %s: %w", cfg.Name, err)
	}
	info := s.CachedInfo()
	for _, subj := range info.Config.Subjects {
		if SubjectCovers(subj, need) {
			return info, nil
		}
	}
	return nil, fmt.Errorf("%w: stream %s has subjects %v, none covers %s", ErrStreamSubjects, cfg.Name, info.Config.Subjects, need)
}

// SubjectCovers reports whether every subject matched by sub is matched by
// pattern. Both may contain the wildcards * and >.
func SubjectCovers(pattern, sub string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(sub, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) {
			return false
		}
		switch {
		case st[i] == ">":
			return false
		case p == "*":
		case p != st[i]:
			return false
		}
	}
	return len(pt) == len(st)
}
