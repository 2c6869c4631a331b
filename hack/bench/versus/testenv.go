package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// startEnv starts etcd, kube-apiserver and NATS as the flags set them.
func startEnv(ctx context.Context, o options) (*testenv.Env, error) {
	opts := testenv.Options{
		StartTimeout: 3 * time.Minute,
		// Large objects and churn write gigabytes of revisions between the
		// apiserver's compactions; etcd's default 2 GiB quota would stop
		// the run.
		EtcdFlags: []string{"--quota-backend-bytes=" + strconv.Itoa(8<<30)},
	}
	if o.maxPayload > 0 {
		opts.NATS = func(so *server.Options) { so.MaxPayload = int32(o.maxPayload) }
	}
	var gates []string
	if o.gate {
		gates = append(gates, "ShardedListAndWatch=true")
	}
	if o.cborServer {
		gates = append(gates, "CBORServingAndStorage=true")
	}
	if len(gates) > 0 {
		opts.APIServerFlags = append(opts.APIServerFlags, "--feature-gates="+strings.Join(gates, ","))
	}
	start := time.Now()
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "environment up in %v: kube-apiserver %s, nats %s (max_payload %d)\n",
		time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.NATSURL(), natsMaxPayload(env))
	return env, nil
}

// benchClients are the parent's clients of the API server (they create
// and change the objects), and the server's version.
func benchClients(env *testenv.Env) (clients, string, error) {
	rc := env.RESTConfig()
	rc.QPS, rc.Burst = 500, 1000
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return clients{}, "", err
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return clients{}, "", err
	}
	serverVersion := "unknown"
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		serverVersion = v.GitVersion
	}
	return clients{typed: cs, dynamic: dyn}, serverVersion, nil
}

// natsMaxPayload is the max_payload the NATS server announces to clients.
func natsMaxPayload(env *testenv.Env) int {
	nc, err := nats.Connect(env.NATSURL())
	if err != nil {
		return -1
	}
	defer nc.Close()
	return int(nc.MaxPayload())
}
