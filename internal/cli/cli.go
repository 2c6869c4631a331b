package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Exit codes. verify separates "the stream breaks the contract" from "it
// could not be read", so that scripts can tell an incident from an outage.
const (
	ExitOK       = 0
	ExitFindings = 1 // verify found breaches or differences; get/watch failed
	ExitError    = 2 // bad usage, or nothing could be checked
)

// Option configures Run.
type Option func(*options) error

type options struct {
	getenv  func(string) string
	now     func() time.Time
	version string
}

// WithEnv sets how environment variables are read; default os.Getenv.
func WithEnv(getenv func(string) string) Option {
	return func(o *options) error {
		if getenv == nil {
			return errors.New("cli: nil getenv")
		}
		o.getenv = getenv
		return nil
	}
}

// WithVersion sets what `kubebridge version` prints.
func WithVersion(v string) Option {
	return func(o *options) error {
		o.version = v
		return nil
	}
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// env is what a subcommand runs with.
type env struct {
	options
	stdout, stderr io.Writer
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "Error: "+format+"\n", args...)
}

func commands() []command {
	return []command{
		{name: "get", summary: "Print the objects of a type as the stream holds them, as kubectl get does", run: runGet},
		{name: "watch", summary: "Print the events of one or more types as they are stored, one line each", run: runWatch},
		{name: "verify", summary: "Replay the stream and check the contract (regressions, framing, duplicate ids); optionally compare with the cluster", run: runVerify},
		{name: "version", summary: "Print the version", run: func(_ context.Context, e *env, _ []string) int {
			fmt.Fprintln(e.stdout, e.version)
			return ExitOK
		}},
	}
}

// Run runs the kubebridge command with args (without the program name)
// and returns its exit code. ctx ends a running watch (and anything
// else) cleanly.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	o := options{getenv: os.Getenv, now: time.Now, version: "dev"}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitError
		}
	}
	e := &env{options: o, stdout: stdout, stderr: stderr}
	name, rest, err := splitCommand(args)
	if err != nil {
		e.errorf("%v", err)
		usage(stderr)
		return ExitError
	}
	switch name {
	case "", "help", "-h", "-help", "--help":
		if len(rest) > 0 && name == "help" {
			// help <command> is <command> --help.
			return Run(ctx, []string{rest[0], "--help"}, stdout, stderr, opts...)
		}
		usage(stdout)
		if name == "" {
			return ExitError
		}
		return ExitOK
	case "--version", "-version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, e, rest)
		}
	}
	e.errorf("unknown command %q", name)
	usage(stderr)
	return ExitError
}

func usage(w io.Writer) {
	fmt.Fprint(w, `kubebridge reads a kubebridge stream (NATS JetStream) the way kubectl reads a cluster.

Usage: kubebridge [connection flags] <command> [arguments] [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Connection flags (every command; nats CLI conventions):
  -s, --server URL      NATS URL(s) (default $NATS_URL, else the context's, else nats://127.0.0.1:4222)
  --context NAME        nats CLI context (default $NATS_CONTEXT, else the one 'nats context select' chose)
  --creds, --nkey, --user/--password, --token, --tlscert/--tlskey/--tlsca, --js-domain
  --stream NAME         stream (default $BRIDGE_STREAM_NAME, else KUBEBRIDGE)
  --prefix PREFIX       subject prefix (default $BRIDGE_SUBJECT_PREFIX, else kubebridge)
  --cluster NAME        cluster name (default $BRIDGE_CLUSTER_NAME, else default)

Run 'kubebridge <command> --help' for a command's flags.
`)
}

// logContext puts a logger writing to stderr at verbosity v into ctx:
// pkg/consume logs through klog.FromContext.
func logContext(ctx context.Context, stderr io.Writer, v int) context.Context {
	cfg := textlogger.NewConfig(textlogger.Verbosity(v), textlogger.Output(stderr))
	return klog.NewContext(ctx, textlogger.NewLogger(cfg))
}
