package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// waitSelectorWithout waits until b logs a shard selector rebuilt to leave
// out namespace ns.
func waitSelectorWithout(t *testing.T, b *bridge, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.ContainsFunc(strings.Split(b.output(), "\n"), func(line string) bool {
			return strings.Contains(line, selectorRebuiltLine) && strings.Contains(line, `"`+ns+`"`)
		}), nil
	})
	if err != nil {
		t.Fatalf("%s did not log %q with namespace %s within 30s", b.name, selectorRebuiltLine, ns)
	}
}

// selectorRebuiltLine is what a shard logs when it rebuilt its apiserver
// shard selector; the line names the namespaces it now leaves out.
const selectorRebuiltLine = "Shard selector rebuilt from the namespaces"

// checkForeign reads kubebridge_shard_foreign_objects_total of every
// bridge still running. Where the apiserver filters, a shard receives of
// other shards' objects only those of namespaces newer than its selector:
// here the late namespace's ConfigMap as it was created, before the
// selectors were rebuilt, and none of its later updates. Where it does
// not, every shard receives the others' churn.
func checkForeign(t *testing.T, bridges []*bridge, filtered bool) {
	t.Helper()
	var counts []string
	for _, b := range bridges {
		if b.exited() {
			continue
		}
		n := b.scrape().sum("kubebridge_shard_foreign_objects_total")
		counts = append(counts, fmt.Sprintf("%s %v", b.name, n))
		switch {
		case filtered && n > 1:
			t.Errorf("%s received %v objects of other shards, though the apiserver filters: want at most the late namespace's one", b.name, n)
		case !filtered && n == 0:
			t.Errorf("%s received no object of other shards, though the apiserver does not filter", b.name)
		}
	}
	t.Logf("objects of other shards received and dropped (kubebridge_shard_foreign_objects_total): %s", strings.Join(counts, ", "))
}

func shardOfNamespace(ns string, n int) int { return shard.Of(shard.Key(ns, ""), n) }

// verifyShards runs kubebridge verify --against-cluster over the stream: it
// follows every shard's snapshots and terms, and its replay must equal the
// apiserver's list within the scope the begin markers name, without a
// finding. With shards > 0 it checks that it read that many shards' terms.
func (h *harness) verifyShards(shards int) {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	args := []string{"verify", "-s", h.natsURL, "--stream", h.stream, "--prefix", h.prefix, "--cluster", cluster,
		"--against-cluster", "--kubeconfig", h.env.KubeconfigPath(), "-o", "json", "configmaps"}
	code := cli.Run(ctx, args, &out, &errOut)
	var report struct {
		Counts      map[string]int `json:"counts"`
		TermMarkers int            `json:"termMarkers"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("kubebridge verify -o json: %v\n%s%s", err, out.String(), errOut.String())
	}
	if code != 0 {
		t.Errorf("kubebridge verify --against-cluster: exit %d, counts %v\n%s%s", code, report.Counts, out.String(), errOut.String())
	}
	if shards > 0 && report.TermMarkers < shards {
		t.Errorf("kubebridge verify read %d term markers, fewer than the %d shards", report.TermMarkers, shards)
	}
}

// checkShards checks that every message is its shard's, and applies the
// term rule per shard: nothing a shard's deposed leader wrote was stored
// after the shard's next term marker.
func checkShards(t *testing.T, h *harness, msgs []replay.Message, n int) {
	t.Helper()
	subjects := h.subjects()
	current := map[contract.Shard]uint64{}
	terms := map[contract.Shard]int{}
	for _, m := range msgs {
		sh, err := contract.ParseShard(m.Ext(contract.ExtShard))
		if err != nil || sh.Count != n {
			t.Errorf("seq %d %s %s: shard %q", m.Seq, m.Event.Type(), m.Subject, m.Ext(contract.ExtShard))
			continue
		}
		sub, err := subjects.Parse(m.Subject)
		if err != nil {
			t.Errorf("seq %d: %v", m.Seq, err)
			continue
		}
		if sub.Kind == contract.ObjectSubject {
			if owner := shardOfNamespace(sub.Namespace, n); owner != sh.Index {
				t.Errorf("seq %d %s: written by shard %s, its namespace is shard %d's", m.Seq, m.Subject, sh, owner)
			}
		} else if sub.Shard != sh {
			t.Errorf("seq %d %s of shard %s on the subject of shard %s", m.Seq, m.Event.Type(), sh, sub.Shard)
		}
		if m.Event.Type() == contract.TypeTerm {
			current[sh] = m.Seq
			terms[sh]++
			continue
		}
		if term, err := contract.TermOf(m.Header); err != nil || term < current[sh] {
			t.Errorf("seq %d %s %s of shard %s: term %d stored after the shard's term %d began (%v)", m.Seq, m.Event.Type(), m.Subject, sh, term, current[sh], err)
		}
	}
	var counts []string
	for i := range n {
		counts = append(counts, fmt.Sprintf("%d/%d: %d", i, n, terms[contract.Shard{Index: i, Count: n}]))
	}
	slices.Sort(counts)
	t.Logf("terms per shard: %s", strings.Join(counts, ", "))
}

// foreignScanLine is what a bridge's start-up scan logs for a subject whose
// last message no bridge of the cluster wrote.
const foreignScanLine = "A foreign message is the last of its subject"
