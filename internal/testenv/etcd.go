package testenv

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
)

// EtcdEndpoint is etcd's client URL, http://127.0.0.1:<port>. It stays the
// same across restarts.
func (e *Env) EtcdEndpoint() string { return "http://" + hostPort(e.etcdClientPort) }

// StartEtcd starts etcd with the same data dir and ports as before and
// waits until /health reports healthy. It fails if etcd is running.
func (e *Env) StartEtcd(ctx context.Context) error {
	e.mu.Lock()
	if err := e.checkOpen(); err != nil {
		e.mu.Unlock()
		return err
	}
	if e.etcd != nil && !e.etcd.exited() {
		e.mu.Unlock()
		return errors.New("testenv: etcd is already running")
	}
	peerURL := "http://" + hostPort(e.etcdPeerPort)
	args := []string{
		"--name=testenv",
		"--data-dir=" + e.etcdData,
		"--listen-client-urls=" + e.EtcdEndpoint(),
		"--advertise-client-urls=" + e.EtcdEndpoint(),
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testenv=" + peerURL,
		"--unsafe-no-fsync",
	}
	args = append(args, e.opts.EtcdFlags...)
	p, err := startProcess("etcd", filepath.Join(e.binDir, binEtcd),
		filepath.Join(e.logDir, "etcd.log"), args)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	e.etcd = p
	e.mu.Unlock()

	client := &http.Client{}
	defer client.CloseIdleConnections()
	err = p.waitFor(ctx, "/health", func(ctx context.Context) error {
		return e.getOK(ctx, client, e.EtcdEndpoint()+"/health", "")
	})
	if err != nil {
		e.KillEtcd()
	}
	return err
}

// KillEtcd SIGKILLs etcd and waits for it to exit. It is a no-op if etcd is
// not running.
func (e *Env) KillEtcd() {
	e.mu.Lock()
	p := e.etcd
	e.mu.Unlock()
	p.kill()
}

// RestartEtcd is KillEtcd followed by StartEtcd.
func (e *Env) RestartEtcd(ctx context.Context) error {
	e.KillEtcd()
	return e.StartEtcd(ctx)
}

// repickEtcdPorts chooses new client and peer ports for a first start of
// etcd that failed to bind, and removes what that start wrote.
func (e *Env) repickEtcdPorts() error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.etcdClientPort, e.etcdPeerPort = ports[0], ports[1]
	e.mu.Unlock()
	return os.RemoveAll(e.etcdData)
}
