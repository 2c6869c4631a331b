package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// pressureVars returns the variables that bound what the bridge holds
// between the informers and NATS: the publish window and the byte budget.
func pressureVars(window, bufferBytes string) map[string]string {
	return map[string]string{"BRIDGE_PUBLISH_WINDOW": window, "BRIDGE_PUBLISH_BUFFER_BYTES": bufferBytes}
}

// ---- the operational endpoints ----

// listenLine is how the bridge logs the address of /healthz, /readyz and
// /metrics (BRIDGE_HTTP_ADDR is 127.0.0.1:0 in every test).
var listenLine = regexp.MustCompile(`"Serving /healthz, /readyz and /metrics".* address="([^"]+)"`)

// endpoint returns the bridge's operational base URL, waiting for it to be
// logged.
func (b *bridge) endpoint() string {
	b.h.t.Helper()
	b.waitLog("Serving /healthz, /readyz and /metrics", readyTimeout)
	m := listenLine.FindStringSubmatch(b.output())
	if m == nil {
		b.h.t.Fatalf("%s: cannot parse the listen address from its log", b.name)
	}
	return "http://" + m[1]
}

// get fetches path from the operational endpoints.
func (b *bridge) get(path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.endpoint()+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metrics is one scrape of /metrics: sample name → its samples.
type metrics map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

// scrape reads /metrics, retrying for a while.
func (b *bridge) scrape() metrics {
	b.h.t.Helper()
	var m metrics
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body, err := b.get("/metrics")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", code, body)
		}
		if err == nil {
			m, err = parseMetrics(body)
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		b.h.t.Fatalf("%s: scrape /metrics for 30s: %v", b.name, last)
	}
	return m
}

// parseMetrics parses the Prometheus text format (what client_golang
// writes: no timestamps, label values escaped with \\, \" and \n).
func parseMetrics(text string) (metrics, error) {
	out := metrics{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			var err error
			if rest, err = parseLabels(rest[1:], labels); err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out[name] = append(out[name], sample{labels, v})
	}
	return out, sc.Err()
}

// parseLabels parses `a="x",b="y"}` into labels and returns what follows
// the closing brace.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return "", fmt.Errorf("label without value in %q", s)
		}
		key := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		for {
			if s == "" {
				return "", fmt.Errorf("unterminated value of label %s", key)
			}
			c := s[0]
			s = s[1:]
			if c == '"' {
				break
			}
			if c == '\\' && s != "" {
				switch s[0] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[0])
				}
				s = s[1:]
				continue
			}
			v.WriteByte(c)
		}
		labels[key] = v.String()
	}
}

// sum adds the samples of name whose labels include every pair in match
// (given as "key", "value", ...).
func (m metrics) sum(name string, match ...string) float64 {
	total := 0.0
	for _, s := range m[name] {
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			if s.labels[match[i]] != match[i+1] {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// has reports whether name has a sample whose label is value.
func (m metrics) has(name, label, value string) bool {
	for _, s := range m[name] {
		if s.labels[label] == value {
			return true
		}
	}
	return false
}

// accounting is the bridge's account of the changes of one type (README:
// observed = published added/updated/deleted + coalesced + superseded).
type accounting struct {
	observed, published, coalesced, superseded float64
	// legacyDropped is kubebridge_changes_dropped_total, which binaries
	// with a bounded queue export instead of coalescing.
	legacyDropped float64
}

func (m metrics) accounting(resource string) accounting {
	a := accounting{
		observed:      m.sum("kubebridge_changes_observed_total", "resource", resource),
		coalesced:     m.sum("kubebridge_changes_coalesced_total", "resource", resource),
		superseded:    m.sum("kubebridge_events_superseded_total", "resource", resource),
		legacyDropped: m.sum("kubebridge_changes_dropped_total", "resource", resource),
	}
	for _, typ := range []string{"added", "updated", "deleted"} {
		a.published += m.sum("kubebridge_events_published_total", "resource", resource, "type", typ)
	}
	return a
}

// dropped is what the identity leaves unaccounted for.
func (a accounting) dropped() float64 { return a.observed - a.published - a.coalesced - a.superseded }

func (a accounting) String() string {
	return fmt.Sprintf("observed %.0f = published %.0f + coalesced %.0f + superseded %.0f + dropped %.0f (kubebridge_changes_dropped_total %.0f)",
		a.observed, a.published, a.coalesced, a.superseded, a.dropped(), a.legacyDropped)
}

// waitNoneDropped waits until the bridge has accounted for every change
// of resource it observed (the pending ones are published or merged) and
// returns the account; it fails the test if some stay unaccounted for.
// Call it once the stream has converged, so nothing should be pending.
func (b *bridge) waitNoneDropped(resource string, timeout time.Duration) accounting {
	b.h.t.Helper()
	var a accounting
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		a = b.scrape().accounting(resource)
		return a.observed > 0 && a.dropped() == 0 && a.legacyDropped == 0, nil
	})
	switch {
	case err == nil:
	case a.observed == 0:
		b.h.t.Errorf("%s: no change of %s observed (kubebridge_changes_observed_total) within %v", b.name, resource, timeout)
	default:
		b.h.t.Errorf("%s: changes of %s dropped: %v (still after %v)", b.name, resource, a, timeout)
	}
	return a
}

// quantile estimates the q-quantile of a histogram's samples matching
// match, as PromQL's histogram_quantile does over its cumulative buckets:
// linear within the bucket where the rank falls ("<= le" of the bucket
// when it is the last finite one).
func (m metrics) quantile(name string, q float64, match ...string) string {
	type bucket struct{ le, count float64 }
	var buckets []bucket
	for _, s := range m[name+"_bucket"] {
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			ok = ok && s.labels[match[i]] == match[i+1]
		}
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{le, s.value})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	if len(buckets) == 0 || buckets[len(buckets)-1].count == 0 {
		return "n/a"
	}
	rank := q * buckets[len(buckets)-1].count
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return fmt.Sprintf("> %gs", lower)
			}
			return fmt.Sprintf("%.3fs", lower+(b.le-lower)*(rank-below)/(b.count-below))
		}
		lower, below = b.le, b.count
	}
	return "n/a"
}
