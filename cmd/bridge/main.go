// Command bridge publishes Kubernetes object changes to NATS JetStream as
// CloudEvents. It is configured only through environment variables; run it
// with --help to list them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	// CA roots for TLS to NATS and the API server where the image holds
	// none (it is built from scratch): used only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	for _, a := range args {
		switch a {
		case "--help", "-help", "-h", "help":
			fmt.Printf("kubebridge %s: publishes Kubernetes object changes to NATS JetStream as CloudEvents.\n\nUsage: bridge [--help|--version]\n\nConfiguration comes only from the environment:\n\n", version)
			if err := config.WriteHelp(os.Stdout); err != nil {
				return 1
			}
			return 0
		case "--version", "-version", "version":
			fmt.Println(version)
			return 0
		default:
			fmt.Fprintf(os.Stderr, "bridge: unknown argument %q: configuration comes from the environment (see --help)\n", a)
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := config.Load(ctx, nil)
	if err != nil {
		return report(err)
	}
	initLogging(cfg.LogVerbosity)
	defer klog.Flush()
	logger := klog.Background().WithName("kubebridge")
	ctx = klog.NewContext(ctx, logger)
	gcPercent, fromEnv := bridge.SetGCDefault(os.LookupEnv)
	logger.Info("Starting", "version", version, "cluster", cfg.ClusterName, "subjectPrefix", cfg.SubjectPrefix, "gogc", gcPercent, "gogcFromEnv", fromEnv)
	for _, w := range config.Removed(os.LookupEnv) {
		logger.Info("Ignoring a removed setting: " + w)
	}
	if err := bridge.Main(ctx, cfg, version); err != nil {
		// A signal during start-up (e.g. while NATS is unreachable) is a
		// normal stop, not a failure.
		if ctx.Err() != nil {
			logger.Info("Stopped during start-up", "reason", err.Error())
			return 0
		}
		return report(err)
	}
	return 0
}

// report prints one line per problem; configuration problems exit 2.
func report(err error) int {
	var cfgErr *config.Error
	if errors.As(err, &cfgErr) {
		for _, p := range cfgErr.Problems {
			fmt.Fprintln(os.Stderr, "bridge: "+p)
		}
		return 2
	}
	fmt.Fprintln(os.Stderr, "bridge: "+err.Error())
	return 1
}

func initLogging(verbosity int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(verbosity))
}
