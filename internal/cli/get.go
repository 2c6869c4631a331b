package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

const getSynopsis = `Usage: kubebridge get <resource> [name...] [-n namespace | -A] [-o wide|json|yaml|name] [flags]

Prints the objects of a type as the stream holds them, as kubectl get
prints them. The state is rebuilt from the last message of every object's
subject (--full-replay: by replaying from the latest complete snapshot).
<resource> is named as with kubectl: configmaps, cm, deploy,
deployments.apps, hpa.v2.autoscaling, widgets.example.com.`

type getFlags struct {
	namespace  string
	all        bool
	output     string
	selector   string
	showLabels bool
	noHeaders  bool
	fullReplay bool
}

func (f *getFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace (default: default; the stream need not be your kubeconfig's cluster)")
	fs.BoolVarP(&f.all, "all-namespaces", "A", false, "list the objects of every namespace")
	fs.StringVarP(&f.output, "output", "o", "", "output format: wide, json, yaml or name")
	fs.StringVarP(&f.selector, "selector", "l", "", "label selector, as kubectl's (app=web,tier!=db)")
	fs.BoolVar(&f.showLabels, "show-labels", false, "add a LABELS column")
	fs.BoolVar(&f.noHeaders, "no-headers", false, "print no header line")
	fs.BoolVar(&f.fullReplay, "full-replay", false, "rebuild the state by replaying from the latest complete snapshot, not from the last message per subject")
}

func runGet(ctx context.Context, e *env, args []string) int {
	var f getFlags
	cmd := newStreamCommand(e, "get", getSynopsis, ExitFindings)
	f.register(cmd.fs)
	pos, code := cmd.parse(args)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return cmd.usageError("you must specify the type of resource to get (configmaps, deploy, widgets.example.com, …)")
	}
	switch f.output {
	case "", "wide", "json", "yaml", "name":
	default:
		return cmd.usageError("unknown output format %q: use wide, json, yaml or name", f.output)
	}
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return cmd.usageError("selector %q: %v", f.selector, err)
	}
	ctx, c, code := cmd.connect(ctx)
	if c == nil {
		return code
	}
	defer c.Close()
	r, err := resolve(ctx, c, pos[0])
	if err != nil {
		return cmd.fail(err)
	}
	names := pos[1:]
	ns := scope(f.namespace, f.all, r)
	objs, stats, err := readState(ctx, c, r, ns, names, f.fullReplay)
	if err != nil {
		return cmd.fail(err)
	}
	if n := stats.Breaches(); n > 0 {
		fmt.Fprintf(e.stderr, "Warning: %d events broke the stream's contract while it was read and were not applied; run kubebridge verify\n", n)
	}
	objs, missing := selectObjects(objs, names, sel)
	if err := printGet(e, f, r, ns, objs, len(names)); err != nil {
		return cmd.fail(err)
	}
	for _, name := range missing {
		fmt.Fprintf(e.stderr, "Error from stream (NotFound): %s %q not found\n", r, name)
	}
	if len(missing) > 0 {
		return ExitFindings
	}
	return ExitOK
}

// readState bootstraps a consume.State of the type (in ns, "" for all)
// and returns the objects it holds once synced, and its counters.
func readState(ctx context.Context, c *conn, r resolved, ns string, names []string, fullReplay bool) ([]runtime.Object, consume.Stats, error) {
	f := consume.Filter{Resource: r.filter(), Namespace: ns}
	if len(names) == 1 {
		f.Name = names[0]
	}
	mode := consume.LastPerSubject
	if fullReplay {
		mode = consume.FullReplay
	}
	st, err := c.client.NewState([]consume.Filter{f}, consume.Bootstrap(mode))
	if err != nil {
		return nil, consume.Stats{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(runCtx) }()
	err = st.WaitForSync(ctx)
	var objs []runtime.Object
	if err == nil {
		for _, o := range st.Indexer(f.Resource).List() {
			objs = append(objs, o.(runtime.Object))
		}
	}
	stats := st.Stats()
	cancel()
	if runErr := <-done; err == nil && runErr != nil {
		err = runErr
	}
	return objs, stats, err
}

// selectObjects keeps the objects named (all when none is) that match
// sel, sorted by namespace and name as the apiserver lists them, and
// returns the names not found.
func selectObjects(objs []runtime.Object, names []string, sel labels.Selector) ([]runtime.Object, []string) {
	found := map[string]bool{}
	var out []runtime.Object
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, m.GetName()) {
			continue
		}
		if !sel.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		found[m.GetName()] = true
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b runtime.Object) int {
		ma, _ := meta.Accessor(a)
		mb, _ := meta.Accessor(b)
		return cmp.Or(cmp.Compare(ma.GetNamespace(), mb.GetNamespace()), cmp.Compare(ma.GetName(), mb.GetName()))
	})
	var missing []string
	for _, n := range names {
		if !found[n] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	return out, missing
}

// printGet prints what get found; named is the number of names asked for.
func printGet(e *env, f getFlags, r resolved, ns string, objs []runtime.Object, named int) error {
	single := named == 1
	if len(objs) == 0 {
		if f.output == "json" || f.output == "yaml" {
			if named > 0 {
				return nil
			}
			return writeObjects(e.stdout, f.output, nil, false)
		}
		if named == 0 {
			if ns != "" {
				fmt.Fprintf(e.stderr, "No resources found in %s namespace.\n", ns)
			} else {
				fmt.Fprintln(e.stderr, "No resources found")
			}
		}
		return nil
	}
	switch f.output {
	case "json", "yaml":
		return writeObjects(e.stdout, f.output, objs, single)
	case "name":
		return writeNames(e.stdout, objs)
	}
	return writeTable(e.stdout, objs, tableOptions{
		wide:          f.output == "wide",
		withNamespace: f.all && !r.clusterScoped,
		showLabels:    f.showLabels,
		noHeaders:     f.noHeaders,
		now:           e.now(),
	})
}
