package informers

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// ownsA is a shard that owns namespace a.
func ownsA(namespace, _ string) bool { return namespace == "a" }

// A list keeps only the owned objects, and its metadata (the
// resourceVersion a watch starts from), and counts the others.
func TestOwnedListDropsOthers(t *testing.T) {
	lw := &cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items: []corev1.ConfigMap{*cm("a", "x", "1"), *cm("b", "x", "2"), *cm("a", "y", "3"), *cm("c", "z", "4")}}, nil
	}}
	foreign := 0
	got, err := ownedListWatch{lw: lw, owns: ownsA, foreign: func(n int) { foreign += n }}.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if foreign != 2 {
		t.Errorf("%d foreign objects counted, want 2 (b/x, c/z)", foreign)
	}
	list := got.(*corev1.ConfigMapList)
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	if !slices.Equal(names, []string{"a/x", "a/y"}) || list.ResourceVersion != "42" {
		t.Errorf("list holds %v at resourceVersion %q, want [a/x a/y] at 42", names, list.ResourceVersion)
	}
}

// A watch passes the owned objects' events, bookmarks and errors, and
// nothing of the others: not their adds, updates or deletes, which it
// counts.
func TestOwnedWatchDropsOthers(t *testing.T) {
	fw := watch.NewFake()
	lw := &cache.ListWatch{WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	var foreign atomic.Int64 // counted on the filter's goroutine
	w, err := ownedListWatch{lw: lw, owns: ownsA, foreign: func(n int) { foreign.Add(int64(n)) }}.WatchWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go func() {
		fw.Add(cm("b", "x", "1"))
		fw.Add(cm("a", "x", "2"))
		fw.Modify(cm("b", "x", "3"))
		fw.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "4"}})
		fw.Delete(cm("b", "x", "5"))
		fw.Modify(cm("a", "x", "6"))
		fw.Delete(cm("a", "x", "7"))
		fw.Error(&metav1.Status{Message: "gone", Code: 410})
	}()
	want := []string{"ADDED a/x@2", "BOOKMARK /@4", "MODIFIED a/x@6", "DELETED a/x@7", "ERROR"}
	var got []string
	for len(got) < len(want) {
		select {
		case ev := <-w.ResultChan():
			if c, ok := ev.Object.(*corev1.ConfigMap); ok {
				got = append(got, string(ev.Type)+" "+c.Namespace+"/"+c.Name+"@"+c.ResourceVersion)
			} else {
				got = append(got, string(ev.Type))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, then nothing; want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("watch delivered %v, want %v", got, want)
	}
	if n := foreign.Load(); n != 3 {
		t.Errorf("%d foreign events counted, want 3 (b/x added, modified, deleted)", n)
	}
}

// Named namespaces a shard does not own get no informer: a type whose
// namespaces are all another shard's needs no client at all, and is synced
// and empty.
func TestOwnedNamedNamespacesGetInformersOnlyWhenOwned(t *testing.T) {
	res := &Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	s, err := NewSource(Clients{}, res, Scope{Namespaces: []string{"b", "c"}}, nil, nil, WithOwns(ownsA))
	if err != nil {
		t.Fatalf("a Source of namespaces the shard does not own built informers: %v", err)
	}
	if !s.HasSynced() || len(s.Keys()) != 0 || len(s.informers) != 0 {
		t.Errorf("synced %v, keys %v, %d informers; want synced, none, none", s.HasSynced(), s.Keys(), len(s.informers))
	}
	if s.Scope.Namespaces[0] != "b" {
		t.Errorf("scope %v: the configured scope is what the type's begin markers say", s.Scope)
	}
	// An owned one among them gets its own informer.
	s, err = NewSource(Clients{Typed: fake.NewClientset()}, res, Scope{Namespaces: []string{"b", "a", "c"}}, nil, nil, WithOwns(ownsA))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.informers) != 1 {
		t.Errorf("%d informers for one owned namespace of three", len(s.informers))
	}
}

// The shard selector goes with every list and watch; whether the apiserver
// applied it is read from a list's shardInfo, or, when client-go lists by
// watching (watch-list, whose events do not say), from one probing list of
// one object, once.
func TestOwnedShardSelector(t *testing.T) {
	for _, echo := range []bool{true, false} {
		var sent []metav1.ListOptions
		lw := &cache.ListWatch{
			ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
				sent = append(sent, o)
				list := &corev1.ConfigMapList{}
				if echo {
					list.ShardInfo = &metav1.ShardInfo{Selector: o.ShardSelector}
				}
				return list, nil
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				sent = append(sent, o)
				return watch.NewFake(), nil
			},
		}
		var told []bool
		o := ownedListWatch{lw: lw, owns: ownsA, selector: NewShardSelector("sel"), filtered: func(f bool) { told = append(told, f) }, probe: &sync.Once{}}
		yes := true
		for range 2 {
			w, err := o.WatchWithContext(t.Context(), metav1.ListOptions{SendInitialEvents: &yes})
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
		}
		if _, err := o.ListWithContext(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, opts := range sent {
			if opts.ShardSelector != "sel" {
				t.Errorf("echo %v: request %d sent shard selector %q", echo, i, opts.ShardSelector)
			}
		}
		// The probe (a list of one), two watches, the list.
		if len(sent) != 4 || sent[0].Limit != 1 {
			t.Errorf("echo %v: %d requests, the first with limit %d; want a probe of one, two watches and a list", echo, len(sent), sent[0].Limit)
		}
		if want := []bool{echo, echo}; !slices.Equal(told, want) {
			t.Errorf("echo %v: told %v, want %v", echo, told, want)
		}
	}
}
