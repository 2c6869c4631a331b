package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// bridgeBin and natsServerBin are the binaries built by TestMain (empty
// when the control-plane binaries are missing and the tests skip): the
// bridge, and nats-server for the tests that run NATS as processes.
var bridgeBin, natsServerBin string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
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
			natsServerBin, err = testenv.BuildNATSServer(ctx, env.Dir())
			return err
		},
	})
}

// buildBridge builds ./cmd/bridge into dir, with -race when the tests run
// with -race, and returns the binary's path.
func buildBridge(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not in a module (%q)", gomod)
	}
	bin := filepath.Join(dir, "bridge")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/bridge")
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s (race=%v) in %v\n", bin, raceEnabled, time.Since(start).Round(time.Millisecond))
	return bin, nil
}
