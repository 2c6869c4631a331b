package consume_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

var modes = []consume.BootstrapMode{consume.LastPerSubject, consume.FullReplay}

// filters are the two types of a test: ConfigMaps (typed) and widgets (a
// custom resource: unstructured), in the test's namespace.
func (h *harness) filters() []consume.Filter {
	return []consume.Filter{{Resource: "configmaps", Namespace: h.ns}, {Resource: "widgets.example.com"}}
}

// startState runs a State until the test ends and waits until it synced.
func (h *harness) startState(mode consume.BootstrapMode, handlers map[string]*mirror) *consume.State {
	h.t.Helper()
	st, err := h.client().NewState(h.filters(), consume.Bootstrap(mode),
		consume.WithHooks(consume.Hooks{OnViolation: func(v consume.Violation) {
			// A bootstrap from the last message per subject made while a
			// snapshot runs reads the previous snapshot's end (its
			// subject's last message) before the running one's begin,
			// which replaced that snapshot's begin: end-skipped, reported
			// and no breach. A full replay reads every begin, so it must
			// never see one.
			if v.Kind.Breach() || mode == consume.FullReplay {
				h.t.Errorf("%s: violation: %v", mode, &v)
			}
		}}))
	if err != nil {
		h.t.Fatal(err)
	}
	for resource, m := range handlers {
		if err := st.AddEventHandler(resource, m); err != nil {
			h.t.Fatal(err)
		}
	}
	_, ctx := ktesting.NewTestContext(h.t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("%s: Run: %v", mode, err)
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := st.WaitForSync(wctx); err != nil {
		h.t.Fatalf("%s: WaitForSync: %v", mode, err)
	}
	return st
}

// checkState compares a State with the apiserver's lists.
func (h *harness) checkState(what string, st *consume.State, configMaps, widgets []string) {
	h.t.Helper()
	if d := diff(held(st.Indexer("configmaps")), configMaps); d != "" {
		h.t.Errorf("%s: configmaps: %s", what, d)
	}
	if d := diff(held(st.Indexer("widgets.example.com")), widgets); d != "" {
		h.t.Errorf("%s: widgets: %s", what, d)
	}
	// Typed for built-in kinds, so the client-go lister works.
	cms, err := listersv1.NewConfigMapLister(st.Indexer("configmaps")).ConfigMaps(h.ns).List(labels.Everything())
	if err != nil || len(cms) != len(configMaps) {
		h.t.Errorf("%s: the lister lists %d configmaps (%v), want %d", what, len(cms), err, len(configMaps))
	}
	for _, o := range st.Indexer("widgets.example.com").List() {
		if _, ok := o.(*unstructured.Unstructured); !ok {
			h.t.Fatalf("%s: a widget is a %T", what, o)
		}
	}
	if s := st.Stats(); s.Breaches() != 0 {
		h.t.Errorf("%s: %d violations: %v", what, s.Breaches(), s.Violations)
	}
}

// waitCaughtUp waits until st has handled everything the stream held
// when it is called.
func (h *harness) waitCaughtUp(st *consume.State) {
	h.t.Helper()
	s, err := h.js.Stream(context.Background(), h.stream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return st.Stats().LastSeq >= info.State.LastSeq, nil
	})
	if err != nil {
		h.t.Fatalf("the live state handled up to seq %d after a minute, the stream holds %d", st.Stats().LastSeq, info.State.LastSeq)
	}
}

// createConfigMaps creates n ConfigMaps cm-000…, a few at a time.
func (h *harness) createConfigMaps(from, n int) {
	h.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for i := from; i < from+n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
			if _, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
}

// TestStateEqualsTheAPIServer runs the bridge on a real kube-apiserver and
// checks both bootstraps against the apiserver's lists: after the start-up
// snapshot, and after a restart of the bridge with objects deleted,
// updated and created while it was down. A State that ran all along (with
// a handler keeping its own copy) follows the restart to the same lists.
func TestStateEqualsTheAPIServer(t *testing.T) {
	const objects, deleted, updated, created = 300, 40, 40, 10
	h := newHarness(t)
	h.ensureWidgetCRD()
	ctx := context.Background()
	h.createConfigMaps(0, objects)
	for i := range 20 {
		if _, err := h.dyn.Resource(widgetGVR).Namespace(h.ns).Create(ctx, h.widget(fmt.Sprintf("w-%02d", i), int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resources := "configmaps; widgets.example.com"
	stop := h.runBridge(resources)
	cms, ws := h.listed()
	for _, mode := range modes {
		h.checkState(mode.String()+" after the start-up snapshot", h.startState(mode, nil), cms, ws)
	}
	mirrors := map[string]*mirror{"configmaps": newMirror(), "widgets.example.com": newMirror()}
	live := h.startState(consume.LastPerSubject, mirrors)
	stop()

	// While no bridge runs.
	for i := range deleted {
		if err := h.cs.CoreV1().ConfigMaps(h.ns).Delete(ctx, fmt.Sprintf("cm-%03d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := deleted; i < deleted+updated; i++ {
		cm, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, fmt.Sprintf("cm-%03d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["i"] = "updated while down"
		if _, err := h.cs.CoreV1().ConfigMaps(h.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.createConfigMaps(objects, created)
	for i := range 5 {
		if err := h.dyn.Resource(widgetGVR).Namespace(h.ns).Delete(ctx, fmt.Sprintf("w-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	h.runBridge(resources)
	cms, ws = h.listed()
	if len(cms) != objects-deleted+created || len(ws) != 15 {
		t.Fatalf("the apiserver lists %d configmaps and %d widgets", len(cms), len(ws))
	}
	h.waitCaughtUp(live)
	h.checkState("the live state after the restart", live, cms, ws)
	if d := diff(mirrors["configmaps"].list(), cms); d != "" {
		t.Errorf("the handler's copy of the configmaps: %s", d)
	}
	if d := diff(mirrors["widgets.example.com"].list(), ws); d != "" {
		t.Errorf("the handler's copy of the widgets: %s", d)
	}
	for _, mode := range modes {
		h.checkState(mode.String()+" after the restart", h.startState(mode, nil), cms, ws)
	}
	t.Logf("live state: %+v", live.Stats())
}
