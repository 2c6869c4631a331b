package consume_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// The examples run against an in-process nats-server with JetStream and a
// stream written the way the bridge writes it, with pkg/encode.

var configMaps = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}

// exampleStream starts a server, creates the bridge's default stream and
// stores a start-up snapshot of two ConfigMaps and then some changes. The
// returned function stops the server.
func exampleStream() (jetstream.JetStream, func(informers.Change), func()) {
	dir, err := os.MkdirTemp("", "consume-example")
	if err != nil {
		panic(err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		panic(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	stop := func() { nc.Close(); srv.Shutdown(); srv.WaitForShutdown(); _ = os.RemoveAll(dir) }
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	subjects := contract.Subjects{Prefix: consume.DefaultSubjectPrefix, Cluster: consume.DefaultCluster}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: consume.DefaultStream, Subjects: []string{subjects.Stream()}, Storage: jetstream.MemoryStorage}); err != nil {
		panic(err)
	}
	enc := &encode.Encoder{Subjects: subjects}
	publish := func(m *nats.Msg) uint64 {
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			panic(err)
		}
		return ack.Sequence
	}
	term, err := enc.TermMarker(contract.TermData{Holder: "bridge-0"}, time.Unix(0, 0))
	if err != nil {
		panic(err)
	}
	enc.Term = publish(term)
	put := func(c informers.Change) {
		c.Resource = configMaps
		e, err := enc.EncodeWithin(c, 0)
		if err != nil {
			panic(err)
		}
		publish(e.Msg)
	}
	app := configMap("web", "app", "1", "10", "blue")
	put(informers.Change{Verb: informers.SnapshotBegin, SnapshotID: "s1"})
	put(informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s1", Object: app})
	put(informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s1", Object: configMap("web", "old", "2", "11", "red")})
	put(informers.Change{Verb: informers.SnapshotEnd, SnapshotID: "s1", SnapshotCount: 2})
	put(informers.Change{Verb: informers.Updated, Object: configMap("web", "app", "1", "12", "green"), OldObject: app})
	put(informers.Change{Verb: informers.Deleted, Object: configMap("web", "old", "2", "11", "red")})
	return js, put, stop
}

func configMap(ns, name, uid, rv, color string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Data: map[string]string{"color": color}}
}

// Iterate over the events of a type, with their objects decoded into
// client-go types.
func ExampleClient_Events() {
	js, _, stop := exampleStream()
	defer stop()
	client, err := consume.New(js) // the bridge's defaults: stream KUBEBRIDGE, prefix kubebridge, cluster default
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// UntilCaughtUp ends the loop when nothing more is stored; without it
	// the loop waits for new events until ctx ends.
	for ev, err := range client.Events(ctx, []consume.Filter{{Resource: "configmaps"}}, consume.UntilCaughtUp()) {
		if err != nil {
			panic(err)
		}
		switch ev.Verb {
		case consume.SnapshotBegin, consume.SnapshotEnd:
			fmt.Println(ev.Seq, ev.Verb, ev.SnapshotID)
		case consume.Updated:
			cm, old := ev.Object.(*corev1.ConfigMap), ev.OldObject.(*corev1.ConfigMap)
			fmt.Println(ev.Seq, ev.Verb, ev.Key(), old.Data["color"], "->", cm.Data["color"])
		default:
			cm := ev.Object.(*corev1.ConfigMap)
			fmt.Println(ev.Seq, ev.Verb, ev.Key(), cm.Data["color"])
		}
	}
	// Output:
	// 2 snapshot.begin s1
	// 3 snapshot.item web/app blue
	// 4 snapshot.item web/old red
	// 5 snapshot.end s1
	// 6 updated web/app blue -> green
	// 7 deleted web/old red
}

// Rebuild the current ConfigMaps, keep them live, and read them through a
// client-go lister.
func ExampleClient_NewState() {
	js, put, stop := exampleStream()
	defer stop()
	client, err := consume.New(js)
	if err != nil {
		panic(err)
	}
	st, err := client.NewState([]consume.Filter{{Resource: "configmaps"}}, consume.Bootstrap(consume.FullReplay))
	if err != nil {
		panic(err)
	}
	changes := make(chan string, 10)
	err = st.AddEventHandler("configmaps", cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			changes <- fmt.Sprintf("add %s initial=%v", obj.(*corev1.ConfigMap).Name, initial)
		},
		UpdateFunc: func(old, obj any) {
			changes <- fmt.Sprintf("update %s %s", obj.(*corev1.ConfigMap).Name, obj.(*corev1.ConfigMap).Data["color"])
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = st.Run(ctx) }()
	if err := st.WaitForSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println(<-changes)

	lister := listersv1.NewConfigMapLister(st.Indexer("configmaps"))
	cms, err := lister.ConfigMaps("web").List(labels.Everything())
	if err != nil {
		panic(err)
	}
	for _, cm := range cms {
		fmt.Println(cm.Namespace, cm.Name, cm.Data["color"])
	}

	put(informers.Change{Verb: informers.Updated, Object: configMap("web", "app", "1", "13", "yellow"), OldObject: configMap("web", "app", "1", "12", "green")})
	fmt.Println(<-changes)
	app, err := lister.ConfigMaps("web").Get("app")
	if err != nil {
		panic(err)
	}
	fmt.Println(app.ResourceVersion, app.Data["color"])
	fmt.Println(st.Stats().Breaches(), "violations")
	// Output:
	// add app initial=true
	// web app green
	// update app yellow
	// 13 yellow
	// 0 violations
}

// A service that must handle every change once stored, across its own
// restarts: a durable consumer keeps its position on the server, and an
// event counts as handled once the loop body is done with it.
func ExampleDurable() {
	js, put, stop := exampleStream()
	defer stop()
	client, err := consume.New(js)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// A filter with a namespace gets that namespace's objects, no
	// snapshot markers.
	filters := []consume.Filter{{Resource: "configmaps", Namespace: "web"}}
	run := func() {
		for ev, err := range client.Events(ctx, filters, consume.Durable("audit"), consume.UntilCaughtUp()) {
			if err != nil {
				panic(err)
			}
			fmt.Println(ev.Verb, ev.Key(), ev.ResourceVersion)
		}
	}
	run()
	put(informers.Change{Verb: informers.Deleted, Object: configMap("web", "app", "1", "12", "green")})
	fmt.Println("-- the service restarts")
	run()
	// Output:
	// snapshot.item web/app 10
	// snapshot.item web/old 11
	// updated web/app 12
	// deleted web/old 11
	// -- the service restarts
	// deleted web/app 12
}
