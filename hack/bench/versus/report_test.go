package main

import (
	"strings"
	"testing"
)

// churnRun is a run that spent cpu seconds over the churn.
func churnRun(m mode, gzip bool, cpu float64) run {
	ready := result{Gzip: gzip, VmRSSKiB: 100 << 10}
	ready.End.CPUSecs = 1
	churn := &result{VmHWMKiB: 200 << 10}
	churn.Start.CPUSecs = 1 + cpu
	return run{m: m, ready: ready, churn: churn}
}

// A floor run before and after the bridge brackets it: the bridge is
// compared with their mean, and each floor run with it too.
func TestVersusComparesWithTheMeanOfTheFloorRuns(t *testing.T) {
	floor := mode{kind: kindNamed("typed"), label: "floor", noGzip: true}
	bridge := mode{kind: kindNamed("bridge-typed"), label: "bridge"}
	runs := []run{churnRun(floor, false, 1.0), churnRun(bridge, false, 2.6), churnRun(floor, false, 3.0)}
	b := &bench{objects: 10, churn: churnOptions{mix: churnMix{creates: 1000}}}
	var out strings.Builder
	printVersus(&out, b, runs)
	for _, want := range []string{
		"| floor | 1000.0 | 0.50 |",
		"| bridge | 2600.0 | 1.30 |",
		"| floor | 3000.0 | 1.50 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

// A bridge's start-up snapshot is compared with the mean of the
// publish-raw runs and with that of the publish-raw-items runs, and not at
// all without a publish-raw run.
func TestSnapshotComparedWithTheMeanOfTheRawRuns(t *testing.T) {
	snapshot := func(m mode, secs float64) run {
		return run{m: m, ready: result{bridgeTotals: bridgeTotals{SnapshotSecs: secs}}}
	}
	raw := mode{kind: kindNamed("publish-raw"), label: "raw"}
	items := mode{kind: kindNamed("publish-raw-items"), label: "items"}
	bridge := mode{kind: kindNamed("bridge-typed"), label: "bridge"}

	var out strings.Builder
	printSnapshotFloor(&out, []run{snapshot(raw, 1.0), snapshot(bridge, 4.5), snapshot(raw, 2.0)})
	for _, want := range []string{"mean of 2 run(s): 1.50 s", "| bridge | 4.50 | 3.00 | – |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| raw |") {
		t.Errorf("a raw run compared with itself:\n%s", out.String())
	}

	out.Reset()
	printSnapshotFloor(&out, []run{snapshot(raw, 1.0), snapshot(items, 2.0), snapshot(bridge, 4.5), snapshot(items, 3.0)})
	for _, want := range []string{"the mean of 2 run(s): 2.50 s", "| bridge | 4.50 | 4.50 | 1.80 |", "| items | 2.00 | 2.00 | – |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}

	out.Reset()
	printSnapshotFloor(&out, []run{snapshot(bridge, 4.5)})
	if out.Len() != 0 {
		t.Errorf("printed without a raw run:\n%s", out.String())
	}
}

// The lag and the publish latency are means over the churn alone: what
// the start-up snapshot's publishes added before is taken off.
func TestLagAndPublishLatencyAreThoseOfTheChurn(t *testing.T) {
	floor := mode{kind: kindNamed("typed"), label: "floor", noGzip: true}
	bridge := mode{kind: kindNamed("bridge-typed"), label: "bridge"}
	rn := churnRun(bridge, false, 2.0)
	rn.ready.LagSumSecs, rn.ready.LagCount = 500, 1000                // the snapshot's: 500 ms each
	rn.ready.PublishSumSecs, rn.ready.PublishCount = 300, 1000        // 300 ms each
	rn.churn.LagSumSecs, rn.churn.LagCount = 500+60, 1000+2000        // the churn's: 30 ms each
	rn.churn.PublishSumSecs, rn.churn.PublishCount = 300+8, 1000+2000 // 4 ms each
	b := &bench{objects: 10, churn: churnOptions{mix: churnMix{creates: 1000}}}
	var out strings.Builder
	printVersus(&out, b, []run{churnRun(floor, false, 1.0), rn})
	if want := "| 30.0 | 4.0 |"; !strings.Contains(out.String(), want) {
		t.Errorf("missing %q in\n%s", want, out.String())
	}
}

// The k-th run of a custom-resource mode is paired with the k-th run of
// its built-in mode, each build (+exe=) apart, and the median is of the
// pairs' ratios.
func TestCustomResourcesPairTheRunsInOrder(t *testing.T) {
	typed := mode{kind: kindNamed("bridge-typed"), label: "typed"}
	crd := mode{kind: kindNamed("bridge-crd"), label: "crd"}
	old := mode{kind: kindNamed("bridge-crd"), label: "old", exe: "/tmp/versus-old"}
	runs := []run{
		churnRun(typed, false, 1.0), churnRun(crd, false, 1.1), churnRun(old, false, 2.0),
		churnRun(typed, false, 2.0), churnRun(crd, false, 2.6), churnRun(old, false, 3.0),
		churnRun(typed, false, 1.0), churnRun(crd, false, 1.2), churnRun(old, false, 1.5),
	}
	b := &bench{objects: 10, churn: churnOptions{mix: churnMix{creates: 1000}}}
	var out strings.Builder
	printCustomResources(&out, b, runs)
	for _, want := range []string{
		"| bridge-crd | 1 | 1100 / 1000 | 1.10 |",
		"| bridge-crd | 2 | 2600 / 2000 | 1.30 |",
		"| bridge-crd | median of 3 | | 1.20 (1.10–1.30) | | 1.00 (1.00–1.00) |",
		"| bridge-crd+exe=versus-old | 2 | 3000 / 2000 | 1.50 |",
		"| bridge-crd+exe=versus-old | median of 3 | | 1.50 (1.50–2.00) |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}
