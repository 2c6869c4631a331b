package cli_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// table is a kubectl-style table: header and rows of cells.
type table struct {
	header []string
	rows   [][]string
}

func (t table) String() string {
	var b strings.Builder
	b.WriteString(strings.Join(t.header, " | ") + "\n")
	for _, r := range t.rows {
		b.WriteString(strings.Join(r, " | ") + "\n")
	}
	return b.String()
}

// apiTable asks the apiserver for its own table of a resource in each
// namespace (nil: a cluster-scoped resource), the Table kubectl get prints, and builds what kubectl shows
// of it: the columns of priority 0 (all with wide), NAMESPACE first with
// withNS, rows sorted by namespace and name.
func (h *harness) apiTable(rc rest.Interface, apiPath, resource string, namespaces []string, wide, withNS bool) table {
	h.t.Helper()
	var out table
	type row struct {
		ns, name string
		cells    []string
	}
	var rows []row
	paths := []string{apiPath + "/" + resource}
	if namespaces != nil {
		paths = nil
		for _, ns := range namespaces {
			paths = append(paths, apiPath+"/namespaces/"+ns+"/"+resource)
		}
	}
	for _, path := range paths {
		raw, err := rc.Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Raw()
		if err != nil {
			h.t.Fatal(err)
		}
		var tab metav1.Table
		if err := json.Unmarshal(raw, &tab); err != nil {
			h.t.Fatal(err)
		}
		out.header = nil
		if withNS {
			out.header = append(out.header, "NAMESPACE")
		}
		for _, c := range tab.ColumnDefinitions {
			if c.Priority == 0 || wide {
				out.header = append(out.header, strings.ToUpper(c.Name))
			}
		}
		for _, r := range tab.Rows {
			var m metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.Object.Raw, &m); err != nil {
				h.t.Fatal(err)
			}
			var cells []string
			if withNS {
				cells = append(cells, m.Namespace)
			}
			for i, c := range tab.ColumnDefinitions {
				if c.Priority == 0 || wide {
					cells = append(cells, fmt.Sprint(r.Cells[i]))
				}
			}
			rows = append(rows, row{ns: m.Namespace, name: m.Name, cells: cells})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name)) })
	for _, r := range rows {
		out.rows = append(out.rows, r.cells)
	}
	return out
}

// parseTable reads the CLI's table back: each column starts where its
// header does (the tab writer aligns them), so cells may hold spaces.
func parseTable(t *testing.T, text string) table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return table{}
	}
	var out table
	var starts []int
	for _, loc := range regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(lines[0], -1) {
		starts = append(starts, loc[0])
		out.header = append(out.header, lines[0][loc[0]:loc[1]])
	}
	for _, l := range lines[1:] {
		cells := make([]string, len(starts))
		for i, s := range starts {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			if s < len(l) {
				cells[i] = strings.TrimSpace(l[s:end])
			}
			if i+1 < len(starts) && starts[i+1] < len(l) && starts[i+1] > 0 && l[starts[i+1]-1] != ' ' {
				t.Fatalf("column %s does not start at its header in %q", out.header[i+1], l)
			}
		}
		out.rows = append(out.rows, cells)
	}
	return out
}

var ageRE = regexp.MustCompile(`^[0-9]+[smhdy]([0-9]+[smhd])?$`)

// normaliseAge replaces the AGE cells, which depend on when each side
// looked, by "<age>" after checking that they are kubectl durations.
func normaliseAge(t *testing.T, tab table, who string) table {
	t.Helper()
	i := slices.Index(tab.header, "AGE")
	if i < 0 {
		t.Fatalf("%s: no AGE column in %v", who, tab.header)
	}
	out := table{header: tab.header}
	for _, r := range tab.rows {
		r = slices.Clone(r)
		if !ageRE.MatchString(r[i]) {
			t.Errorf("%s: AGE %q is not a kubectl duration", who, r[i])
		}
		r[i] = "<age>"
		out.rows = append(out.rows, r)
	}
	return out
}

// checkGet runs get and compares its table with the apiserver's.
func (h *harness) checkGet(want table, args ...string) {
	h.t.Helper()
	res := h.run(args...)
	if res.code != 0 {
		h.t.Fatalf("kubebridge %s: %s", strings.Join(args, " "), res)
	}
	got := normaliseAge(h.t, parseTable(h.t, res.stdout), "kubebridge")
	want = normaliseAge(h.t, want, "apiserver")
	if got.String() != want.String() {
		h.t.Errorf("kubebridge %s prints\n%s\nthe apiserver's table is\n%s\nraw output:\n%s", strings.Join(args, " "), got, want, res.stdout)
	}
	if len(want.rows) == 0 {
		h.t.Errorf("kubebridge %s: the comparison has no rows", strings.Join(args, " "))
	}
}
