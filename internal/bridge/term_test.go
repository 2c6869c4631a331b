package bridge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
)

// termSetup is a stream as the bridge makes it, and an encoder of its
// subjects.
func termSetup(t *testing.T) (context.Context, jetstream.JetStream, jetstream.Stream, *encode.Encoder) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	_, _, js := startConnectedNATS(t)
	cfg := testConfig(t, nil)
	if _, err := ensureStream(ctx, js, cfg, testSubjects, func(error) {}); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, cfg.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, stream, &encode.Encoder{Subjects: testSubjects}
}

// successorFirst is a termStream that lets a successor store its marker
// right after the first read of the last marker: what a replica frozen
// between that read and its publish would find when it thaws.
type successorFirst struct {
	termStream
	once      sync.Once
	successor func()
}

func (s *successorFirst) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := s.termStream.GetLastMsgForSubject(ctx, subject)
	s.once.Do(s.successor)
	return m, err
}

// markers are the holders of the term markers the stream holds, in order.
func markers(t *testing.T, ctx context.Context, js jetstream.JetStream) []string {
	t.Helper()
	msgs, err := replay.ReadAll(ctx, js, "KUBEBRIDGE", testSubjects.Term())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Event.Subject())
	}
	return out
}

// A replica that took the Lease, read the last term marker and froze
// stores no marker after its successor's once it no longer holds the
// Lease: its term would outrank the successor's for every consumer.
func TestTermMarkerOfADeposedReplicaIsNotStored(t *testing.T) {
	ctx, js, stream, enc := termSetup(t)
	var lost error
	frozen := &successorFirst{termStream: stream, successor: func() {
		if _, err := startTerm(ctx, js, stream, enc, contract.TermData{Holder: "successor"}, time.Now(), time.Millisecond, nil); err != nil {
			t.Error(err)
		}
		lost = errors.New("the Lease was not renewed in time")
	}}
	holds := func() error { return lost }
	_, err := startTerm(ctx, js, frozen, enc, contract.TermData{Holder: "frozen"}, time.Now(), time.Millisecond, holds)
	if err == nil || !errors.Is(err, lost) {
		t.Errorf("the frozen replica's term: %v, want it refused for the Lease", err)
	}
	if got := markers(t, ctx, js); len(got) != 1 || got[0] != "successor" {
		t.Errorf("term markers %v, want the successor's alone", got)
	}
}

// A leader that still holds the Lease stores its marker after one that
// came between its read and its publish (a deposed replica's late one):
// its term is then the higher.
func TestTermMarkerAfterALateOne(t *testing.T) {
	ctx, js, stream, enc := termSetup(t)
	late := &successorFirst{termStream: stream, successor: func() {
		if _, err := startTerm(ctx, js, stream, enc, contract.TermData{Holder: "late"}, time.Now(), time.Millisecond, nil); err != nil {
			t.Error(err)
		}
	}}
	fence, err := startTerm(ctx, js, late, enc, contract.TermData{Holder: "leader"}, time.Now(), time.Millisecond, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := markers(t, ctx, js); len(got) != 2 || got[0] != "late" || got[1] != "leader" {
		t.Errorf("term markers %v, want the late one, then the leader's", got)
	}
	if fence.Term() != 2 {
		t.Errorf("the leader's term is %d, want 2: the sequence of its marker, after the late one", fence.Term())
	}
}

// lostAck stores the first publish but reports it failed, as a lost
// acknowledgement does.
type lostAck struct {
	termPublisher
	lost bool
}

func (p *lostAck) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := p.termPublisher.PublishMsg(ctx, msg, opts...)
	if err == nil && !p.lost {
		p.lost = true
		return nil, nats.ErrTimeout
	}
	return ack, err
}

// A marker whose acknowledgement was lost is found on the retry and
// taken as the term: no second marker.
func TestTermMarkerWithALostAcknowledgement(t *testing.T) {
	ctx, js, stream, enc := termSetup(t)
	fence, err := startTerm(ctx, &lostAck{termPublisher: js}, stream, enc, contract.TermData{Holder: "leader"}, time.Now(), time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := markers(t, ctx, js); len(got) != 1 || fence.Term() != 1 {
		t.Errorf("term markers %v, term %d; want one marker, term 1", got, fence.Term())
	}
}
