package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/bridgetest"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{})
}

// TestControllerOnBothSources runs the controller twice, on an informer on
// the apiserver and on one over NATS fed by the bridge, while ConfigMaps
// are created, relabelled and deleted: both end having reconciled every
// ConfigMap at the resourceVersion the apiserver lists, and having found
// the deleted ones gone.
func TestControllerOnBothSources(t *testing.T) {
	env := testenv.Get(t)
	cs, err := kubernetes.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns.Name)
	configMap := func(i int, app string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{appIndex: app}},
			Data: map[string]string{"i": fmt.Sprint(i)}}
	}
	for i := range 20 {
		if _, err := cms.Create(ctx, configMap(i, fmt.Sprint("app-", i%3)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := flags{kubeconfig: env.KubeconfigPath(), namespace: ns.Name, natsURL: env.NATSURL(),
		stream: "EXAMPLE_CONTROLLER", prefix: "example", cluster: "it", workers: 2}
	runBridge(t, env, f)

	controllers := map[string]*Controller{}
	var synced []cache.InformerSynced
	for _, source := range []string{"apiserver", "nats"} {
		f.source = source
		informer, cleanup, err := newInformer(f)
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		t.Cleanup(cleanup)
		// The controllers log a line per reconcile; a failure's message
		// must not drown in them.
		c, err := NewController(klog.NewContext(ctx, logr.Discard()), informer)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{}, 2)
		go func() { informer.RunWithContext(ctx); done <- struct{}{} }()
		go func() {
			if err := c.Run(klog.NewContext(ctx, logr.Discard()), f.workers); err != nil {
				t.Errorf("%s: %v", source, err)
			}
			done <- struct{}{}
		}()
		t.Cleanup(func() { cancel(); <-done; <-done })
		controllers[source] = c
		synced = append(synced, informer.HasSynced)
	}
	// The changes start once both caches hold the ConfigMaps: a ConfigMap
	// deleted before an informer listed is never seen by its controller
	// (CI failed so once, the NATS informer's list being slow).
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the informers' caches did not sync")
	}

	want := map[cache.ObjectName]string{}
	for i := range 10 {
		cm, err := cms.Get(ctx, fmt.Sprintf("cm-%02d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels[appIndex] = "app-new"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 10; i < 15; i++ {
		if err := cms.Delete(ctx, fmt.Sprintf("cm-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want[cache.ObjectName{Namespace: ns.Name, Name: fmt.Sprintf("cm-%02d", i)}] = ""
	}
	for i := 20; i < 25; i++ {
		if _, err := cms.Create(ctx, configMap(i, "app-new"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		want[cache.ObjectName{Namespace: cm.Namespace, Name: cm.Name}] = cm.ResourceVersion
	}

	var api, overNATS map[cache.ObjectName]string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		api, overNATS = controllers["apiserver"].Reconciled(), controllers["nats"].Reconciled()
		return maps.Equal(api, want) && maps.Equal(overNATS, want), nil
	})
	if err != nil {
		t.Fatalf("after 90s the controllers' last reconciles differ from the apiserver's list:\non the apiserver: %s\nover NATS: %s",
			reconcileDiff(api, want), reconcileDiff(overNATS, want))
	}
}

// reconcileDiff says in a line where got differs from want: the CI log
// keeps the head of a failed test's output, so the message must be short.
func reconcileDiff(got, want map[cache.ObjectName]string) string {
	rv := func(m map[cache.ObjectName]string, k cache.ObjectName) string {
		v, ok := m[k]
		switch {
		case !ok:
			return "never reconciled"
		case v == "":
			return "gone"
		}
		return "resourceVersion " + v
	}
	keys := maps.Clone(want)
	maps.Copy(keys, got)
	var diffs []string
	for _, k := range slices.SortedFunc(maps.Keys(keys), func(a, b cache.ObjectName) int { return strings.Compare(a.String(), b.String()) }) {
		if g, w := rv(got, k), rv(want, k); g != w {
			diffs = append(diffs, fmt.Sprintf("%s: %s, want %s", k.Name, g, w))
		}
	}
	if len(diffs) == 0 {
		return "as listed"
	}
	return strings.Join(diffs, "; ")
}

// runBridge runs the bridge on the namespace's ConfigMaps until the test
// ends, and waits until its start-up snapshots are stored.
func runBridge(t *testing.T, env *testenv.Env, f flags) {
	t.Helper()
	// Closed after the stream is deleted: cleanups run last first.
	nc := natstest.Connect(t, f.natsURL)
	run := bridgetest.Start(t, env, map[string]string{
		"BRIDGE_RESOURCES": "configmaps", "BRIDGE_NAMESPACES": f.namespace, "BRIDGE_CLUSTER_NAME": f.cluster,
		"BRIDGE_SUBJECT_PREFIX": f.prefix, "BRIDGE_STREAM_NAME": f.stream, "NATS_URL": f.natsURL,
	})
	t.Cleanup(func() {
		run.Stop()
		if js, err := jetstream.New(nc); err == nil {
			_ = js.DeleteStream(context.Background(), f.stream)
		}
	})
}
