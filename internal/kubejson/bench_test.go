package kubejson

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// BenchmarkPod writes the fixture Pod (a Deployment's Pod, 2.8 KB of
// JSON) with encoding/json, the baseline, and with kubejson, in one run:
//
//	go test -run '^$' -bench Pod -benchmem -count 6 ./internal/kubejson
func BenchmarkPod(b *testing.B) {
	pod := fixtures.Pod(1, 1)
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kubejson", func(b *testing.B) {
		var w Writer
		out := make([]byte, 0, 4096)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if out, err = w.Append(out[:0], pod); err != nil {
				b.Fatal(err)
			}
		}
	})
}
