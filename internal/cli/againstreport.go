package cli

import (
	"fmt"
	"io"
	"strings"
)

func (r report) writeAgainst(w io.Writer, maxPerKind int) {
	if r.Against == nil {
		return
	}
	fmt.Fprintln(w, "Against the cluster:")
	for _, d := range r.Against {
		if d.NotServed {
			fmt.Fprintf(w, "  %s: %d in the stream; the apiserver does not serve the type\n", d.Type, d.InStream)
			continue
		}
		within := ""
		if d.Scope != "" {
			within = " (within the bridge's scope: " + d.Scope + ")"
		}
		other := "resourceVersion"
		if strings.Contains(d.Scope, "ignoreFields ") {
			other = "content"
		}
		fmt.Fprintf(w, "  %s: %d in the stream, %d in the cluster%s: %d missing, %d extra, %d at another uid or %s\n",
			d.Type, d.InStream, d.InCluster, within, len(d.Missing), len(d.Extra), len(d.Differ), other)
		if d.MatchErrors > 0 {
			fmt.Fprintf(w, "    the scope's match failed on %d listed objects: counted in scope, as the bridge publishes them\n", d.MatchErrors)
		}
		for i, m := range d.Missing {
			if i == maxPerKind {
				fmt.Fprintf(w, "    missing  … and %d more\n", len(d.Missing)-i)
				break
			}
			fmt.Fprintf(w, "    missing  %s (uid %s, rv %s)\n", m.Key, m.UID, m.ResourceVersion)
		}
		for i, x := range d.Extra {
			if i == maxPerKind {
				fmt.Fprintf(w, "    extra    … and %d more\n", len(d.Extra)-i)
				break
			}
			fmt.Fprintf(w, "    extra    %s (uid %s, rv %s)\n", x.Key, x.UID, x.ResourceVersion)
		}
		for i, x := range d.Differ {
			if i == maxPerKind {
				fmt.Fprintf(w, "    differs  … and %d more\n", len(d.Differ)-i)
				break
			}
			fields := ""
			if x.Fields != "" {
				fields = ": " + x.Fields
			}
			fmt.Fprintf(w, "    differs  %s: stream uid %s rv %s, cluster uid %s rv %s%s\n", x.Key, x.Stream.UID, x.Stream.ResourceVersion, x.Cluster.UID, x.Cluster.ResourceVersion, fields)
		}
	}
	fmt.Fprintln(w)
}
