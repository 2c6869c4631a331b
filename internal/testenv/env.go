package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"k8s.io/client-go/rest"
)

// Options configure an Env. The zero value is usable.
type Options struct {
	// APIServerFlags are appended to kube-apiserver's command line on every
	// start, after the flags testenv sets, so they can override them
	// (e.g. "--watch-cache=false", "--etcd-compaction-interval=0").
	APIServerFlags []string

	// EtcdFlags are appended to etcd's command line on every start.
	EtcdFlags []string

	// NATS, if set, adjusts the NATS server options before the first start,
	// e.g. to set MaxPayload. Host, Port, JetStream, StoreDir and logging
	// are already filled in; changing Port or StoreDir is allowed.
	NATS func(*server.Options)

	// StartTimeout bounds Start (and, in Main, Setup). Default 2 minutes.
	StartTimeout time.Duration

	// Setup, used only by Main, runs once after the environment is up and
	// before any test, e.g. to install CRDs. An error fails the run.
	Setup func(context.Context, *Env) error
}

// Env is a running etcd + kube-apiserver + NATS (JetStream) environment.
// It is not tied to a *testing.T: create it once per test binary (see
// Main) and Close it when done. Its methods are safe for concurrent use.
type Env struct {
	opts   Options
	binDir string
	dir    string // temp root, removed by Close

	logDir     string
	etcdData   string
	certDir    string
	caFile     string
	saKeyFile  string
	saPubFile  string
	tokenFile  string
	kubeconfig string
	natsStore  string

	token          string
	etcdClientPort int
	etcdPeerPort   int
	apiPort        int

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	caData    []byte
	nats      *server.Server
	natsOpts  *server.Options // template for every NATS start; Port fixed after the first
	keepLogs  bool
	closed    bool
}

const (
	natsServerName       = "testenv"
	defaultStartTimeout  = 2 * time.Minute
	natsReadyTimeout     = 10 * time.Second
	serviceAccountIssuer = "https://kubernetes.default.svc"
)

// Start creates a temp dir, starts NATS, etcd and kube-apiserver, and
// waits until all of them are ready. The returned error wraps
// ErrNoBinaries if the binaries cannot be found (see BinDir). On any other
// failure everything started so far is torn down, but the component logs
// are kept and their location is part of the error.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	dir, err := os.MkdirTemp("", "kubebridge-testenv-")
	if err != nil {
		return nil, err
	}
	e := &Env{
		opts:       opts,
		binDir:     binDir,
		dir:        dir,
		logDir:     filepath.Join(dir, "logs"),
		etcdData:   filepath.Join(dir, "etcd-data"), // created by etcd itself, 0700
		certDir:    filepath.Join(dir, "apiserver-certs"),
		saKeyFile:  filepath.Join(dir, "auth", "sa.key"),
		saPubFile:  filepath.Join(dir, "auth", "sa.pub"),
		tokenFile:  filepath.Join(dir, "auth", "tokens.csv"),
		kubeconfig: filepath.Join(dir, "kubeconfig"),
		natsStore:  filepath.Join(dir, "nats"),
	}
	e.caFile = filepath.Join(e.certDir, "apiserver.crt")
	defer func() {
		if err != nil {
			e.mu.Lock()
			e.keepLogs = true
			e.mu.Unlock()
			e.Close()
			if !strings.HasPrefix(err.Error(), "testenv: ") {
				err = fmt.Errorf("testenv: %w", err)
			}
			err = fmt.Errorf("%w\n(logs kept in %s)", err, e.logDir)
		}
	}()

	for _, d := range []string{e.logDir, e.certDir, filepath.Dir(e.tokenFile), e.natsStore} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if e.token, err = newToken(); err != nil {
		return nil, err
	}
	if err := writeTokenFile(e.tokenFile, e.token); err != nil {
		return nil, err
	}
	if err := writeServiceAccountKeys(e.saKeyFile, e.saPubFile); err != nil {
		return nil, err
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	e.etcdClientPort, e.etcdPeerPort, e.apiPort = ports[0], ports[1], ports[2]

	e.natsOpts = &server.Options{
		ServerName: natsServerName,
		Host:       "127.0.0.1",
		// A port of freePorts', not one the kernel picks: a test that
		// stops NATS starts it again on the same port.
		Port:      ports[3],
		JetStream: true,
		StoreDir:  e.natsStore,
		NoSigs:    true,
		LogFile:   filepath.Join(e.logDir, "nats.log"),
		Logtime:   true,
	}
	if opts.NATS != nil {
		opts.NATS(e.natsOpts)
	}
	startNATS := func(context.Context) error { return e.StartNATS() }
	if err := startOnFreePorts(ctx, startNATS, e.repickNATSPort); err != nil {
		return nil, err
	}
	if err := startOnFreePorts(ctx, e.StartEtcd, e.repickEtcdPorts); err != nil {
		return nil, err
	}
	startAPIServer := func(ctx context.Context) error { return e.StartAPIServer(ctx) }
	if err := startOnFreePorts(ctx, startAPIServer, e.repickAPIServerPort); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(e.kubeconfig, e.APIServerURL(), e.caFile, e.token); err != nil {
		return nil, err
	}
	return e, nil
}

// startOnFreePorts runs start and, when its process could not bind a port
// that freePorts had found free, lets repick choose others and runs start
// again, at most three times in all. A port is free only until something
// takes it: between freePorts and the bind, another test package starting
// its servers, or any outgoing connection's ephemeral port, can.
func startOnFreePorts(ctx context.Context, start func(context.Context) error, repick func() error) error {
	for attempt := 1; ; attempt++ {
		err := start(ctx)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		if err := repick(); err != nil {
			return err
		}
	}
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

// repickAPIServerPort chooses a new port for a first start of
// kube-apiserver that failed to bind.
func (e *Env) repickAPIServerPort() error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.apiPort = ports[0]
	e.mu.Unlock()
	return nil
}

// Close kills kube-apiserver and etcd, stops NATS and removes the temp dir.
// If KeepLogs was called (Main does so when tests fail) the logs directory
// is left in place; with $KUBEBRIDGE_KEEP_TESTENV=1 everything is. Close is
// idempotent.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.apiserver.kill()
	e.etcd.kill()
	e.stopNATSLocked()

	switch {
	case os.Getenv(EnvKeep) == "1":
		fmt.Fprintf(os.Stderr, "testenv: keeping %s ($%s=1)\n", e.dir, EnvKeep)
		return nil
	case e.keepLogs:
		entries, err := os.ReadDir(e.dir)
		if err != nil {
			return err
		}
		var errs []error
		for _, ent := range entries {
			if p := filepath.Join(e.dir, ent.Name()); p != e.logDir {
				errs = append(errs, os.RemoveAll(p))
			}
		}
		return errors.Join(errs...)
	default:
		return os.RemoveAll(e.dir)
	}
}

// KeepLogs makes Close leave the log directory (LogDir) behind.
func (e *Env) KeepLogs() {
	e.mu.Lock()
	e.keepLogs = true
	e.mu.Unlock()
}

// Dir is the environment's temp root.
func (e *Env) Dir() string { return e.dir }

// LogDir holds etcd.log, kube-apiserver.log and nats.log. Each file is
// appended to across restarts.
func (e *Env) LogDir() string { return e.logDir }

// ---- kube-apiserver ----

// APIServerURL is https://127.0.0.1:<port>. It stays the same across
// restarts.
func (e *Env) APIServerURL() string { return "https://" + hostPort(e.apiPort) }

// Token is the admin bearer token (user "admin", group system:masters).
func (e *Env) Token() string { return e.token }

// CAFile is the absolute path of the CA bundle for the API server's
// self-signed serving certificate. It stays valid across restarts.
func (e *Env) CAFile() string { return e.caFile }

// KubeconfigPath is a kubeconfig for the admin user written by Start.
func (e *Env) KubeconfigPath() string { return e.kubeconfig }

// WriteKubeconfig writes a kubeconfig for the admin user to path. It
// references CAFile by absolute path, so it is only valid while the Env
// is open.
func (e *Env) WriteKubeconfig(path string) error {
	return writeKubeconfig(path, e.APIServerURL(), e.caFile, e.token)
}

// RESTConfig returns a new admin *rest.Config (bearer token + CA). Client
// rate limiting is raised to QPS 100 / burst 200.
func (e *Env) RESTConfig() *rest.Config {
	e.mu.Lock()
	ca := bytes.Clone(e.caData)
	e.mu.Unlock()
	return &rest.Config{
		Host:            e.APIServerURL(),
		BearerToken:     e.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             100,
		Burst:           200,
	}
}

// StartAPIServer starts kube-apiserver on the same port, cert dir and etcd
// as before and waits for /readyz. Its flags are testenv's, then
// Options.APIServerFlags, then extraFlags (later flags win). It fails if
// kube-apiserver is already running.
func (e *Env) StartAPIServer(ctx context.Context, extraFlags ...string) error {
	e.mu.Lock()
	if err := e.checkOpen(); err != nil {
		e.mu.Unlock()
		return err
	}
	if e.apiserver != nil && !e.apiserver.exited() {
		e.mu.Unlock()
		return errors.New("testenv: kube-apiserver is already running")
	}
	args := []string{
		"--etcd-servers=" + e.EtcdEndpoint(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(e.apiPort),
		"--cert-dir=" + e.certDir,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + e.saPubFile,
		"--service-account-signing-key-file=" + e.saKeyFile,
		"--token-auth-file=" + e.tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		// The default "lease" reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
	}
	args = append(args, e.opts.APIServerFlags...)
	args = append(args, extraFlags...)
	p, err := startProcess("kube-apiserver", filepath.Join(e.binDir, binAPIServer),
		filepath.Join(e.logDir, "kube-apiserver.log"), args)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	e.apiserver = p
	e.mu.Unlock()

	var client *http.Client
	err = p.waitFor(ctx, "/readyz", func(ctx context.Context) error {
		if client == nil {
			// The serving cert is generated by kube-apiserver on first start.
			ca, err := os.ReadFile(e.caFile)
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return fmt.Errorf("no certificates in %s", e.caFile)
			}
			client = &http.Client{Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool},
			}}
			e.mu.Lock()
			e.caData = ca
			e.mu.Unlock()
		}
		return e.getOK(ctx, client, e.APIServerURL()+"/readyz", e.token)
	})
	if client != nil {
		client.CloseIdleConnections()
	}
	if err != nil {
		e.KillAPIServer()
	}
	return err
}

// KillAPIServer SIGKILLs kube-apiserver and waits for it to exit. (SIGTERM
// would take about a minute while watches are open.) It is a no-op if the
// API server is not running.
func (e *Env) KillAPIServer() {
	e.mu.Lock()
	p := e.apiserver
	e.mu.Unlock()
	p.kill()
}

// RestartAPIServer is KillAPIServer followed by StartAPIServer.
func (e *Env) RestartAPIServer(ctx context.Context, extraFlags ...string) error {
	e.KillAPIServer()
	return e.StartAPIServer(ctx, extraFlags...)
}

// ---- etcd ----

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

// ---- NATS ----

// ---- helpers ----

func (e *Env) checkOpen() error {
	if e.closed {
		return errors.New("testenv: environment is closed")
	}
	return nil
}

// getOK GETs url and succeeds on HTTP 200.
func (e *Env) getOK(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
