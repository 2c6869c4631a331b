package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// verifyReport is verify's JSON report, as far as the tests read it.
type verifyReport struct {
	Messages uint64 `json:"messages"`
	Types    []struct {
		Type      string `json:"type"`
		Added     int    `json:"added"`
		Updated   int    `json:"updated"`
		Deleted   int    `json:"deleted"`
		Items     int    `json:"snapshotItems"`
		Snapshots int    `json:"snapshots"`
		Objects   int    `json:"objects"`
		Swept     int    `json:"swept"`
		Fenced    int    `json:"fenced"`
	} `json:"types"`
	Findings []struct {
		Kind   string `json:"kind"`
		Seq    uint64 `json:"seq"`
		Breach bool   `json:"breach"`
	} `json:"findings"`
	Breaches    int `json:"breaches"`
	Differences int `json:"differences"`
	Against     []struct {
		Type      string `json:"type"`
		Scope     string `json:"scope"`
		InCluster int    `json:"inCluster"`
		Missing   []struct {
			Key string `json:"key"`
		} `json:"missing"`
		Extra []struct {
			Key string `json:"key"`
		} `json:"extra"`
		Differ []struct {
			Key    string `json:"key"`
			Fields string `json:"fields"`
		} `json:"differ"`
	} `json:"againstCluster"`
}

// verify runs verify -o json with args and decodes the report.
func (h *harness) verify(wantCode int, args ...string) verifyReport {
	h.t.Helper()
	res := h.run(append([]string{"verify", "-o", "json"}, args...)...)
	var r verifyReport
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil || res.code != wantCode {
		h.t.Fatalf("verify %s: exit %d (want %d), %v\n%s", strings.Join(args, " "), res.code, wantCode, err, res)
	}
	return r
}

func (r verifyReport) findings() string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s@%d", f.Kind, f.Seq))
	}
	return strings.Join(out, " ")
}

func (r verifyReport) typeLine(typ string) string {
	for _, t := range r.Types {
		if t.Type == typ {
			return fmt.Sprintf("added %d updated %d deleted %d items %d snapshots %d objects %d", t.Added, t.Updated, t.Deleted, t.Items, t.Snapshots, t.Objects)
		}
	}
	return "absent"
}

// republish stores the message at seq again, with its headers changed by
// mod, once JetStream no longer drops it as a duplicate (the stream's
// window must be short), and returns its new sequence.
func (h *harness) republish(seq uint64, mod func(nats.Header)) uint64 {
	h.t.Helper()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, h.stream)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetMsg(ctx, seq)
	if err != nil {
		h.t.Fatal(err)
	}
	again := &nats.Msg{Subject: m.Subject, Header: nats.Header{}, Data: m.Data}
	for k, v := range m.Header {
		// The fence's expectation held when the bridge wrote it.
		if !strings.HasPrefix(k, "Nats-Expected") {
			again.Header[k] = v
		}
	}
	if mod != nil {
		mod(again.Header)
	}
	var stored uint64
	h.waitFor("a re-publish past the duplicate window", func() string {
		ack, err := h.js.PublishMsg(ctx, again)
		if err != nil {
			h.t.Fatal(err)
		}
		if ack.Duplicate {
			return "a duplicate"
		}
		stored = ack.Sequence
		return ""
	})
	return stored
}
