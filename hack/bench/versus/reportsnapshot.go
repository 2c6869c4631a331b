package main

import (
	"fmt"
	"io"
)

// printSnapshotFloor prints each bridge's start-up snapshot against two
// floors of the same invocation (the mean of each's runs): the publish-raw
// runs, the same objects published without a bridge (what the server and
// the machine allow), and the publish-raw-items runs, the bridge's own
// snapshot items, with their headers and the fence's condition, published
// without a bridge (issue 36's floor: raw publishing with the same headers
// and fencing). A publish-raw-items run is shown against publish-raw.
func printSnapshotFloor(w io.Writer, runs []run) {
	var raw, items []run
	for _, r := range runs {
		switch {
		case r.ready.SnapshotSecs <= 0:
		case r.m.kind.floor == snapshotFloor:
			raw = append(raw, r)
		case r.m.kind.raw == rawItems:
			items = append(items, r)
		}
	}
	secs := func(r run) float64 { return r.ready.SnapshotSecs }
	floor, itemsFloor := meanOf(raw, secs), meanOf(items, secs)
	if floor <= 0 {
		return
	}
	fmt.Fprintf(w, "\nStart-up snapshot against publishing the same objects raw (encoding/json beforehand, nats.go's async publishes, no bridge; the mean of %d run(s): %.2f s)", len(raw), floor)
	if itemsFloor > 0 {
		fmt.Fprintf(w, " and against publishing the bridge's snapshot items raw (its headers and fence condition; the mean of %d run(s): %.2f s)", len(items), itemsFloor)
	}
	fmt.Fprint(w, ":\n\n")
	fmt.Fprintln(w, "| mode | start-up snapshot s | ÷ raw publishing | ÷ raw snapshot items |")
	fmt.Fprintln(w, "|---|--:|--:|--:|")
	for _, r := range runs {
		if r.m.kind.floor == snapshotFloor || r.ready.SnapshotSecs <= 0 {
			continue
		}
		byItems := "–"
		if itemsFloor > 0 && r.m.kind.raw != rawItems {
			byItems = fmt.Sprintf("%.2f", r.ready.SnapshotSecs/itemsFloor)
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %s |\n", r.m.label, r.ready.SnapshotSecs, r.ready.SnapshotSecs/floor, byItems)
	}
}
