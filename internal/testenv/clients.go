package testenv

import (
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients are clients of the apiserver for tests that create many objects
// at once: their rate limit is QPS 500 / burst 1000.
type Clients struct {
	REST    *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Clients returns new Clients of the environment's apiserver.
func (e *Env) Clients(t testing.TB) Clients {
	t.Helper()
	c := Clients{REST: e.RESTConfig()}
	c.REST.QPS, c.REST.Burst = 500, 1000
	var err error
	if c.Kube, err = kubernetes.NewForConfig(c.REST); err == nil {
		c.Dynamic, err = dynamic.NewForConfig(c.REST)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}
