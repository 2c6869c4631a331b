package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// ErrStreamSubjects is returned when an existing stream does not capture the
// bridge's subjects.
var ErrStreamSubjects = errors.New("sink: stream does not cover the bridge's subjects")

// ErrStreamRetention is returned when an existing stream does not keep
// messages by limits: with work-queue retention a message is gone once one
// consumer acknowledged it, with interest retention once every consumer
// there is now did, so other and later consumers lose events.
var ErrStreamRetention = errors.New("sink: stream retention must be limits")

// StreamManager is the part of jetstream.JetStream EnsureStream needs.
type StreamManager interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// EnsureStream creates the stream cfg describes if it does not exist. If it
// exists, it checks that one of its subjects covers need (a subject or
// wildcard) and that its retention is limits (ErrStreamRetention), and
// otherwise leaves it as its owner configured it. It makes one attempt;
// WaitForStream retries it while JetStream is unavailable.
//
// Where the stream, created or existing, lacks what cfg asks for (a
// per-subject limit, message TTLs, roll-ups), one line per missing feature
// is logged saying what that costs, and one more if it is kept in memory
// with more than one message per subject; FeaturesOf(info.Config) then tells the
// caller which headers the stream takes.
func EnsureStream(ctx context.Context, js StreamManager, cfg jetstream.StreamConfig, need string) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = js.CreateStream(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("sink: create stream %s for %v: %w", cfg.Name, cfg.Subjects, err)
		}
		// A server older than the features asked for (message TTLs came
		// with nats-server 2.11) creates the stream without them.
		info := s.CachedInfo()
		warnStream(ctx, cfg, info.Config)
		return info, nil
	case err != nil:
		return nil, fmt.Errorf("sink: look up stream %s: %w", cfg.Name, err)
	}
	info := s.CachedInfo()
	if !slices.ContainsFunc(info.Config.Subjects, func(subj string) bool { return SubjectCovers(subj, need) }) {
		return nil, fmt.Errorf("%w: stream %s has subjects %v, none covers %s", ErrStreamSubjects, cfg.Name, info.Config.Subjects, need)
	}
	if r := info.Config.Retention; r != jetstream.LimitsPolicy {
		return nil, fmt.Errorf("%w: stream %s has %s retention, which removes a message once consumers acknowledge it, so other and later consumers lose events; use a stream with limits retention",
			ErrStreamRetention, cfg.Name, retentionName(r))
	}
	warnStream(ctx, cfg, info.Config)
	return info, nil
}

func retentionName(r jetstream.RetentionPolicy) string {
	switch r {
	case jetstream.WorkQueuePolicy:
		return "work-queue"
	case jetstream.InterestPolicy:
		return "interest"
	}
	return r.String()
}

// StreamFeatures is what a stream lets a publisher ask of it per message.
type StreamFeatures struct {
	// MsgTTL is set when the stream honours Nats-TTL (AllowMsgTTL). A
	// stream without it refuses every message that carries the header.
	MsgTTL bool
	// Rollup is set when the stream takes Nats-Rollup (AllowRollup, and
	// purges are not denied). A stream without it refuses every message
	// that carries the header.
	Rollup bool
	// MaxMsgsPerSubject is the stream's per-subject limit; 0 or less is
	// none.
	MaxMsgsPerSubject int64
}

// FeaturesOf reads the features of a stream from its configuration as the
// server reports it (StreamInfo.Config), not as it was asked for.
func FeaturesOf(cfg jetstream.StreamConfig) StreamFeatures {
	return StreamFeatures{MsgTTL: cfg.AllowMsgTTL, Rollup: cfg.AllowRollup && !cfg.DenyPurge, MaxMsgsPerSubject: cfg.MaxMsgsPerSubject}
}

// Tombstones returns how deleted events may be marked on this stream for
// them to expire after ttl: the TTL to send as Nats-TTL (0: none) and
// whether to send Nats-Rollup: sub.
//
// When a message's TTL runs out the server removes that message and
// nothing else (filestore expireMsgs; nats-server 2.15). A delete that
// expires while the object's older messages remain on its subject would
// uncover them, and the last message per subject would show the deleted
// object again. So a TTL is sent only together with the roll-up, which
// purges the subject's earlier messages when the delete is stored, making
// it the subject's only message, or on a stream that keeps one message per
// subject anyway. Otherwise deletes are published without either header
// and stay until the stream's own limits remove them.
func (f StreamFeatures) Tombstones(ttl time.Duration) (time.Duration, bool) {
	switch {
	case ttl <= 0 || !f.MsgTTL:
		return 0, false
	case f.Rollup:
		return ttl, true
	case f.MaxMsgsPerSubject == 1:
		return ttl, false
	}
	return 0, false
}

// warnStream logs one line for each feature want asks for and the stream
// (have) lacks, saying what it costs, and one if the stream is configured
// in a way that costs the server at every publish.
func warnStream(ctx context.Context, want, have jetstream.StreamConfig) {
	logger := klog.FromContext(ctx)
	f := FeaturesOf(have)
	if have.Storage == jetstream.MemoryStorage && f.MaxMsgsPerSubject > 1 {
		// nats-server 2.15's memory store finds a subject's next-oldest
		// message by reading every sequence up from the one the limit
		// removed, unless the stream's first sequence is past them; a
		// term marker or an object that never changes keeps it put.
		logger.Info("Warning: the stream is kept in memory with more than one message per subject; nats-server then reads every sequence between an object's two oldest messages at each publish over the limit, so that cost grows with the number of objects changing (with 20,000 objects updated in turn, 19-20 times the CPU per publish of a file stream; 0.7 times with one message per subject); use file storage, or max_msgs_per_subject 1",
			"stream", have.Name, "maxMsgsPerSubject", f.MaxMsgsPerSubject)
	}
	if want.MaxMsgsPerSubject > 0 && f.MaxMsgsPerSubject <= 0 {
		logger.Info("Warning: the stream has no per-subject limit (max_msgs_per_subject), so it keeps every message of every object: it grows by a full copy of the watched objects at every snapshot until its age or size limits remove messages",
			"stream", have.Name, "wanted", want.MaxMsgsPerSubject)
	}
	if want.AllowMsgTTL && !f.MsgTTL {
		logger.Info("Warning: the stream does not allow message TTLs (allow_msg_ttl; nats-server 2.11 or later), so deleted events are published without Nats-TTL and stay until the stream's age or size limits remove them",
			"stream", have.Name)
	}
	if want.AllowRollup && !f.Rollup && f.MaxMsgsPerSubject != 1 {
		logger.Info("Warning: the stream does not allow roll-ups (allow_rollup_hdrs, with deny_purge off), so deleted events are published without Nats-Rollup and, since an expiring delete would uncover the object's older messages, without Nats-TTL: deleted objects keep their messages until the stream's limits remove them",
			"stream", have.Name)
	}
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
