package encode_test

import (
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// TestTombstoneHeaders: Nats-TTL and Nats-Rollup go on deleted events only
// (live or inferred, whole or truncated), only when the encoder is told to
// send them, and the TTL is whole seconds rounded up, as JetStream reads
// it. Any other event with a TTL would expire an object that exists; one
// with a roll-up would purge the object's history.
func TestTombstoneHeaders(t *testing.T) {
	for _, tc := range encodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.change(t)
			deleted := c.Verb == informers.Deleted
			for _, x := range []struct {
				ttl        time.Duration
				rollup     bool
				wantTTL    string
				wantRollup string
			}{
				{0, false, "", ""},
				{90 * time.Second, true, "1m30s", "sub"},
				{1500 * time.Millisecond, false, "2s", ""},
				{0, true, "", "sub"},
			} {
				e := newEncoder(tc.maxPayload)
				e.TombstoneTTL, e.TombstoneRollup = x.ttl, x.rollup
				enc, err := e.Encode(c)
				if err != nil {
					t.Fatal(err)
				}
				truncated, err := e.EncodeTruncated(c, 0)
				if err != nil {
					t.Fatal(err)
				}
				wantTTL, wantRollup := x.wantTTL, x.wantRollup
				if !deleted {
					wantTTL, wantRollup = "", ""
				}
				for name, m := range map[string]encode.Encoded{"whole": enc, "truncated": truncated} {
					if got := m.Msg.Header.Get(contract.HeaderTTL); got != wantTTL {
						t.Errorf("%s, TombstoneTTL %v: Nats-TTL %q, want %q", name, x.ttl, got, wantTTL)
					}
					if got := m.Msg.Header.Get(contract.HeaderRollup); got != wantRollup {
						t.Errorf("%s, TombstoneRollup %v: Nats-Rollup %q, want %q", name, x.rollup, got, wantRollup)
					}
				}
			}
		})
	}
}
