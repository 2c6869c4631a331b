package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// clusterRun is a bridge run of the cluster mix that published events
// messages of bytes stored bytes over a 10s churn, for cpu seconds.
func clusterRun(m mode, events, bytes uint64, cpu float64) run {
	rn := churnRun(m, false, cpu)
	rn.readyStream = &streamCount{LastSeq: 100, Bytes: 50_000}
	rn.stream = &streamCount{LastSeq: 100 + events, Bytes: 50_000 + bytes, UpdatedBytes: int64(bytes / 2),
		ByKind: map[string]kindCount{"Pod": {Events: 2, Bytes: 3000}}}
	rn.load = &churnStats{Duration: 10 * time.Second}
	rn.cluster = &clusterPlan{}
	rn.cluster.kinds[podImage], rn.cluster.kinds[podLabel], rn.cluster.kinds[cmData], rn.cluster.kinds[podStatus] = 3, 4, 5, 100
	return rn
}

// Each run is compared with the mean of its mode's runs without rules:
// events, stored bytes and CPU per 1,000 changes.
func TestClusterComparesWithTheMeanOfTheRunsWithoutRules(t *testing.T) {
	none := mode{kind: kindNamed("bridge-typed"), label: "none"}
	rules := mode{kind: kindNamed("bridge-typed"), label: "rules", config: "/x/rules.yaml"}
	other := mode{kind: kindNamed("bridge-dynamic"), label: "other"}
	runs := []run{clusterRun(none, 1000, 2_000_000, 1), clusterRun(rules, 100, 100_000, 0.5), clusterRun(none, 3000, 6_000_000, 3), clusterRun(other, 10, 10, 1)}
	b := &bench{pods: 10, objects: 10, churn: churnOptions{mix: churnMix{cluster: 2000}}}
	var out strings.Builder
	printCluster(&out, b, runs)
	for _, want := range []string{
		"| none | 1000 | 500 | 7 / 5 | 2 / 0 | 100 | 195.3 | 97.7 | 1500 / – | 500.0 | 0.500 / 0.500 / 0.50 |",
		"| rules | 100 | 50 | 7 / 5 | 2 / 0 | 10 | 9.8 | 4.9 | 1500 / – | 250.0 | 0.050 / 0.025 / 0.25 |",
		"| none | 3000 | 1500 | 7 / 5 | 2 / 0 | 300 | 585.9 | 293.0 | 1500 / – | 1500.0 | 1.500 / 1.500 / 1.50 |",
		// Its mode's only run: compared with itself.
		"| other | 10 | 5 | 7 / 5 | 2 / 0 | 1 | 0.0 | 0.0 | 1500 / – | 500.0 | 1.000 / 1.000 / 1.00 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

// The cluster mix's child watches the Pods, and a mode's rules file
// reaches the bridge as BRIDGE_CONFIG, with every event kept.
func TestChildArgsAndEnvOfTheClusterMix(t *testing.T) {
	b := &bench{kubeconfig: "/kc", layout: layout{namespaces: 1}, pods: 5, churn: churnOptions{mix: churnMix{cluster: 10}}}
	ms, err := selectModes("bridge-typed+config=rules.yaml,bridge-typed")
	if err != nil {
		t.Fatal(err)
	}
	args := b.childArgs(ms[0], "nats://n")
	if !slices.Equal(args[len(args)-2:], []string{"-wait", "-pods"}) {
		t.Errorf("args %q", args)
	}
	if env := b.childEnv(ms[0]); !slices.Equal(env, []string{"BRIDGE_CONFIG=rules.yaml", "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT=-1"}) {
		t.Errorf("env %q", env)
	}
	if env := b.childEnv(ms[1]); !slices.Equal(env, []string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT=-1"}) {
		t.Errorf("env without rules %q", env)
	}
	if _, f, err := parseChildFlags(args[1:]); err != nil || !f.pods {
		t.Errorf("the child read pods %v, %v", f.pods, err)
	}
}
