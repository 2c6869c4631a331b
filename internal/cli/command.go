package cli

import (
	"cmp"
	"context"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// streamCommand is what get, watch and verify share: a flag set with the
// connection flags, the connection once the arguments are parsed, and how
// a failure is reported and ends the command.
type streamCommand struct {
	e    *env
	fs   *pflag.FlagSet
	conn connFlags
	// failCode is the exit code of a failure after the arguments were
	// accepted: get and watch exit with ExitFindings, verify, whose 1
	// means the contract is broken, with ExitError.
	failCode int
}

func newStreamCommand(e *env, name, synopsis string, failCode int) *streamCommand {
	c := &streamCommand{e: e, failCode: failCode}
	conn := pflag.NewFlagSet(name, pflag.ContinueOnError)
	c.conn.register(conn)
	c.fs = newCommandFlags(e, name, synopsis, conn)
	return c
}

// parse parses args; it returns the exit code to return at once (help or
// a usage error), or -1 to go on.
func (c *streamCommand) parse(args []string) ([]string, int) {
	return parseArgs(c.e, c.fs, args)
}

// connect logs to stderr at the verbosity asked for and connects. When it
// cannot, it has reported why and returns a nil conn with the exit code.
func (c *streamCommand) connect(ctx context.Context) (context.Context, *conn, int) {
	ctx = logContext(ctx, c.e.stderr, c.conn.verbosity)
	cn, err := c.conn.connect(ctx, c.e.getenv)
	if err != nil {
		return ctx, nil, c.fail(err)
	}
	return ctx, cn, -1
}

// fail reports err and returns the command's failure exit code.
func (c *streamCommand) fail(err error) int {
	c.e.errorf("%v", err)
	return c.failCode
}

// usageError reports arguments the command cannot take.
func (c *streamCommand) usageError(format string, args ...any) int {
	c.e.errorf(format, args...)
	return ExitError
}

// scope is the namespace get and watch read of type r: the one asked for
// (default: default), or all ("") with -A or for a cluster-scoped type.
func scope(namespace string, all bool, r resolved) string {
	if all || r.clusterScoped {
		return ""
	}
	return cmp.Or(namespace, metav1.NamespaceDefault)
}
