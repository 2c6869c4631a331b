package encode_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/encode"
)

// The encoder counts a message's headers as it sets them rather than
// walking them to size it. For every case, and for a message reused after
// Release: the payload limit falls exactly where nats.go's own count of
// the message puts it (whole at its size, truncated to fit one byte
// below), and Size is the subject, the payload's buffer and the headers'
// keys and values.
func TestEncodedSizesMatchTheHeaders(t *testing.T) {
	for _, tc := range encodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.encoder()
			c := tc.change(t)
			whole, err := e.EncodeWithin(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := len(whole.Msg.Subject) + cap(whole.Msg.Data)
			for k, vs := range whole.Msg.Header {
				for _, v := range vs {
					want += len(k) + len(v)
				}
			}
			if got := whole.Size(); got != int64(want) {
				t.Errorf("Size() = %d, want %d", got, want)
			}
			size, data := natsPayloadSize(whole.Msg), bytes.Clone(whole.Msg.Data)
			whole.Release()

			// The same encoder reuses the message it was handed back.
			at, err := e.EncodeWithin(c, size)
			if err != nil {
				t.Fatalf("within its own size %d: %v", size, err)
			}
			if at.Truncated || !bytes.Equal(at.Msg.Data, data) {
				t.Errorf("within its own size %d, after a Release: truncated=%v", size, at.Truncated)
			}
			at.Release()
			if c.Verb.IsMarker() {
				return
			}
			below, err := e.EncodeWithin(c, size-1)
			if errors.Is(err, encode.ErrTooLarge) {
				// Right only when even its truncated form is over the limit.
				short, err := e.EncodeTruncated(c, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n := natsPayloadSize(short.Msg); n <= size-1 {
					t.Errorf("within %d: too large, yet its truncated form is %d bytes", size-1, n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !below.Truncated {
				t.Errorf("within %d, one byte below its size: not truncated", size-1)
			}
			if n := natsPayloadSize(below.Msg); n > size-1 {
				t.Errorf("truncated to %d bytes, over the limit %d", n, size-1)
			}
		})
	}
}
