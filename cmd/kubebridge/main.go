// Command kubebridge reads a kubebridge stream the way kubectl reads a
// cluster: get, watch and verify. The logic is in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// CA roots for TLS to NATS where the image holds none (it is built
	// from scratch): used only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/kubebridge/kubebridge/internal/cli"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.WithVersion(version))
	stop()
	os.Exit(code)
}
