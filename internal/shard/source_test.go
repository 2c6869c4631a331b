package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// changeLog is an informers.Queue that keeps what it is given.
type changeLog struct {
	mu      sync.Mutex
	changes []string
}

func (l *changeLog) Add(c informers.Change) {
	m, err := meta.Accessor(c.Object)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, string(c.Verb)+" "+m.GetNamespace()+"/"+m.GetName())
}

func (l *changeLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.changes {
		if c == s {
			return true
		}
	}
	return false
}

func (l *changeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.changes...)
}

var configMaps = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}

// A Source WithOwns a shard's Owns holds, on the typed (protobuf) path and
// on the dynamic one, only the shard's objects, and reports only their
// changes: another shard's objects never reach its cache.
func TestSourceHoldsOnlyItsShard(t *testing.T) {
	env := testenv.Get(t)
	cfg := env.RESTConfig()
	typedCfg := rest.CopyConfig(cfg)
	typedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	typed, err := kubernetes.NewForConfig(typedCfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	all := seed(ctx, t, typed, "source", 12)
	sh := Shard{Index: 2, Count: 3}
	var owned, other string
	for _, ns := range all {
		switch {
		case Owns(sh, ns, "") && owned == "":
			owned = ns
		case !Owns(sh, ns, "") && other == "":
			other = ns
		}
	}
	if owned == "" || other == "" {
		t.Fatalf("shard %s: the test needs an owned and another namespace among %v", sh, all)
	}

	for _, tc := range []struct {
		name    string
		clients informers.Clients
		typed   bool
		// scope names the namespaces, or is every namespace.
		scope informers.Scope
	}{
		{"typed", informers.Clients{Typed: typed, Dynamic: dyn, Config: typedCfg}, true, informers.Scope{}},
		{"dynamic", informers.Clients{Dynamic: dyn}, false, informers.Scope{}},
		// The owned namespaces' own informers, which the apiserver
		// filters; the typed informer factory's path.
		{"named-namespaces", informers.Clients{Typed: typed, Dynamic: dyn, Config: typedCfg}, true, informers.Scope{Namespaces: all}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &changeLog{}
			s, err := informers.NewSource(tc.clients, configMaps, tc.scope, nil, log, informers.WithOwns(Owner(sh)))
			if err != nil {
				t.Fatal(err)
			}
			if s.Typed != tc.typed {
				t.Fatalf("Typed %v, want %v", s.Typed, tc.typed)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			s.Run(runCtx)
			if !cache.WaitForCacheSync(runCtx.Done(), s.HasSynced) {
				t.Fatal("informers did not sync")
			}
			keys := s.Keys()
			for _, k := range keys {
				if ns, _, _ := strings.Cut(k, "/"); !Owns(sh, ns, "") {
					t.Errorf("cache holds %s, of another shard", k)
				}
			}
			for _, ns := range all {
				if Owns(sh, ns, "") && !contains(keys, ns+"/cm") {
					t.Errorf("cache lacks %s/cm, the shard's own (holds %v)", ns, keys)
				}
			}

			// The other shard's changes first: the watch delivers in
			// resourceVersion order, so had one passed, it would be in the
			// log before the shard's own delete.
			name := "live-" + tc.name
			for _, ns := range []string{other, owned} {
				c := typed.CoreV1().ConfigMaps(ns)
				if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			want := fmt.Sprintf("%s %s/%s", informers.Deleted, owned, name)
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return log.has(want), nil
			})
			if err != nil {
				t.Fatalf("no %q within a minute; changes %v", want, log.all())
			}
			for _, c := range log.all() {
				if strings.Contains(c, other+"/") {
					t.Errorf("change %q of another shard reported", c)
				}
			}
			for _, v := range []informers.Verb{informers.Added, informers.Updated} {
				if w := fmt.Sprintf("%s %s/%s", v, owned, name); !log.has(w) {
					t.Errorf("no %q; changes %v", w, log.all())
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
