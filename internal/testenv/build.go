package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoBuild builds pkg, as this module's go.mod resolves it, into dir/name
// with the extra build flags, and returns the binary's path. Tests and
// benchmarks run the bridge and nats-server built so as child processes.
func GoBuild(ctx context.Context, dir, name, pkg string, flags ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("testenv: not in a module: cannot build %s", pkg)
	}
	bin := filepath.Join(dir, name)
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}
