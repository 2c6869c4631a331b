package sink

import (
	"context"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// captureLogs returns a context whose klog logger keeps every entry, at
// every verbosity, in the returned buffer (and passes it to t.Log).
func captureLogs(t *testing.T) (context.Context, ktesting.Buffer) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(10)))
	return klog.NewContext(context.Background(), logger), logger.GetSink().(ktesting.Underlier).GetBuffer()
}

// entries returns the logged entries with message msg.
func entries(buf ktesting.Buffer, msg string) []ktesting.LogEntry {
	var found []ktesting.LogEntry
	for _, e := range buf.Data() {
		if e.Message == msg {
			found = append(found, e)
		}
	}
	return found
}

// value returns the value logged under key in e, or nil.
func value(e ktesting.LogEntry, key string) any {
	kv := append(append([]any(nil), e.WithKVList...), e.ParameterKVList...)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == key {
			return kv[i+1]
		}
	}
	return nil
}
