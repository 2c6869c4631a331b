package main

import (
	"fmt"
	"io"
)

// printSnapshotFloor prints each bridge's start-up snapshot, and each
// publish-raw-items run's time, against the publish-raw runs of the same
// invocation (their mean): the same objects published without a bridge,
// what the server and the machine allow.
func printSnapshotFloor(w io.Writer, runs []run) {
	var raw []run
	for _, r := range runs {
		if r.m.kind.floor == snapshotFloor && r.ready.SnapshotSecs > 0 {
			raw = append(raw, r)
		}
	}
	floor := meanOf(raw, func(r run) float64 { return r.ready.SnapshotSecs })
	if floor <= 0 {
		return
	}
	fmt.Fprintf(w, "\nStart-up snapshot against publishing the same objects raw (encoding/json beforehand, nats.go's async publishes, no bridge; the mean of %d run(s): %.2f s):\n\n", len(raw), floor)
	fmt.Fprintln(w, "| mode | start-up snapshot s | ÷ raw publishing |")
	fmt.Fprintln(w, "|---|--:|--:|")
	for _, r := range runs {
		if r.m.kind.floor != snapshotFloor && r.ready.SnapshotSecs > 0 {
			fmt.Fprintf(w, "| %s | %.2f | %.2f |\n", r.m.label, r.ready.SnapshotSecs, r.ready.SnapshotSecs/floor)
		}
	}
}
