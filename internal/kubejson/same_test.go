package kubejson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is the reference: what encoding/json writes for v with
// HTML escaping off, without Encode's newline.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// requireSame fails unless w writes v byte for byte as encoding/json
// does, or fails where encoding/json fails. kubejson may refuse a value
// encoding/json writes (the caller then falls back to encoding/json) only
// when mayRefuse is set.
func requireSame(t testing.TB, w *Writer, v any, mayRefuse bool) {
	t.Helper()
	want, wantErr := encodingJSON(v)
	prefix := []byte("prefix:")
	got, err := w.Append(bytes.Clone(prefix), v)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("%T: encoding/json failed (%v), kubejson wrote %s", v, wantErr, got)
	case wantErr != nil:
		return
	case err != nil && mayRefuse:
		return
	case err != nil:
		t.Fatalf("%T: kubejson refused (%v) what encoding/json wrote: %s", v, err, want)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%T: Append did not keep what dst held: %q", v, got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		at := 0
		for at < len(got) && at < len(want) && got[at] == want[at] {
			at++
		}
		from := max(0, at-120)
		t.Fatalf("%T: kubejson and encoding/json differ at byte %d\nkubejson:      …%s\nencoding/json: …%s", v, at, got[from:min(len(got), at+60)], want[from:min(len(want), at+60)])
	}
}
