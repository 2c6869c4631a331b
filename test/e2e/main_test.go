package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// bridgeBin and natsServerBin are the binaries built by TestMain (empty
// when the control-plane binaries are missing and the tests skip): the
// bridge, and nats-server for the tests that run NATS as processes.
var bridgeBin, natsServerBin string

func TestMain(m *testing.M) {
	after := func() {
		stopSharedImage()
		if err := certScript.Remove(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: remove hack/nats-certs.sh's files: %v\n", err)
		}
	}
	testenv.Main(afterTests{m, after}, testenv.Options{
		// Building the bridge counts against this too.
		StartTimeout: 10 * time.Minute,
		Setup: func(ctx context.Context, env *testenv.Env) error {
			// The environment's temp dir is removed by Close, which
			// testenv.Main calls before the process exits.
			bin, err := buildBridge(ctx, env.Dir())
			if err != nil {
				return err
			}
			bridgeBin = bin
			if natsServerBin, err = testenv.BuildNATSServer(ctx, env.Dir()); err != nil {
				return err
			}
			startSharedImage(env)
			return nil
		},
	})
}

// afterTests runs the tests, then after.
type afterTests struct {
	m     *testing.M
	after func()
}

func (a afterTests) Run() int {
	defer a.after()
	return a.m.Run()
}

// buildBridge builds ./cmd/bridge into dir, with -race when the tests run
// with -race, and returns the binary's path.
func buildBridge(ctx context.Context, dir string) (string, error) {
	var flags []string
	if raceEnabled {
		flags = append(flags, "-race")
	}
	start := time.Now()
	bin, err := testenv.GoBuild(ctx, dir, "bridge", "./cmd/bridge", flags...)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s (race=%v) in %v\n", bin, raceEnabled, time.Since(start).Round(time.Millisecond))
	return bin, nil
}
