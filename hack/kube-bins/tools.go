//go:build tools

// Package tools pins the main packages built by hack/build-kube-bins.sh so
// that `go mod tidy` keeps their dependencies in go.mod/go.sum.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
