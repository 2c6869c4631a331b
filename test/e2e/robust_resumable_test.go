package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// resumable compares, for every type, three readers' views of the stream
// with the apiserver's list (in scope, projected): the last message per
// subject (with the term rule, contract §3), pkg/consume's State, and a
// client-go informer over pkg/consume's ListWatch. Objects are compared
// by what they hold (uid, labels, annotations, data, spec), not by
// resourceVersion: an update of ignored fields alone is held back, so the
// stream's resourceVersion may lag the cluster's (contract §11).
func (w *world) resumable() []violation {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out []violation
	client, err := consume.New(w.h.js, consume.WithStream(w.h.stream), consume.WithSubjectPrefix(w.h.prefix), consume.WithCluster(w.h.cluster))
	if err != nil {
		return []violation{{check: "resumable", detail: err.Error()}}
	}
	for _, t := range w.types {
		want, err := w.listed(ctx, t)
		if err != nil {
			return []violation{{check: "resumable", detail: err.Error()}}
		}
		views := map[string]func() (map[string]string, error){
			"the last message per subject":         func() (map[string]string, error) { return w.lastPerSubjectView(t) },
			"pkg/consume's State":                  func() (map[string]string, error) { return stateView(ctx, client, t) },
			"an informer over consume's ListWatch": func() (map[string]string, error) { return informerView(ctx, client, t) },
		}
		for _, name := range []string{"the last message per subject", "pkg/consume's State", "an informer over consume's ListWatch"} {
			began := time.Now()
			got, err := views[name]()
			w.t.Logf("resumable: %s of %s read in %v", name, t.resource, time.Since(began).Round(time.Millisecond))
			if err != nil {
				out = append(out, violation{check: "resumable", detail: fmt.Sprintf("%s of %s: %v", name, t.resource, err)})
				continue
			}
			if d := diffState(got, want); d != "" {
				out = append(out, violation{check: "resumable", detail: fmt.Sprintf("%s of %s differs from the apiserver's list: %s", name, t.resource, d)})
			}
		}
	}
	return out
}

// listed is the apiserver's list of a type: in scope, projected, by
// namespace/name.
func (w *world) listed(ctx context.Context, t robustType) (map[string]string, error) {
	list, err := w.h.dyn.Resource(t.gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rules := w.rules[t.typ]
	out := map[string]string{}
	for _, item := range list.Items {
		if rules.inScope(item.Object) {
			out[item.GetNamespace()+"/"+item.GetName()] = content(rules.project(item.Object))
		}
	}
	return out, nil
}

// content is what the views compare of an object.
func content(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	c := map[string]any{"uid": meta["uid"], "data": obj["data"], "spec": obj["spec"]}
	for _, k := range []string{"labels", "annotations"} {
		if m, _ := meta[k].(map[string]any); len(m) > 0 {
			c[k] = m
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// lastPerSubjectView reads the last message of every object subject of
// t, skipping (contract §3) a message m when a term marker T exists with
// m.term < T < m.seq.
func (w *world) lastPerSubjectView(t robustType) (map[string]string, error) {
	msgs, err := w.h.lastPerSubject(t.typ + ".*.*")
	if err != nil {
		return nil, err
	}
	terms, err := w.termMarkers()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range msgs {
		if deposed(m, terms) {
			continue
		}
		var data struct {
			Object map[string]any `json:"object"`
		}
		switch m.Event.Type() {
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeSnapshotItem:
			if err := json.Unmarshal(m.Event.Data(), &data); err != nil {
				return nil, fmt.Errorf("seq %d: %w", m.Seq, err)
			}
			out[m.Ext(contract.ExtNamespace)+"/"+m.Ext(contract.ExtName)] = content(data.Object)
		}
	}
	return out, nil
}

// termMarkers are the sequences of every term marker of the run.
func (w *world) termMarkers() ([]uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := replay.ReadAll(ctx, w.h.js, w.h.stream, w.h.prefix+"."+w.h.cluster+"._term")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeTerm {
			out = append(out, m.Seq)
		}
	}
	return out, nil
}

func deposed(m replay.Message, terms []uint64) bool {
	term := termOf(m)
	for _, T := range terms {
		if term < T && T < m.Seq {
			return true
		}
	}
	return false
}

// stateView bootstraps pkg/consume's State of t and lists its indexer.
func stateView(ctx context.Context, client *consume.Client, t robustType) (map[string]string, error) {
	st, err := client.NewState([]consume.Filter{{Resource: t.resource}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- st.Run(ctx) }()
	if err := st.WaitForSync(ctx); err != nil {
		return nil, err
	}
	out, err := indexed(st.Indexer(t.resource).List())
	cancel()
	if rerr := <-errc; rerr != nil && ctx.Err() == nil {
		return nil, rerr
	}
	return out, err
}

// informerView runs a client-go informer over consume's ListWatch of t
// until it has synced, and lists its store.
func informerView(ctx context.Context, client *consume.Client, t robustType) (map[string]string, error) {
	inf, err := client.NewSharedIndexInformer(consume.Filter{Resource: t.resource}, t.example(), 0, cache.Indexers{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the informer did not sync: %w", ctx.Err())
	}
	return indexed(inf.GetStore().List())
}

// indexed converts cached objects, typed or not, to their content by
// namespace/name.
func indexed(objs []any) (map[string]string, error) {
	out := map[string]string{}
	for _, o := range objs {
		ro, ok := o.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("a cached %T", o)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
		if err != nil {
			return nil, err
		}
		u := unstructured.Unstructured{Object: m}
		out[u.GetNamespace()+"/"+u.GetName()] = content(m)
	}
	return out, nil
}
