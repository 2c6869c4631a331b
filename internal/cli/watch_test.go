package cli_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var eventLineRE = regexp.MustCompile(`^(?:seq (\d+) +term (\d+) +)?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (\S+) +(\S+) +(\S+)(?:  rv (\S+))?(.*)$`)

// eventLines are the event lines of watch's output (diff lines left out).
func eventLines(out string) [][]string {
	var lines [][]string
	for _, l := range strings.Split(out, "\n") {
		if m := eventLineRE.FindStringSubmatch(l); m != nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// TestWatch runs watch while ConfigMaps change through the apiserver: one
// line per live event with the apiserver's resourceVersions, the diff of
// the update, nothing of the snapshot; --all --snapshots -o wide replays
// from the first message with the snapshot framing, in stream order.
func TestWatch(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	ctx := context.Background()
	cms := h.cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.runBridge("configmaps", ns)

	stdout, stderr, stop := h.start("watch", "configmaps", "-n", ns, "--diff")
	named, _, stopNamed := h.start("watch", "cm", "w", "-n", ns)
	// Events are those stored after the consumer is created: wait for both.
	// Each watch also reads the term markers with a short-lived consumer
	// of headers only, which is not counted: one watch's two consumers
	// would pass for both watches.
	h.waitFor("the watches' consumers", func() string {
		st, err := h.js.Stream(ctx, h.stream)
		if err != nil {
			return err.Error()
		}
		watching := 0
		consumers := st.ListConsumers(ctx)
		for info := range consumers.Info() {
			if !info.Config.HeadersOnly && info.Config.DeliverPolicy == jetstream.DeliverNewPolicy {
				watching++
			}
		}
		if err := consumers.Err(); err != nil {
			return err.Error()
		}
		if watching < 2 {
			return fmt.Sprintf("%d consumers delivering new messages", watching)
		}
		return ""
	})
	// The bridge merges the changes of an object that wait while one is in
	// flight (the contract's coalescing), which a loaded machine makes
	// likely: each change of w waits until the last one is printed.
	lines := func(what string, out *lockedBuffer, n int) {
		t.Helper()
		h.waitFor(what, func() string {
			if got := len(eventLines(out.String())); got < n {
				return fmt.Sprintf("%d lines, want %d", got, n)
			}
			return ""
		})
	}
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"k": "v1", "same": "x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	added := cm.ResourceVersion
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lines("the named watch's add", named, 1)
	cm.Data["k"] = "v2"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := cm.ResourceVersion
	lines("the named watch's update", named, 2)
	if err := cms.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lines("watch's lines", stdout, 4)
	lines("the named watch's lines", named, 3)
	if code := stop(); code != 0 {
		t.Errorf("watch exited %d on cancel: %s", code, stderr.String())
	}
	stopNamed()

	out := stdout.String()
	var got []string
	for _, m := range eventLines(out) {
		got = append(got, m[4]+" "+m[5]+" "+m[6]+" "+m[7])
	}
	// Order is kept per object (subject), not across objects: w's three
	// events in their order, and other's add anywhere among them.
	var ofW, ofOther []string
	for _, g := range got {
		if strings.Contains(g, " "+ns+"/other") {
			ofOther = append(ofOther, g)
		} else {
			ofW = append(ofW, g)
		}
	}
	want := []string{"added ConfigMap " + ns + "/w " + added, "updated ConfigMap " + ns + "/w " + updated}
	if len(ofW) != 3 || ofW[0] != want[0] || ofW[1] != want[1] || !strings.HasPrefix(ofW[2], "deleted ConfigMap "+ns+"/w ") ||
		len(ofOther) != 1 || !strings.HasPrefix(ofOther[0], "added ConfigMap "+ns+"/other ") {
		t.Errorf("watch printed\n%s\nwant, in this order, %q and a delete of w, and an add of other", out, want)
	}
	for _, l := range []string{"    -   k: v1\n    +   k: v2\n", `    -   resourceVersion: "` + added + `"` + "\n" + `    +   resourceVersion: "` + updated + `"`} {
		if !strings.Contains(out, l) {
			t.Errorf("the update's diff lacks %q:\n%s", l, out)
		}
	}
	if strings.Contains(out, "same: x") && !strings.Contains(out, "      same: x") {
		t.Errorf("an unchanged line is not shown as context:\n%s", out)
	}
	var namedGot []string
	for _, m := range eventLines(named.String()) {
		namedGot = append(namedGot, m[4]+" "+m[6])
	}
	if strings.Join(namedGot, ",") != "added "+ns+"/w,updated "+ns+"/w,deleted "+ns+"/w" {
		t.Errorf("watch cm w printed\n%s", named.String())
	}

	// From the first message, with the snapshot and the stream sequence.
	// The delete rolled up w's subject: its added and updated events are
	// no longer stored.
	all, _, stopAll := h.start("watch", "cm", "-A", "--all", "--snapshots", "-o", "wide")
	h.waitFor("the replay's lines", func() string {
		if n := len(eventLines(all.String())); n < 5 {
			return fmt.Sprintf("%d lines", n)
		}
		return ""
	})
	stopAll()
	var verbs []string
	last := 0
	for _, m := range eventLines(all.String()) {
		verbs = append(verbs, m[4])
		seq, _ := strconv.Atoi(m[1])
		if seq <= last {
			t.Errorf("seq %d after %d", seq, last)
		}
		last = seq
	}
	if got := strings.Join(verbs, " "); got != "snapshot.begin snapshot.item snapshot.end added deleted" {
		t.Errorf("watch --all --snapshots printed %s:\n%s", got, all.String())
	}
}
