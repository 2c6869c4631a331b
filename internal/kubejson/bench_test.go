package kubejson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// BenchmarkPod writes the fixture Pod (a Deployment's Pod, 2.8 KB of
// JSON) with encoding/json, the baseline, and with kubejson, in one run:
//
//	go test -run '^$' -bench 'Pod|ConfigMap' -benchmem -count 6 ./internal/kubejson
func BenchmarkPod(b *testing.B) { benchEncoders(b, fixtures.Pod(1, 1)) }

// BenchmarkConfigMap writes a ConfigMap like hack/bench/versus's: four
// keys of 512 characters that need no escaping, one label.
func BenchmarkConfigMap(b *testing.B) {
	data := map[string]string{}
	for k := range 4 {
		data["key-"+strconv.Itoa(k)] = strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 8)
	}
	benchEncoders(b, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-1", Namespace: "default", UID: "9d3a1e7e-3f7c-4c5e-8a55-0d6c1f2b7a11", ResourceVersion: "12345",
			Labels: map[string]string{"app": "bench-versus"}, CreationTimestamp: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Data: data,
	})
}

func benchEncoders(b *testing.B, obj any) {
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(obj); err != nil {
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
			if out, err = w.Append(out[:0], obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
