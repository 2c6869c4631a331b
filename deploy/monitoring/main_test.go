package monitoring

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// bridgeBin is the bridge binary TestMain builds from the main module.
var bridgeBin string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		StartTimeout: 10 * time.Minute,
		Setup: func(ctx context.Context, env *testenv.Env) error {
			bin := filepath.Join(env.Dir(), "bridge")
			cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/bridge")
			cmd.Dir = filepath.Join("..", "..")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build ./cmd/bridge: %w\n%s", err, out)
			}
			bridgeBin = bin
			fmt.Fprintf(os.Stderr, "monitoring: built %s\n", bin)
			return nil
		},
	})
}
