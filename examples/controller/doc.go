// Command controller is a sample-controller–style controller of
// ConfigMaps (informer, lister, indexers, workqueue, workers) that runs
// unchanged on either source of its informer: the API server (a client-go
// informer through KUBECONFIG) or a kubebridge stream in NATS (the
// informer of pkg/consume). Only the informer's construction, in main.go,
// differs; Controller sees a cache.SharedIndexInformer either way. It does
// nothing to the cluster: it logs what it would do and counts it.
//
//	go run ./examples/controller -source=apiserver -namespace=web
//	go run ./examples/controller -source=nats -nats-url=nats://127.0.0.1:4222 -cluster=prod -namespace=web
package main
