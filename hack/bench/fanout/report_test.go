package main

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// outcomes of a run at K = 0 and K = 2, the baselines first and last,
// with round numbers.
func sampleOutcomes() []outcome {
	cons := func(cpu, rss float64) []usage {
		return []usage{{CPU: cpu, RSSMean: rss, RSSPeak: rss + 10}, {CPU: cpu + 2, RSSMean: rss + 20, RSSPeak: rss + 40}}
	}
	return []outcome{
		{setup: setup{seq: 0, k: 0}, window: 30 * time.Second, apiserver: usage{CPU: 8}, etcd: usage{CPU: 2}, newSync: 2 * time.Second},
		{setup: setup{seq: 1, stream: true, k: 0}, window: 31 * time.Second, apiserver: usage{CPU: 9}, etcd: usage{CPU: 3}, nats: usage{CPU: 4},
			bridge: usage{CPU: 5, RSSMean: 100, RSSPeak: 120}, newSync: time.Second},
		{setup: setup{seq: 2, k: 2}, window: 30 * time.Second, apiserver: usage{CPU: 16}, etcd: usage{CPU: 2}, consumers: cons(3, 100), newSync: 4 * time.Second},
		{setup: setup{seq: 3, stream: true, k: 2}, window: 32 * time.Second, apiserver: usage{CPU: 11}, etcd: usage{CPU: 4}, nats: usage{CPU: 10},
			bridge: usage{CPU: 5}, consumers: cons(2, 120), newSync: 2 * time.Second, startAPIEtcd: 0.5, startNATS: 3.25},
		{setup: setup{seq: 4, k: 0}, window: 30 * time.Second, apiserver: usage{CPU: 10}, etcd: usage{CPU: 4}, newSync: 2 * time.Second},
		{setup: setup{seq: 5, stream: true, k: 0}, window: 30 * time.Second, apiserver: usage{CPU: 11}, etcd: usage{CPU: 5}, nats: usage{CPU: 6},
			bridge: usage{CPU: 5, RSSMean: 100, RSSPeak: 120}, newSync: time.Second},
	}
}

func TestGoalRowsAreTheIssuesRatios(t *testing.T) {
	rows := goalRows(sampleOutcomes())
	type want struct {
		prefix  string
		ratio   float64
		verdict string
	}
	wants := []want{
		// The baselines are the means of their two runs: apiserver+etcd
		// 10 and 14 for the informers, 12 and 16 for the stream, whose
		// nats-server's CPU is 4 and 6.
		{"1. ", 15.0 / 14, "PASS"},          // (11 + 4) ÷ mean(12, 16)
		{"1, for scale", 18.0 / 12, "info"}, // (16 + 2) ÷ mean(10, 14)
		{"2. ", 2.0 / 4, "PASS"},
		{"3. ", 130.0 / 110, "FAIL"},                  // mean of 120, 140 ÷ mean of 100, 120
		{"4. ", ((10 - 5) / 2.0) / (6 / 2.0), "PASS"}, // nats 10 − mean(4, 6) over 2 ÷ apiserver+etcd 18 − 12 over 2
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		g := rows[i]
		if !strings.HasPrefix(g.goal, w.prefix) || g.k != 2 || math.Abs(g.ratio()-w.ratio) > 1e-9 || g.verdict() != w.verdict {
			t.Errorf("row %d: %q at K = %d, ratio %.4f, %s; want %q…, K = 2, ratio %.4f, %s", i, g.goal, g.k, g.ratio(), g.verdict(), w.prefix, w.ratio, w.verdict)
		}
	}
}

func TestGoalVerdicts(t *testing.T) {
	for _, c := range []struct {
		g    goalRow
		want string
	}{
		{goalRow{num: 13, den: 10, limit: 1.3}, "PASS"}, // at the limit
		{goalRow{num: 13.1, den: 10, limit: 1.3}, "FAIL"},
		{goalRow{num: -1, den: 10, limit: 1}, "PASS"}, // less than the baseline: noise, and no cost
		{goalRow{num: 1, den: 0, limit: 1}, "n/a"},
		{goalRow{num: 1, den: -2, limit: 1}, "n/a"},
		{goalRow{num: math.NaN(), den: 1, limit: 1}, "n/a"},
		{goalRow{num: 5, den: 1}, "info"},
	} {
		if got := c.g.verdict(); got != c.want {
			t.Errorf("%g ÷ %g, limit %g: %s, want %s", c.g.num, c.g.den, c.g.limit, got, c.want)
		}
	}
}

// Without the baselines, or without one source at a K, the goals that
// need them are left out rather than judged on nothing.
func TestGoalRowsNeedTheirSetups(t *testing.T) {
	outs := sampleOutcomes()
	noInformerBaseline := slices.DeleteFunc(slices.Clone(outs), func(o outcome) bool { return !o.stream && o.k == 0 })
	if rows := goalRows(noInformerBaseline); slices.ContainsFunc(rows, func(g goalRow) bool { return g.goal[0] == '1' || g.goal[0] == '4' }) {
		t.Errorf("goals 1 and 4 judged without the informers' baseline: %+v", rows)
	}
	if rows := goalRows(outs[:3]); slices.ContainsFunc(rows, func(g goalRow) bool { return g.verdict() != "info" }) {
		t.Errorf("goals judged without the stream setup at K = 2: %+v", rows)
	}
}

func TestReportHasATablePerKAndTheGoals(t *testing.T) {
	var buf bytes.Buffer
	printReport(&buf, "### head", sampleOutcomes())
	out := buf.String()
	for _, s := range []string{
		"#### K = 0\n", "#### K = 2\n", "#### Goals (issue 36)",
		"| (a) 0 informers | 30.0 | 10.0 (8.0 + 2.0) | 0.0 | — | — | — | 2.00 |",
		"| (b) bridge + 2 stream consumers | 32.0 | 15.0 (11.0 + 4.0) | 10.0 | 5.0 | 3.0 (4.0) | 130 (160) | 2.00 |",
		"| (b) bridge + 0 stream consumers | 31.0 | 12.0 (9.0 + 3.0) | 4.0 | 5.0 | — | — | 1.00 | 0 (0) | 0 (0) | 0 (0) | 100 (120) | 0.0 / 0.0 |",
		"| 0 (0) | 0.5 / 3.2 |\n",
		"| 3. consumer RSS (mean over the window): stream ÷ informer | 2 | 130 MiB ÷ 110 MiB | 1.182 | ≤ 1.1 | FAIL |",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the report lacks %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "| (a) 2 informers |"); n != 1 {
		t.Errorf("the K = 2 informers' row is there %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "| (a) 0 informers |"); n != 2 {
		t.Errorf("the baseline of the informers is there %d times, want both runs:\n%s", n, out)
	}
}

func TestSetupsRunTheBaselinesFirst(t *testing.T) {
	var got []string
	for _, s := range setups([]int{1, 20}) {
		got = append(got, s.String()+" "+s.token())
	}
	want := []string{"(a) 0 informers setup-0", "(b) bridge + 0 stream consumers setup-1", "(a) 1 informer setup-2",
		"(b) bridge + 1 stream consumer setup-3", "(a) 20 informers setup-4", "(b) bridge + 20 stream consumers setup-5",
		"(a) 0 informers setup-6", "(b) bridge + 0 stream consumers setup-7"}
	if !slices.Equal(got, want) {
		t.Fatalf("setups %q, want %q", got, want)
	}
}

func TestParseConsumers(t *testing.T) {
	got, err := parseConsumers("20, 1,5")
	if err != nil || !slices.Equal(got, []int{1, 5, 20}) {
		t.Fatalf("got %v, %v; want [1 5 20]", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "5,5", "-1"} {
		if _, err := parseConsumers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPlanChurnSplitsInThirds(t *testing.T) {
	for n, want := range map[int]churnPlan{3000: {1000, 1000, 1000}, 3001: {1001, 1000, 1000}, 3002: {1002, 1000, 1000}} {
		if got := planChurn(n); got != want {
			t.Errorf("planChurn(%d) = %+v, want %+v", n, got, want)
		}
	}
}

func TestStateIgnoresOrderAndSeesEveryChange(t *testing.T) {
	objs := []objectVersion{{"ns/a", "10"}, {"ns/b", "11"}, {"ns/c", "12"}}
	base := stateOf(objs)
	if got := stateOf([]objectVersion{objs[2], objs[0], objs[1]}); got != base {
		t.Errorf("reordered: %v, want %v", got, base)
	}
	for name, other := range map[string][]objectVersion{
		"one missing":          objs[:2],
		"a newer version":      {objs[0], objs[1], {"ns/c", "13"}},
		"another name":         {objs[0], objs[1], {"ns/d", "12"}},
		"key and rv run along": {objs[0], objs[1], {"ns/c1", "2"}},
	} {
		if got := stateOf(other); got.Digest == base.Digest {
			t.Errorf("%s: the digest did not change (%v)", name, got)
		}
	}
	if base.Objects != 3 {
		t.Errorf("%d objects, want 3", base.Objects)
	}
}

func TestPidOfFindsThisProcess(t *testing.T) {
	pid, err := pidOf(func(args []string) bool { return slices.Equal(args, os.Args) })
	if err != nil || pid != os.Getpid() {
		t.Fatalf("pidOf: %d, %v; want %d", pid, err, os.Getpid())
	}
	if _, err := pidOf(func([]string) bool { return false }); err == nil {
		t.Fatal("no error when nothing matches")
	}
}
