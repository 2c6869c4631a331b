package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// bridgeStream is a stream as the bridge creates it with
// BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT=n and a tombstone TTL.
func bridgeStream(name string, n int64) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{"kb.>"}, Retention: jetstream.LimitsPolicy,
		MaxMsgsPerSubject: n, AllowMsgTTL: true, AllowRollup: true, Duplicates: time.Minute}
}

// warnings are the lines EnsureStream logged about missing features.
func warnings(buf ktesting.Buffer) []string {
	var out []string
	for _, e := range buf.Data() {
		if strings.HasPrefix(e.Message, "Warning:") {
			out = append(out, e.Message)
		}
	}
	return out
}

// A created stream compacts per subject, allows TTLs and roll-ups, and
// nothing is logged about it.
func TestEnsureStreamCreatesCompactingStream(t *testing.T) {
	js := startJetStream(t)
	ctx, logs := captureLogs(t)
	info, err := EnsureStream(ctx, js, bridgeStream("KB", 3), "kb.c1.>")
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if c.MaxMsgsPerSubject != 3 || !c.AllowMsgTTL || !c.AllowRollup || c.DenyPurge || c.Retention != jetstream.LimitsPolicy {
		t.Errorf("created stream: max_msgs_per_subject %d, allow_msg_ttl %v, allow_rollup_hdrs %v, deny_purge %v, retention %v",
			c.MaxMsgsPerSubject, c.AllowMsgTTL, c.AllowRollup, c.DenyPurge, c.Retention)
	}
	if w := warnings(logs); len(w) > 0 {
		t.Errorf("warnings about a stream created as asked: %q", w)
	}
	if ttl, rollup := FeaturesOf(c).Tombstones(24 * time.Hour); ttl != 24*time.Hour || !rollup {
		t.Errorf("Tombstones(24h) = %v, %v, want 24h with the roll-up", ttl, rollup)
	}

	// Five messages on one subject, two on another: three and two stay.
	for i := range 5 {
		publish(t, js, &nats.Msg{Subject: "kb.c1.a", Data: fmt.Appendf(nil, "a%d", i)})
	}
	for i := range 2 {
		publish(t, js, &nats.Msg{Subject: "kb.c1.b", Data: fmt.Appendf(nil, "b%d", i)})
	}
	if got := subjectCounts(t, js, "KB"); got["kb.c1.a"] != 3 || got["kb.c1.b"] != 2 {
		t.Errorf("messages per subject %v, want kb.c1.a:3 kb.c1.b:2", got)
	}
	if last := lastData(t, js, "KB", "kb.c1.a"); last != "a4" {
		t.Errorf("last message on kb.c1.a is %q, want a4", last)
	}
}

// Work-queue and interest streams remove what one consumer acknowledged:
// refused with ErrStreamRetention, at once, without retries.
func TestEnsureStreamRefusesRetention(t *testing.T) {
	js := startJetStream(t)
	for _, r := range []jetstream.RetentionPolicy{jetstream.WorkQueuePolicy, jetstream.InterestPolicy} {
		t.Run(r.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			name := "KB_" + strings.ToUpper(r.String())
			subj := strings.ToLower(name) + ".>"
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Retention: r}); err != nil {
				t.Fatal(err)
			}
			want := bridgeStream(name, 8)
			want.Subjects = []string{subj}
			_, err := EnsureStream(ctx, js, want, subj)
			if !errors.Is(err, ErrStreamRetention) {
				t.Fatalf("EnsureStream on a %v stream: %v, want ErrStreamRetention", r, err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name the stream", err)
			}
			attempts := &attemptLog{}
			if _, err := WaitForStream(ctx, js, want, subj, WithAttemptObserver(attempts.observe), withWaitBackoff(time.Millisecond, time.Millisecond)); !errors.Is(err, ErrStreamRetention) {
				t.Errorf("WaitForStream: %v, want ErrStreamRetention", err)
			}
			if n := len(attempts.get()); n != 1 {
				t.Errorf("WaitForStream made %d attempts, want 1: a retention error is configuration", n)
			}
		})
	}
}

// An existing stream without the features the bridge would have created
// it with gets one warning per missing feature, and the headers it would
// refuse are not sent.
func TestEnsureStreamWarnsAboutMissingFeatures(t *testing.T) {
	js := startJetStream(t)
	for _, c := range []struct {
		name     string
		have     jetstream.StreamConfig
		want     jetstream.StreamConfig
		warnings []string // a word of each warning, in order
		ttl      time.Duration
		rollup   bool
	}{
		{"bare stream", jetstream.StreamConfig{}, bridgeStream("", 8),
			[]string{"per-subject limit", "message TTLs", "roll-ups"}, 0, false},
		{"TTLs without roll-ups", jetstream.StreamConfig{MaxMsgsPerSubject: 8, AllowMsgTTL: true}, bridgeStream("", 8),
			[]string{"roll-ups"}, 0, false},
		{"roll-ups without TTLs", jetstream.StreamConfig{MaxMsgsPerSubject: 8, AllowRollup: true}, bridgeStream("", 8),
			[]string{"message TTLs"}, 0, false},
		// One message per subject: an expiring delete uncovers nothing.
		{"one per subject, TTLs, no roll-ups", jetstream.StreamConfig{MaxMsgsPerSubject: 1, AllowMsgTTL: true}, bridgeStream("", 8),
			nil, time.Hour, false},
		{"larger limit than asked", jetstream.StreamConfig{MaxMsgsPerSubject: 100, AllowMsgTTL: true, AllowRollup: true}, bridgeStream("", 8),
			nil, time.Hour, true},
		// Memory storage over one message per subject costs the server
		// a scan at each publish over the limit; one per subject, none.
		{"memory, eight per subject", jetstream.StreamConfig{Storage: jetstream.MemoryStorage, MaxMsgsPerSubject: 8, AllowMsgTTL: true, AllowRollup: true}, bridgeStream("", 8),
			[]string{"kept in memory"}, time.Hour, true},
		{"memory, one per subject", jetstream.StreamConfig{Storage: jetstream.MemoryStorage, MaxMsgsPerSubject: 1, AllowMsgTTL: true, AllowRollup: true}, bridgeStream("", 8),
			nil, time.Hour, true},
		// BRIDGE_TOMBSTONE_TTL=0 and -1 per subject: nothing is missing.
		{"nothing asked for", jetstream.StreamConfig{}, jetstream.StreamConfig{MaxMsgsPerSubject: -1},
			nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, logs := captureLogs(t)
			name := strings.ToUpper(strings.NewReplacer(" ", "_", ",", "").Replace(c.name))
			subj := strings.ToLower(name) + ".>"
			have := c.have
			have.Name, have.Subjects = name, []string{subj}
			if _, err := js.CreateStream(ctx, have); err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.Name, want.Subjects = name, []string{subj}
			info, err := WaitForStream(ctx, js, want, subj)
			if err != nil {
				t.Fatal(err)
			}
			got := warnings(logs)
			if len(got) != len(c.warnings) {
				t.Fatalf("warnings %q, want one about each of %q", got, c.warnings)
			}
			for i, w := range c.warnings {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d %q, want one about %s", i, got[i], w)
				}
			}
			for _, e := range logs.Data() {
				if strings.HasPrefix(e.Message, "Warning:") && value(e, "stream") != name {
					t.Errorf("warning %q logged stream %v, want %s", e.Message, value(e, "stream"), name)
				}
			}
			wantTTL := time.Duration(0)
			if c.want.AllowMsgTTL {
				wantTTL = time.Hour
			}
			ttl, rollup := FeaturesOf(info.Config).Tombstones(wantTTL)
			if ttl != c.ttl || rollup != c.rollup {
				t.Errorf("Tombstones(%v) = %v, %v, want %v, %v", wantTTL, ttl, rollup, c.ttl, c.rollup)
			}
		})
	}
}

// What the warnings are about: a stream refuses the headers it does not
// allow, so the bridge must not send them.
func TestStreamRefusesHeadersItDoesNotAllow(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []nats.Header{{contract.HeaderTTL: {"1h"}}, {contract.HeaderRollup: {contract.RollupSubject}}} {
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "bare.x", Header: h, Data: []byte("x")})
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) {
			t.Errorf("publishing with %v to a stream without the feature: %v, want a JetStream API error", h, err)
		}
	}
}

// The server behaviour the tombstones rely on (nats-server 2.15): when a
// message's TTL runs out the server removes that message only. A delete
// published with Nats-Rollup: sub is the subject's only message, so its
// expiry leaves the subject empty and the last-per-subject view without
// the object. Without the roll-up the object's older messages come back,
// with subject delete markers (SubjectDeleteMarkerTTL) as well, since
// those are only written when a subject's last message expires.
func TestTombstoneExpiry(t *testing.T) {
	js := startJetStream(t)
	const ttl = time.Second
	// The server requires roll-ups for subject delete markers (it writes
	// them with one); the deletes are published without.
	sdm := bridgeStream("SDM", 8)
	sdm.SubjectDeleteMarkerTTL = time.Second
	for _, c := range []struct {
		name      string
		stream    jetstream.StreamConfig
		rollup    bool
		wantEmpty bool
	}{
		{"with roll-up", bridgeStream("ROLLUP", 8), true, true},
		{"without roll-up", bridgeStream("NOROLLUP", 8), false, false},
		{"subject delete markers, delete without roll-up", sdm, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			c.stream.Subjects = []string{strings.ToLower(c.stream.Name) + ".>"}
			if _, err := EnsureStream(ctx, js, c.stream, c.stream.Subjects[0]); err != nil {
				t.Fatal(err)
			}
			enc := &encode.Encoder{Subjects: contract.Subjects{Prefix: strings.ToLower(c.stream.Name), Cluster: "c1"}, TombstoneTTL: ttl, TombstoneRollup: c.rollup}
			gone, kept := configMap("gone", "1"), configMap("kept", "5")
			for _, ch := range []informers.Change{
				{Verb: informers.Added, Resource: cmResource, Object: gone},
				{Verb: informers.Updated, Resource: cmResource, Object: configMap("gone", "2"), OldObject: gone},
				{Verb: informers.Added, Resource: cmResource, Object: kept},
				{Verb: informers.Deleted, Resource: cmResource, Object: configMap("gone", "3")},
			} {
				e, err := enc.EncodeWithin(ch, 0)
				if err != nil {
					t.Fatal(err)
				}
				publish(t, js, e.Msg)
			}
			goneSubj := enc.Subjects.Object(cmResource.Type(), "default", "gone")
			keptSubj := enc.Subjects.Object(cmResource.Type(), "default", "kept")
			counts := subjectCounts(t, js, c.stream.Name)
			if c.rollup && counts[goneSubj] != 1 {
				t.Errorf("after the delete with roll-up, %s holds %d messages, want only the delete", goneSubj, counts[goneSubj])
			}
			if !c.rollup && counts[goneSubj] != 3 {
				t.Errorf("after the delete without roll-up, %s holds %d messages, want 3", goneSubj, counts[goneSubj])
			}

			// Wait for the delete to expire, not for a duration.
			var m *jetstream.RawStreamMsg
			err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				var err error
				if m, err = lastMsg(js, c.stream.Name, goneSubj); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
					return false, err
				}
				return m == nil || m.Header.Get("ce-type") != contract.TypeDeleted, nil
			})
			switch {
			case wait.Interrupted(err):
				t.Fatalf("the delete on %s, with a TTL of %v, is still the subject's last message after 30s", goneSubj, ttl)
			case err != nil:
				t.Fatal(err)
			case c.wantEmpty && m != nil:
				t.Errorf("after the delete expired, the last message on %s is %s rv %s, want none", goneSubj, m.Header.Get("ce-type"), m.Header.Get("ce-resourceversion"))
			case !c.wantEmpty && (m == nil || m.Header.Get("ce-resourceversion") != "2"):
				t.Errorf("after the delete expired, the last message on %s is %v; want the update at rv 2 back (what the roll-up prevents)", goneSubj, m)
			}
			if m, err := lastMsg(js, c.stream.Name, keptSubj); err != nil || m.Header.Get("ce-resourceversion") != "5" {
				t.Errorf("the object that was not deleted: last message %v, %v; want its add at rv 5", m, err)
			}
		})
	}
}

var cmResource = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

func configMap(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name), ResourceVersion: rv}}
}

func publish(t *testing.T, js jetstream.JetStream, m *nats.Msg) {
	t.Helper()
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatalf("publish %s: %v", m.Subject, err)
	}
}

// subjectCounts is the number of messages per subject in a stream.
func subjectCounts(t *testing.T, js jetstream.JetStream, stream string) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

func lastMsg(js jetstream.JetStream, stream, subject string) (*jetstream.RawStreamMsg, error) {
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return s.GetLastMsgForSubject(ctx, subject)
}

func lastData(t *testing.T, js jetstream.JetStream, stream, subject string) string {
	t.Helper()
	m, err := lastMsg(js, stream, subject)
	if err != nil {
		t.Fatal(err)
	}
	return string(m.Data)
}
