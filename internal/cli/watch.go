package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

const watchSynopsis = `Usage: kubebridge watch <resource>[,<resource>...] [name...] [-n namespace | -A] [--diff] [flags]

Prints the events of the types as they are stored, one line each: time
(ce-time), verb, kind, namespace/name, resourceVersion, and what the event
says of itself (coalesced, finalstateunknown, truncated). Snapshot items
and markers are left out unless --snapshots. Ends with Ctrl-C.`

type watchFlags struct {
	namespace string
	all       bool
	fromStart bool
	snapshots bool
	diff      bool
	output    string
}

func (f *watchFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace (default: default)")
	fs.BoolVarP(&f.all, "all-namespaces", "A", false, "events of every namespace")
	fs.BoolVar(&f.fromStart, "all", false, "start with the first message the stream holds, not with the next one stored")
	fs.BoolVar(&f.snapshots, "snapshots", false, "print snapshot items and markers too")
	fs.BoolVar(&f.diff, "diff", false, "print a diff of the old and new object (YAML) under each update, or its JSON Patch when the old object is not sent")
	fs.StringVarP(&f.output, "output", "o", "", "output format: wide (adds the stream sequence and term) or json (one CloudEvent per line)")
}

func runWatch(ctx context.Context, e *env, args []string) int {
	var f watchFlags
	cmd := newStreamCommand(e, "watch", watchSynopsis, ExitFindings)
	f.register(cmd.fs)
	pos, code := cmd.parse(args)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return cmd.usageError("you must specify the type(s) of resource to watch")
	}
	if f.output != "" && f.output != "wide" && f.output != "json" {
		return cmd.usageError("unknown output format %q: use wide or json", f.output)
	}
	ctx, c, code := cmd.connect(ctx)
	if c == nil {
		return code
	}
	defer c.Close()
	filters, err := watchFilters(ctx, c, f, pos)
	if err != nil {
		return cmd.fail(err)
	}
	deliver := consume.DeliverNew()
	if f.fromStart {
		deliver = consume.DeliverAll()
	}
	fenced := consume.OnFenced(func(ev *consume.Event) {
		fmt.Fprintf(e.stderr, "# ignored seq %d %s: written by a deposed leader (term %d) after a newer term began\n", ev.Seq, ev.Subject, ev.Term)
	})
	for ev, err := range c.client.Events(ctx, filters, deliver, fenced) {
		if ctx.Err() != nil {
			return ExitOK
		}
		var de *consume.DecodeError
		if errors.As(err, &de) {
			fmt.Fprintf(e.stderr, "# undecodable message: %v\n", de)
			continue
		}
		if err != nil {
			return cmd.fail(err)
		}
		if !f.snapshots && (ev.Verb == consume.SnapshotItem || ev.Verb.IsMarker()) {
			continue
		}
		if err := printEvent(e.stdout, ev, f); err != nil {
			return cmd.fail(err)
		}
	}
	return ExitOK
}

// watchFilters turns resources (comma-separated) and names into filters.
func watchFilters(ctx context.Context, c *conn, f watchFlags, pos []string) ([]consume.Filter, error) {
	var filters []consume.Filter
	for _, word := range strings.Split(pos[0], ",") {
		r, err := resolve(ctx, c, word)
		if err != nil {
			return nil, err
		}
		ns := scope(f.namespace, f.all, r)
		if len(pos) == 1 {
			filters = append(filters, consume.Filter{Resource: r.filter(), Namespace: ns})
		}
		for _, name := range pos[1:] {
			filters = append(filters, consume.Filter{Resource: r.filter(), Namespace: ns, Name: name})
		}
	}
	return filters, nil
}

// printEvent writes one event's line (and diff).
func printEvent(w io.Writer, ev *consume.Event, f watchFlags) error {
	if f.output == "json" {
		b, err := ev.CloudEvent.MarshalJSON()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	if f.output == "wide" {
		fmt.Fprintf(&b, "seq %-8d term %-6d ", ev.Seq, ev.Term)
	}
	kind, _ := ev.CloudEvent.Extensions()[contract.ExtKind].(string)
	fmt.Fprintf(&b, "%s  %-14s  %-12s", ev.CloudEvent.Time().UTC().Format(time.RFC3339), ev.Verb, kind)
	if ev.Verb.IsMarker() {
		fmt.Fprintf(&b, "  %s snapshot %s", ev.Resource.Resource, ev.SnapshotID)
		if ev.Verb == consume.SnapshotEnd {
			fmt.Fprintf(&b, " (%d items)", ev.SnapshotCount)
		}
	} else {
		fmt.Fprintf(&b, "  %s  rv %s", ev.Key(), ev.ResourceVersion)
	}
	if ev.Coalesced > 0 {
		fmt.Fprintf(&b, "  coalesced %d", ev.Coalesced)
	}
	if ev.FinalStateUnknown {
		b.WriteString("  finalstateunknown")
	}
	if ev.Truncated {
		b.WriteString("  truncated")
	}
	b.WriteByte('\n')
	if f.diff && ev.Verb == consume.Updated {
		if err := writeDiff(&b, ev); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDiff writes what an update changed: a diff of its old and new
// object, or, when the old one is not sent (a type whose rules say
// oldObject: false), its JSON Patch, an operation a line.
func writeDiff(b *strings.Builder, ev *consume.Event) error {
	if ev.OldObject != nil {
		d, err := yamlDiff(ev.OldObject, ev.Object)
		if err != nil {
			return err
		}
		for _, l := range splitLines(d) {
			b.WriteString("    " + l + "\n")
		}
		return nil
	}
	if len(ev.Patch) == 0 {
		return nil
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(ev.Patch, &ops); err != nil {
		return err
	}
	for _, op := range ops {
		b.WriteString("    patch " + string(op) + "\n")
	}
	return nil
}

// yamlDiff diffs two objects as YAML.
func yamlDiff(old, obj runtime.Object) (string, error) {
	var texts [2]string
	for i, o := range []runtime.Object{old, obj} {
		m, err := toMap(o)
		if err != nil {
			return "", err
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return "", err
		}
		texts[i] = string(y)
	}
	return lineDiff(texts[0], texts[1]), nil
}
