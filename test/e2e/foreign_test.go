package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// foreignLine is what the bridge logs when it overwrites a foreign message
// a refused publish found, and scanLine when its start-up scan finds one.
const (
	foreignLine = "A foreign message was the last of the subject"
	scanLine    = "A foreign message is the last of its subject"
)

// TestForeignMessages publishes by hand, on the bridge's subjects, what no
// bridge of the cluster wrote: an event copied from the stream with
// ce-term 99999999, which no term marker backs, and a message without
// CloudEvents headers. The bridge does not trust either: while it runs,
// its next publish on each subject overwrites it, and after a restart its
// start-up scan finds them; each is logged and counted once
// (kubebridge_foreign_messages_total), and the bridge is never fenced.
// Readers report them instead of applying them: pkg/consume (a Foreign
// violation, a DecodeError) and kubebridge verify (exit 1), and their state
// still equals the apiserver's.
func TestForeignMessages(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	for _, name := range []string{"a", "b", "c"} {
		h.createCM(h.ns, name, nil, map[string]string{"k": name})
	}
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps"}
	first := h.startBridge(vars)

	// While it runs: the next publish on each subject finds the forgery.
	h.forgeEvent(h.cmSubject(h.ns, "a"))
	h.forgePlain(h.cmSubject(h.ns, "b"))
	for _, name := range []string{"a", "b"} {
		cm := h.touchCM(h.ns, name)
		h.waitEvent(h.cmSubject(h.ns, name), contract.TypeUpdated, cm.ResourceVersion)
	}
	if first.exited() {
		t.Fatalf("the bridge exited: %v", first.state)
	}
	if n := first.scrape().sum("kubebridge_foreign_messages_total"); n != 2 || first.countLog(foreignLine) != 2 {
		t.Errorf("kubebridge_foreign_messages_total %v, %d log lines; want 2 and 2", n, first.countLog(foreignLine))
	}
	first.stop()

	// Across a restart: the start-up scan finds them, on an object's
	// subject (overwritten by the start-up snapshot) and on a subject of no
	// object (left for readers to report).
	h.forgeEvent(h.cmSubject(h.ns, "c"))
	h.forgePlain(h.cmSubject(h.ns, "ghost"))
	second := h.startBridge(vars)
	cm := h.touchCM(h.ns, "c")
	h.waitEvent(h.cmSubject(h.ns, "c"), contract.TypeUpdated, cm.ResourceVersion)
	if second.exited() || second.countLog(fencedLine) > 0 {
		t.Fatalf("the bridge was fenced by a forged term: %v", second.state)
	}
	if n := second.scrape().sum("kubebridge_foreign_messages_total"); n != 2 || second.countLog(scanLine) != 2 {
		t.Errorf("after the restart: kubebridge_foreign_messages_total %v, %d log lines; want 2 and 2", n, second.countLog(scanLine))
	}

	// The reference consumer skips both, and its state is the cluster's.
	_, st := h.convergeTo(typ, func() map[string]string { return h.listConfigMaps(h.ns, metav1.ListOptions{}) }, nil)
	if len(st.Foreign) != 2 {
		t.Errorf("the reference consumer found %d foreign events, want the 2 forged ones: %q", len(st.Foreign), st.Foreign)
	}
	h.checkLastPerSubject(typ)
	h.checkReaders(2, 2)
	second.stop()
}

// forgeEvent stores a copy of subject's last event with another id and
// ce-term 99999999, as someone who can publish on the bridge's subjects
// could.
func (h *harness) forgeEvent(subject string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, err := h.jsStream(ctx).GetLastMsgForSubject(ctx, subject)
	must(h.t, err)
	hdr := nats.Header{}
	for k, v := range last.Header {
		if strings.HasPrefix(k, "ce-") || k == contract.HeaderContentType {
			hdr[k] = v
		}
	}
	hdr.Set(contract.TermHeader, "99999999")
	hdr.Set("ce-id", "forged/"+subject)
	_, err = h.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: hdr, Data: last.Data})
	must(h.t, err)
}

// forgePlain stores a message without CloudEvents headers on subject.
func (h *harness) forgePlain(subject string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.js.Publish(ctx, subject, []byte(`{"hello":"world"}`))
	must(h.t, err)
}

// checkReaders reads the stream as pkg/consume and kubebridge verify do:
// each reports the forged messages (events of no term, messages of no
// event) instead of applying them.
func (h *harness) checkReaders(wantForeign, wantUndecodable int) {
	t := h.t
	t.Helper()
	client, err := consume.New(h.js, consume.WithStream(h.stream), consume.WithSubjectPrefix(h.prefix), consume.WithCluster(cluster))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var foreign, undecodable int
	for _, err := range client.Events(ctx, []consume.Filter{{Resource: "configmaps"}}, consume.UntilCaughtUp()) {
		var v *consume.Violation
		var d *consume.DecodeError
		switch {
		case err == nil:
		case errors.As(err, &v) && v.Kind == consume.Foreign:
			foreign++
		case errors.As(err, &d):
			undecodable++
		default:
			t.Fatal(err)
		}
	}
	if foreign != wantForeign || undecodable != wantUndecodable {
		t.Errorf("pkg/consume's Events: %d foreign and %d undecodable, want %d and %d", foreign, undecodable, wantForeign, wantUndecodable)
	}
	var out, errOut bytes.Buffer
	args := []string{"verify", "-s", h.natsURL, "--stream", h.stream, "--prefix", h.prefix, "--cluster", cluster, "-o", "json", "configmaps"}
	code := cli.Run(ctx, args, &out, &errOut)
	var report struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("kubebridge verify -o json: %v\n%s%s", err, out.String(), errOut.String())
	}
	if code != 1 || report.Counts[string(consume.Foreign)] != wantForeign || report.Counts[string(consume.Undecodable)] != wantUndecodable {
		t.Errorf("kubebridge verify: exit %d, counts %v; want 1, with %d foreign and %d undecodable", code, report.Counts, wantForeign, wantUndecodable)
	}
}
