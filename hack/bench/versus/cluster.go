package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// The cluster mix (-churn-mix cluster) changes the preloaded objects as a
// cluster's kubelets, agents and users do. Change k goes to object k mod
// (pods + ConfigMaps), the Pods first: to a Pod, a kubelet's status patch
// (three in four) or a heartbeat renewal; to a ConfigMap, a heartbeat
// renewal. With probability -meaningful it is instead a meaningful change:
// a Pod's image or a label, a ConfigMap's data or a label. The last change
// of each type is meaningful and made once every other change is: the
// marker the parent waits for on the stream (clusterstream.go). Which
// change k of run seq is and what it writes follow from (seq, k) alone, so
// the parent knows what each object's last meaningful change wrote without
// keeping what it sent.

// clusterKind is a kind of change of the cluster mix.
type clusterKind int

const (
	podStatus clusterKind = iota
	podHeartbeat
	cmHeartbeat
	// The meaningful ones, from here on.
	podImage
	podLabel
	cmData
	cmLabel
)

func (k clusterKind) meaningful() bool { return k >= podImage }
func (k clusterKind) pod() bool {
	return k == podStatus || k == podHeartbeat || k == podImage || k == podLabel
}

// planned is one change of the cluster mix: its kind and the index of its
// Pod or ConfigMap.
type planned struct {
	kind  clusterKind
	index int
}

// clusterTarget is change k's object: Pod i, or ConfigMap i.
func (b *bench) clusterTarget(k int) (pod bool, i int) {
	o := k % (b.pods + b.objects)
	if o < b.pods {
		return true, o
	}
	return false, o - b.pods
}

// markers is how many changes end the cluster mix as markers: one per
// type watched.
func (b *bench) markers() int {
	if b.churn.mix.cluster == 0 {
		return 0
	}
	return min(b.churn.mix.cluster, 1+min(b.pods, 1))
}

func changeRNG(k, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seq)<<32|uint64(k), 0x636c7573746572))
}

// plan is change k of run seq.
func (b *bench) plan(k, seq int) planned {
	total := b.churn.mix.cluster
	switch {
	case k == total-1:
		return planned{kind: cmData}
	case k == total-2 && b.markers() == 2:
		return planned{kind: podImage}
	}
	pod, i := b.clusterTarget(k)
	rng := changeRNG(k, seq)
	meaningful, either := rng.Float64() < b.churn.meaningful, rng.IntN(2) == 0
	kind := cmHeartbeat
	switch {
	case pod && meaningful:
		kind = pick(either, podImage, podLabel)
	case pod:
		kind = pick(rng.IntN(4) > 0, podStatus, podHeartbeat)
	case meaningful:
		kind = pick(either, cmData, cmLabel)
	}
	return planned{kind: kind, index: i}
}

func pick(first bool, a, b clusterKind) clusterKind {
	if first {
		return a
	}
	return b
}

// field is what a meaningful change sets, as the content check reads it
// from the published object: "image", "label", or "data/<key>".
func (p planned) field(k int) string {
	switch p.kind {
	case podImage:
		return "image"
	case podLabel, cmLabel:
		return "label"
	}
	return "data/key-" + strconv.Itoa(k%4)
}

// value is what change k of run seq sets its field to; size is a
// ConfigMap's bytes of data.
func (p planned) value(k, seq, size int) string {
	switch p.kind {
	case podImage:
		return fmt.Sprintf("registry.example.com/app:%d.%d", seq, k)
	case podLabel, cmLabel:
		return fmt.Sprintf("%d.%d", seq, k)
	}
	return fixtures.RandomData(changeRNG(k, seq), size/4)
}

// body is change k's patch, its type, and the subresource it writes.
func (b *bench) body(p planned, k, seq int, now time.Time) ([]byte, types.PatchType, []string, error) {
	merge := func(v any) ([]byte, types.PatchType, []string, error) {
		out, err := json.Marshal(v)
		return out, types.MergePatchType, nil, err
	}
	meta := func(key, field, v string) map[string]any {
		return map[string]any{"metadata": map[string]any{key: map[string]string{field: v}}}
	}
	switch p.kind {
	case podStatus:
		round := k / (b.pods + b.objects)
		out, err := statusPatch(p.index, int32(seq*100_000+round+1), round%2 == 1, now)
		return out, types.StrategicMergePatchType, []string{"status"}, err
	case podHeartbeat, cmHeartbeat:
		return merge(meta("annotations", heartbeatAnnotation, now.UTC().Format(time.RFC3339Nano)))
	case podImage:
		out, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []map[string]string{{"name": "app", "image": p.value(k, seq, b.size)}}}})
		return out, types.StrategicMergePatchType, nil, err
	case podLabel, cmLabel:
		return merge(meta("labels", "version", p.value(k, seq, b.size)))
	}
	return merge(map[string]any{"data": map[string]string{"key-" + strconv.Itoa(k%4): p.value(k, seq, b.size)}})
}

// clusterChange makes change k of run seq and returns the resourceVersion
// it wrote.
func (b *bench) clusterChange(ctx context.Context, k, seq int) (string, error) {
	p := b.plan(k, seq)
	body, pt, sub, err := b.body(p, k, seq, time.Now())
	if err != nil {
		return "", err
	}
	ns := b.layout.namespace(p.index)
	var rv string
	err = benchkit.Retry(ctx, func() error {
		var obj metav1.Object
		var err error
		if p.kind.pod() {
			obj, err = b.cs.CoreV1().Pods(ns).Patch(ctx, podName(p.index), pt, body, metav1.PatchOptions{}, sub...)
		} else {
			obj, err = b.cs.CoreV1().ConfigMaps(ns).Patch(ctx, objectName(p.index), pt, body, metav1.PatchOptions{})
		}
		if err == nil {
			rv = obj.GetResourceVersion()
		}
		return err
	})
	return rv, err
}

// objectKey names a Pod or ConfigMap of the benchmark.
type objectKey struct {
	pod   bool
	index int
}

// clusterPlan is what run seq's cluster churn makes: how many changes of
// each kind, and per object the last value each meaningful change set.
type clusterPlan struct {
	kinds [cmLabel + 1]int
	last  map[objectKey]map[string]string
}

func (b *bench) clusterPlan(seq int) clusterPlan {
	cp := clusterPlan{last: map[objectKey]map[string]string{}}
	for k := range b.churn.mix.cluster {
		p := b.plan(k, seq)
		cp.kinds[p.kind]++
		if !p.kind.meaningful() {
			continue
		}
		key := objectKey{pod: p.kind.pod(), index: p.index}
		if cp.last[key] == nil {
			cp.last[key] = map[string]string{}
		}
		cp.last[key][p.field(k)] = p.value(k, seq, b.size)
	}
	return cp
}

// meaningful is how many of the plan's changes are.
func (cp clusterPlan) meaningful() int { return cp.meaningfulOf(true) + cp.meaningfulOf(false) }

// meaningfulOf is how many of the plan's changes to Pods, or to
// ConfigMaps, are.
func (cp clusterPlan) meaningfulOf(pods bool) int {
	n := 0
	for k, c := range cp.kinds {
		if kind := clusterKind(k); kind.meaningful() && kind.pod() == pods {
			n += c
		}
	}
	return n
}

// checkWorkload refuses what the Pods and the cluster mix cannot run
// with: Pods are watched by unsharded bridge modes only, and a rules file
// is given per mode (+config=), not to all.
func checkWorkload(o options, mix churnMix, modes []mode) error {
	if _, set := os.LookupEnv("BRIDGE_CONFIG"); set {
		return errors.New("BRIDGE_CONFIG is set: give a bridge mode its file as mode+config=PATH, so that the modes without one run without rules")
	}
	for _, m := range modes {
		if o.pods > 0 && (!m.isBridge() || m.kind.sharded) {
			return fmt.Errorf("mode %s: with -pods only unsharded bridge modes run (an informer mode watches ConfigMaps only)", m.id())
		}
		if mix.cluster > 0 && m.kind.sharded {
			return fmt.Errorf("mode %s: the cluster mix runs unsharded modes only", m.id())
		}
		if m.kind.objects != nil && (o.pods > 0 || mix.cluster > 0) {
			return fmt.Errorf("mode %s: -pods and the cluster mix change ConfigMaps and Pods; this mode's objects are %s", m.id(), m.kind.objects.plural)
		}
		if m.config != "" && mix.cluster == 0 {
			return fmt.Errorf("mode %s: +config= needs -churn-mix cluster (the other mixes count every update on the stream)", m.id())
		}
	}
	return nil
}
