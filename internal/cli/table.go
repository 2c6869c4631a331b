package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableOptions are the kubectl flags that shape a table.
type tableOptions struct {
	wide          bool
	withNamespace bool
	showLabels    bool
	noHeaders     bool
	now           time.Time
}

// writeTable prints objs (of one type) as kubectl get prints them: the
// kind's columns (wide ones with -o wide), NAMESPACE first with -A, LABELS
// last with --show-labels, aligned as kubectl aligns them.
func writeTable(w io.Writer, objs []runtime.Object, o tableOptions) error {
	if len(objs) == 0 {
		return nil
	}
	kc := columnsFor(objs[0])
	var header []string
	if o.withNamespace {
		header = append(header, "NAMESPACE")
	}
	for _, c := range kc.columns {
		if !c.wide || o.wide {
			header = append(header, strings.ToUpper(c.name))
		}
	}
	if o.showLabels {
		header = append(header, "LABELS")
	}
	// kubectl's tab writer: minimum width 6, padding 3.
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	if !o.noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		var row []string
		if o.withNamespace {
			row = append(row, m.GetNamespace())
		}
		row = append(row, kc.cells(obj, o.now, o.wide)...)
		if o.showLabels {
			row = append(row, labels.FormatLabels(m.GetLabels()))
		}
		for i := range row {
			row[i] = cellText(row[i])
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// cellText keeps a cell on its line, as kubectl does: it is cut at the
// first line break (with "..." after it), and other control characters,
// which could drive the terminal, are shown escaped.
func cellText(s string) string {
	if i := strings.IndexAny(s, "\n\r\f"); i >= 0 {
		s = s[:i] + "..."
	}
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// age is kubectl's AGE: the time since ts, rounded as kubectl rounds it.
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}
