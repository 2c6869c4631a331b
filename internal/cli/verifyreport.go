package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// report is what verify found.
type report struct {
	Stream      string          `json:"stream"`
	Cluster     string          `json:"cluster"`
	Subjects    []string        `json:"subjects"`
	Messages    uint64          `json:"messages"`
	FirstSeq    uint64          `json:"firstSeq"`
	LastSeq     uint64          `json:"lastSeq"`
	TermMarkers int             `json:"termMarkers"`
	Types       []typeReport    `json:"types"`
	Findings    []findingReport `json:"findings"`
	// Counts are the findings by kind; Breaches those that break the
	// contract.
	Counts   map[consume.ViolationKind]uint64 `json:"counts"`
	Breaches uint64                           `json:"breaches"`
	// Against is the comparison with the cluster (--against-cluster);
	// Differences counts its objects that differ.
	Against     []clusterDiff `json:"againstCluster,omitempty"`
	Differences uint64        `json:"differences"`
}

// typeReport counts the events stored of one type (those that break the
// contract too) and what the replayed state made of them.
type typeReport struct {
	Type    string `json:"type"`
	Added   uint64 `json:"added"`
	Updated uint64 `json:"updated"`
	Deleted uint64 `json:"deleted"`
	Items   uint64 `json:"snapshotItems"`
	// Snapshots are complete snapshots (begin to end); Unfinished ones
	// were begun again before they ended; Open is one begun and not
	// ended when the replay stopped.
	Snapshots  uint64 `json:"snapshots"`
	Unfinished uint64 `json:"unfinishedSnapshots"`
	Open       bool   `json:"snapshotOpen"`
	// Objects are those the replayed state holds at the end.
	Objects      int    `json:"objects"`
	Swept        uint64 `json:"swept"`
	StaleDeletes uint64 `json:"staleDeletes"`
	Fenced       uint64 `json:"fenced"`
}

type findingReport struct {
	Kind    consume.ViolationKind `json:"kind"`
	Breach  bool                  `json:"breach"`
	Seq     uint64                `json:"seq"`
	Type    string                `json:"type,omitempty"`
	Subject string                `json:"subject"`
	ID      string                `json:"id,omitempty"`
	Detail  string                `json:"detail"`
}

func (v *verifier) report() report {
	r := report{Stream: v.c.stream, Cluster: v.c.subjects.Cluster, Subjects: v.subjects(), Messages: v.messages,
		FirstSeq: v.firstSeq, LastSeq: v.lastSeq, TermMarkers: len(v.terms), Counts: map[consume.ViolationKind]uint64{}}
	for _, tc := range v.types {
		s := tc.a.Stats()
		r.Types = append(r.Types, typeReport{
			Type: tc.t.filter(), Added: tc.verbs[consume.Added], Updated: tc.verbs[consume.Updated], Deleted: tc.verbs[consume.Deleted],
			Items: tc.verbs[consume.SnapshotItem], Snapshots: s.Snapshots, Unfinished: tc.unfinished, Open: len(tc.open) > 0,
			Objects: len(tc.a.Indexer(tc.t.filter()).ListKeys()), Swept: s.Swept, StaleDeletes: s.StaleDeletes, Fenced: s.Fenced,
		})
	}
	slices.SortFunc(r.Types, func(a, b typeReport) int { return strings.Compare(a.Type, b.Type) })
	slices.SortStableFunc(v.findings, func(a, b finding) int { return int(a.Seq) - int(b.Seq) })
	for _, f := range v.findings {
		b := breach(f.Kind)
		r.Findings = append(r.Findings, findingReport{Kind: f.Kind, Breach: b, Seq: f.Seq, Type: f.Type, Subject: f.Subject, ID: f.ID, Detail: f.Detail})
		r.Counts[f.Kind]++
		if b {
			r.Breaches++
		}
	}
	return r
}

func (r report) write(w io.Writer, format string, maxPerKind int) error {
	if format == "json" {
		b, err := json.MarshalIndent(r, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	fmt.Fprintf(w, "Stream %s, cluster %s (%s): %d messages", r.Stream, r.Cluster, strings.Join(r.Subjects, " "), r.Messages)
	if r.Messages > 0 {
		fmt.Fprintf(w, ", seq %d to %d", r.FirstSeq, r.LastSeq)
	}
	fmt.Fprintf(w, ", term markers: %d\n\n", r.TermMarkers)
	if len(r.Types) > 0 {
		tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "TYPE\tADDED\tUPDATED\tDELETED\tITEMS\tSNAPSHOTS\tUNFINISHED\tOPEN\tOBJECTS\tSWEPT\tFENCED")
		for _, t := range r.Types {
			open := "no"
			if t.Open {
				open = "yes"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n", t.Type, t.Added, t.Updated, t.Deleted, t.Items,
				t.Snapshots, t.Unfinished, open, t.Objects, t.Swept, t.Fenced)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	r.writeFindings(w, maxPerKind)
	r.writeAgainst(w, maxPerKind)
	var broken []string
	for _, k := range r.kinds() {
		if breach(k) {
			broken = append(broken, fmt.Sprintf("%d %s", r.Counts[k], k))
		}
	}
	switch {
	case r.Breaches > 0:
		fmt.Fprintf(w, "Result: the stream breaks the contract: %s.\n", strings.Join(broken, ", "))
	default:
		fmt.Fprintf(w, "Result: the contract holds in %d messages: no regression, duplicate id, unframed snapshot or undecodable message.\n", r.Messages)
	}
	if r.Differences > 0 {
		fmt.Fprintf(w, "Result: %d objects differ from the cluster.\n", r.Differences)
	}
	return nil
}

// kinds are the kinds found, sorted.
func (r report) kinds() []consume.ViolationKind {
	var ks []consume.ViolationKind
	for k := range r.Counts {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (r report) writeFindings(w io.Writer, maxPerKind int) {
	if len(r.Findings) == 0 {
		return
	}
	for _, breaches := range []bool{true, false} {
		title := "Findings that break the contract:"
		if !breaches {
			title = "Notes (no breach):"
		}
		shown := map[consume.ViolationKind]uint64{}
		printed := false
		for _, f := range r.Findings {
			if f.Breach != breaches {
				continue
			}
			if !printed {
				fmt.Fprintln(w, title)
				printed = true
			}
			if shown[f.Kind]++; shown[f.Kind] > uint64(maxPerKind) {
				continue
			}
			fmt.Fprintf(w, "  %-18s seq %-8d %s  %s\n", f.Kind, f.Seq, f.Subject, f.Detail)
		}
		for _, k := range r.kinds() {
			if n := shown[k]; n > uint64(maxPerKind) {
				fmt.Fprintf(w, "  %-18s … and %d more\n", k, n-uint64(maxPerKind))
			}
		}
		if printed {
			fmt.Fprintln(w)
		}
	}
}
