package bridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// StreamConfig is the stream the bridge creates when it is missing. An
// existing stream is compared with it: what it lacks is logged, and the
// encoder only sends the headers the stream takes (newEncoder).
//
// Every object has a subject of its own and each type's snapshot markers
// have theirs, so MaxMsgsPerSubject compacts per object: the stream keeps
// each object's newest messages instead of a copy per snapshot.
//
// Deletes expire with a per-message TTL and a roll-up (sink.Tombstones
// says why both) rather than with the server's subject delete markers
// (SubjectDeleteMarkerTTL): those are written only when the age limit or a
// TTL removes a subject's last message, so they do nothing about a delete
// uncovering older messages; they are bare messages without CloudEvents
// attributes on the object's subject, which a consumer reading the last
// message per subject would have to tell apart; and they raise every
// message TTL to their own.
func StreamConfig(cfg *config.Config, subjects contract.Subjects) jetstream.StreamConfig {
	storage := jetstream.FileStorage
	if cfg.StreamStorage == "memory" {
		storage = jetstream.MemoryStorage
	}
	return jetstream.StreamConfig{
		Name:        cfg.StreamName,
		Description: "Kubernetes object changes published by kubebridge",
		Subjects:    []string{subjects.Stream()},
		// Consumers replay the stream at will; a message must not go
		// away because someone acknowledged it.
		Retention:         jetstream.LimitsPolicy,
		Storage:           storage,
		Replicas:          cfg.StreamReplicas,
		MaxAge:            cfg.StreamMaxAge,
		MaxBytes:          cfg.StreamMaxBytes,
		MaxMsgsPerSubject: cfg.StreamMaxMsgsPerSubject,
		Duplicates:        cfg.StreamDuplicateWindow,
		AllowMsgTTL:       cfg.TombstoneTTL > 0,
		AllowRollup:       cfg.TombstoneTTL > 0,
	}
}

// ensureStream creates or checks the stream, waiting as long as it takes
// for JetStream to answer: no responders, no leader or a timeout is an
// outage to wait out, not a reason to exit and crash-loop.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg *config.Config, subjects contract.Subjects, attempts func(error)) (*jetstream.StreamInfo, error) {
	return sink.WaitForStream(ctx, js, StreamConfig(cfg, subjects), subjects.ClusterWildcard(), sink.WithAttemptObserver(attempts))
}

// newEncoder is the encoder of a term (0: none yet) for the stream info
// describes: deleted events carry Nats-TTL and Nats-Rollup only where the
// stream takes them, since a stream refuses a message with a header it
// does not allow, and the publisher would retry it forever.
func newEncoder(cfg *config.Config, subjects contract.Subjects, info *jetstream.StreamInfo, term uint64) *encode.Encoder {
	ttl, rollup := sink.FeaturesOf(info.Config).Tombstones(cfg.TombstoneTTL)
	return &encode.Encoder{Subjects: subjects, TombstoneTTL: ttl, TombstoneRollup: rollup, Term: term}
}

// eventEncoder is the encoder of this replica's events in term: newEncoder's,
// with what each type's updates carry.
func (b *Bridge) eventEncoder(term uint64) *encode.Encoder {
	e := newEncoder(b.cfg, b.subjects, b.info, term)
	e.Updates = b.updates
	return e
}

// streamLimits is the largest message the bridge may publish: the smaller of
// the server's max_payload (read per message: it can change on reconnect)
// and the stream's max_msg_size (read again after a rejection).
type streamLimits struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	msgMax atomic.Int64
	// mu keeps concurrent rejections from reading the stream at once.
	mu       sync.Mutex
	lastRead time.Time
}

func newStreamLimits(nc *nats.Conn, js jetstream.JetStream, info *jetstream.StreamInfo) *streamLimits {
	l := &streamLimits{nc: nc, js: js, stream: info.Config.Name, lastRead: time.Now()}
	l.msgMax.Store(int64(info.Config.MaxMsgSize))
	return l
}

func (l *streamLimits) maxPayload() int {
	n := int(l.nc.MaxPayload())
	if s := int(l.msgMax.Load()); s > 0 && (n <= 0 || s < n) {
		n = s
	}
	return n
}

// reread reads the stream's limits again, at most once a second.
func (l *streamLimits) reread(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.lastRead) < time.Second {
		return
	}
	l.lastRead = time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot read the stream's limits after a rejection; keeping the known ones", "stream", l.stream, "err", err)
		return
	}
	info, err := s.Info(ctx)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot read the stream's limits after a rejection; keeping the known ones", "stream", l.stream, "err", err)
		return
	}
	if old := l.msgMax.Swap(int64(info.Config.MaxMsgSize)); old != int64(info.Config.MaxMsgSize) {
		klog.FromContext(ctx).Info("The stream's message size limit changed", "stream", l.stream, "maxMsgSize", info.Config.MaxMsgSize, "was", old)
	}
}
