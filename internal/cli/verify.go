package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

const verifySynopsis = `Usage: kubebridge verify [resource...] [-n namespace] [--against-cluster] [-o json] [flags]

Replays the cluster's messages of the stream, oldest first, up to the last
one stored when it starts, through pkg/consume's contract checks, and
checks what those leave out: every event id stored once with Nats-Msg-Id
<cluster>/<id>, snapshot items inside their snapshot, end markers counting
at least the items stored. Without resources every type is checked.

It prints messages and events per type, snapshots, fenced events (written
by a deposed leader: ignored by consumers, no breach) and every finding
with its stream sequence. With --against-cluster (KUBECONFIG, else the
in-cluster config) it lists each type from the apiserver within the scope
its begin markers say (namespaces, selectors, and the type's rules: only
objects in match, their ignored fields removed) and prints the objects
missing from the replayed state, extra in it, or at another uid or
resourceVersion; when the type ignores fields, at other content instead
(the resourceVersion lags for changes of ignored fields only). -n narrows
it to one namespace.

Exit code: 0 the contract holds (and the cluster agrees), 1 it is broken
(or the cluster differs), 2 the stream could not be read.`

type verifyFlags struct {
	namespace   string
	output      string
	against     bool
	kubeconfig  string
	kubeContext string
	maxFindings int
}

func (f *verifyFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", "check the objects of this namespace only (default: all)")
	fs.StringVarP(&f.output, "output", "o", "", "json: print the report as JSON")
	fs.BoolVar(&f.against, "against-cluster", false, "compare the replayed state with the apiserver's lists")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --against-cluster (default $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	fs.StringVar(&f.kubeContext, "kube-context", "", "kubeconfig context for --against-cluster (--context names a nats context)")
	fs.IntVar(&f.maxFindings, "max-findings", 20, "findings printed per kind (all are counted)")
}

func runVerify(ctx context.Context, e *env, args []string) int {
	var f verifyFlags
	cmd := newStreamCommand(e, "verify", verifySynopsis, ExitError)
	f.register(cmd.fs)
	pos, code := cmd.parse(args)
	if code >= 0 {
		return code
	}
	if f.output != "" && f.output != "json" {
		return cmd.usageError("unknown output format %q: use json", f.output)
	}
	ctx, c, code := cmd.connect(ctx)
	if c == nil {
		return code
	}
	defer c.Close()
	var only []streamType
	for _, word := range pos {
		r, err := resolve(ctx, c, word)
		if err != nil {
			return cmd.fail(err)
		}
		if r.chosen {
			// verify checks every version it was not told to leave out.
			r.Version = ""
		}
		only = append(only, r.streamType)
	}
	v := newVerifier(c, f.namespace, only)
	if err := v.read(ctx); err != nil {
		return cmd.fail(fmt.Errorf("replay of %s: %w", c.stream, err))
	}
	rep := v.report()
	if f.against {
		if err := compareWithCluster(ctx, e, f, v, &rep); err != nil {
			return cmd.fail(fmt.Errorf("against the cluster: %w", err))
		}
	}
	if err := rep.write(e.stdout, f.output, f.maxFindings); err != nil {
		return cmd.fail(err)
	}
	if rep.Breaches > 0 || rep.Differences > 0 {
		return ExitFindings
	}
	return ExitOK
}
