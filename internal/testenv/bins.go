package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Environment variables read by this package.
const (
	// EnvKubeBins names the directory holding the kube-apiserver, etcd and
	// etcdctl binaries, as printed by hack/build-kube-bins.sh.
	EnvKubeBins = "KUBEBRIDGE_KUBE_BINS"
	// EnvRequireE2E, when set to "1", turns missing binaries into a hard
	// failure instead of a skip. `make test` and CI set it.
	EnvRequireE2E = "KUBEBRIDGE_REQUIRE_E2E"
	// EnvKeep, when set to "1", keeps the environment's temp dir (data,
	// certs, kubeconfig and logs) after Close, for debugging.
	EnvKeep = "KUBEBRIDGE_KEEP_TESTENV"
)

// ErrNoBinaries is returned (wrapped) by BinDir when the control-plane
// binaries cannot be found.
var ErrNoBinaries = errors.New("kube-apiserver/etcd/etcdctl binaries not available")

// Names of the binaries expected in BinDir.
const (
	binAPIServer = "kube-apiserver"
	binEtcd      = "etcd"
	binEtcdctl   = "etcdctl"
)

var requiredBins = []string{binAPIServer, binEtcd, binEtcdctl}

// hint tells the developer how to get the binaries.
const hint = "run `make test`, which builds them (`make kube-bins`) and sets it, or " +
	"export " + EnvKubeBins + "=$(bash hack/build-kube-bins.sh)"

// BinDir returns the directory holding kube-apiserver, etcd and etcdctl,
// taken from $KUBEBRIDGE_KUBE_BINS. The error wraps ErrNoBinaries when the
// variable is unset or the directory is incomplete; its message says how to
// build the binaries.
func BinDir() (string, error) {
	dir := os.Getenv(EnvKubeBins)
	if dir == "" {
		return "", fmt.Errorf("%w: $%s is not set; %s", ErrNoBinaries, EnvKubeBins, hint)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoBinaries, err)
	}
	for _, name := range requiredBins {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%w: %v (from $%s); %s", ErrNoBinaries, err, EnvKubeBins, hint)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%w: %s is not an executable file (from $%s); %s", ErrNoBinaries, p, EnvKubeBins, hint)
		}
	}
	return dir, nil
}

// Required reports whether end-to-end tests must run, i.e. whether
// $KUBEBRIDGE_REQUIRE_E2E is "1". When true, missing binaries are a failure
// rather than a reason to skip.
func Required() bool {
	return os.Getenv(EnvRequireE2E) == "1"
}
