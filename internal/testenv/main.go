package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// The environment started by Main, or the reason it was not.
var (
	current    *Env
	skipReason string
)

// Main is meant to be the whole body of a package's TestMain. It starts
// the environment, runs opts.Setup, runs the tests, closes the environment
// and exits with the tests' status. Tests obtain the environment with Get.
//
// If the binaries are missing (see BinDir), the tests still run but Get
// skips every test that asks for the environment, so plain unit tests in
// the same package are unaffected; with $KUBEBRIDGE_REQUIRE_E2E=1 the run
// fails instead. When tests fail, the component logs are kept and their
// location is printed.
func Main(m Tests, opts Options) {
	os.Exit(run(m, opts))
}

// Tests are what Main runs: a *testing.M, or one wrapped to do more
// around its Run.
type Tests interface{ Run() int }

func run(m Tests, opts Options) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if _, err := BinDir(); err != nil {
		if Required() {
			fmt.Fprintf(os.Stderr, "testenv: FAIL: %v ($%s=1)\n", err, EnvRequireE2E)
			return 1
		}
		skipReason = fmt.Sprintf("testenv: skipping end-to-end test: %v", err)
		return m.Run()
	}

	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	start := time.Now()
	env, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: FAIL: %v\n", err)
		return 1
	}
	defer env.Close()

	// Clean up the temp dir (and children) on ^C / SIGTERM too.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "testenv: %v: shutting down environment\n", sig)
		env.Close()
		os.Exit(1)
	}()

	fmt.Fprintf(os.Stderr, "testenv: environment up in %v (kube-apiserver %s, etcd %s, nats %s, logs %s)\n",
		time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.EtcdEndpoint(), env.NATSURL(), env.LogDir())

	if opts.Setup != nil {
		if err := opts.Setup(ctx, env); err != nil {
			env.KeepLogs()
			fmt.Fprintf(os.Stderr, "testenv: FAIL: setup: %v (logs kept in %s)\n", err, env.LogDir())
			return 1
		}
	}
	cancel()

	current = env
	code := m.Run()
	current = nil
	if code != 0 {
		env.KeepLogs()
		fmt.Fprintf(os.Stderr, "testenv: tests failed; component logs kept in %s\n", env.LogDir())
	}
	return code
}

// Get returns the environment started by Main. If the binaries are not
// available (and not required) it skips the test with a message saying
// how to build them; if Main was not used it fails the test.
func Get(t testing.TB) *Env {
	t.Helper()
	if current != nil {
		return current
	}
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Fatal("testenv.Get: no environment; call testenv.Main(m, ...) from TestMain")
	return nil
}

// SkipIfNoBinaries is for tests that start their own Env with Start: it
// skips t when err wraps ErrNoBinaries and end-to-end tests are not
// required, and fails t for any other error.
func SkipIfNoBinaries(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoBinaries) && !Required():
		t.Skipf("testenv: skipping end-to-end test: %v", err)
	default:
		t.Fatal(err)
	}
}
