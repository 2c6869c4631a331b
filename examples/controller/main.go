package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// flags are the command line.
type flags struct {
	source     string
	kubeconfig string
	namespace  string
	natsURL    string
	stream     string
	prefix     string
	cluster    string
	workers    int
}

func main() {
	klog.InitFlags(nil)
	var f flags
	flag.StringVar(&f.source, "source", envOr("SOURCE", "apiserver"), "where the informer reads: apiserver or nats")
	flag.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig for -source=apiserver (in-cluster config when empty)")
	flag.StringVar(&f.namespace, "namespace", "", "namespace of the ConfigMaps; empty for all")
	flag.StringVar(&f.natsURL, "nats-url", envOr("NATS_URL", nats.DefaultURL), "NATS server for -source=nats")
	flag.StringVar(&f.stream, "stream", consume.DefaultStream, "stream (BRIDGE_STREAM_NAME)")
	flag.StringVar(&f.prefix, "subject-prefix", consume.DefaultSubjectPrefix, "subject prefix (BRIDGE_SUBJECT_PREFIX)")
	flag.StringVar(&f.cluster, "cluster", consume.DefaultCluster, "cluster name (BRIDGE_CLUSTER_NAME)")
	flag.IntVar(&f.workers, "workers", 2, "workers")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, f); err != nil {
		klog.Background().Error(err, "Controller failed")
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func run(ctx context.Context, f flags) error {
	informer, cleanup, err := newInformer(f)
	if err != nil {
		return err
	}
	defer cleanup()

	// From here on nothing knows where the informer reads from.
	c, err := NewController(ctx, informer)
	if err != nil {
		return err
	}
	go informer.RunWithContext(ctx)
	return c.Run(ctx, f.workers)
}

// newInformer builds the ConfigMap informer of the source f names, with
// the namespace index and appIndex.
func newInformer(f flags) (cache.SharedIndexInformer, func(), error) {
	switch f.source {
	case "apiserver":
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		informer := kubeinformers.NewSharedInformerFactoryWithOptions(cs, 0, kubeinformers.WithNamespace(f.namespace)).Core().V1().ConfigMaps().Informer()
		// The factory's informer has the namespace index already.
		if err := informer.AddIndexers(cache.Indexers{appIndex: consume.LabelIndexFunc(appIndex)}); err != nil {
			return nil, nil, err
		}
		return informer, func() {}, nil
	case "nats":
		nc, err := nats.Connect(f.natsURL, nats.MaxReconnects(-1))
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		client, err := consume.New(js, consume.WithStream(f.stream), consume.WithSubjectPrefix(f.prefix), consume.WithCluster(f.cluster))
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		informer, err := client.NewSharedIndexInformer(consume.Filter{Resource: "configmaps", Namespace: f.namespace}, &corev1.ConfigMap{}, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, appIndex: consume.LabelIndexFunc(appIndex)})
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return informer, nc.Close, nil
	}
	return nil, nil, fmt.Errorf("-source=%q: want apiserver or nats", f.source)
}
