package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// shardSet is N shards of bridges over a set of namespaces.
type shardSet struct {
	h          *harness
	n          int
	namespaces []string
	pods       int
	// label, when set, selects the set's ConfigMaps, which the shards
	// then watch in every namespace (each filtering its own part
	// itself); else they watch the namespaces by name.
	label string
}

// vars configure a replica of shard i with leader election on a short
// Lease; the Lease's name is the default, per shard.
func (s *shardSet) vars(i int) map[string]string {
	s.pods++
	v := s.h.electionVars(fmt.Sprintf("shard-%d-pod-%d", i, s.pods))
	v["BRIDGE_LEASE_NAME"] = ""
	v["BRIDGE_NAMESPACES"] = strings.Join(s.namespaces, ",")
	if s.label != "" {
		v["BRIDGE_NAMESPACES"] = ""
		v["BRIDGE_RESOURCES"] = "configmaps | labels=" + s.label
	}
	v["BRIDGE_SHARDS"] = strconv.Itoa(s.n)
	v["BRIDGE_SHARD"] = strconv.Itoa(i)
	// Snapshots every 2s: the shards' snapshots interleave in the stream,
	// and a frozen leader has one due the moment it thaws.
	v["BRIDGE_RESYNC_PERIOD"] = "2s"
	// The apiserver's shard selector rebuilt every second: a namespace
	// created while the shards run is soon left out by the others.
	v["BRIDGE_SHARD_SELECTOR_REFRESH"] = "1s"
	return v
}

// standby launches a replica of shard i and waits until it is a synced
// standby.
func (s *shardSet) standby(i int) *bridge {
	b := s.h.launchBridge(s.vars(i))
	b.waitLog("Standby: informer caches synced", readyTimeout)
	return b
}

// list is the apiserver's ConfigMaps of the set's namespaces (and label).
func (s *shardSet) list() map[string]string {
	out := map[string]string{}
	for subj, rv := range s.h.listConfigMaps("", metav1.ListOptions{LabelSelector: s.label}) {
		for _, ns := range s.namespaces {
			if strings.HasPrefix(subj, s.h.cmType()+"."+ns+".") {
				out[subj] = rv
			}
		}
	}
	return out
}

// churns are churns in several namespaces.
type churns []*churn

func (cs churns) ops() int64 {
	var n int64
	for _, c := range cs {
		n += c.ops()
	}
	return n
}

func (cs churns) waitOps(n int64, timeout time.Duration) bool {
	target := cs.ops() + n
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cs.ops() >= target, nil
	}) == nil
}

func (cs churns) stop() []error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.stop()...)
	}
	return errs
}
