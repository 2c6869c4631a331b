package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
