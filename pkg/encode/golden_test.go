package encode_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var update = flag.Bool("update", false, "rewrite golden files")

const goldenDir = "testdata/golden"

// render is the golden form of a message: the subject, every header sorted
// by key, a blank line, then the data indented.
func render(t testing.TB, msg *nats.Msg) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "subject: %s\n", msg.Subject)
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	if len(msg.Data) > 0 {
		if err := json.Indent(&b, msg.Data, "", "  "); err != nil {
			t.Fatalf("data is not JSON: %v\n%s", err, msg.Data)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	for _, tc := range encodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := tc.encoder().Encode(tc.change(t))
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got := render(t, enc.Msg)
			path := filepath.Join(goldenDir, tc.name+".txt")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/encode -run Golden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the encoder's output:\n%s", path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// TestGoldenNoStaleFiles fails on golden files no case writes any more.
func TestGoldenNoStaleFiles(t *testing.T) {
	if *update {
		t.Skip("-update")
	}
	names := map[string]bool{}
	for _, tc := range encodeCases() {
		names[tc.name+".txt"] = true
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] {
			t.Errorf("stale golden file %s", filepath.Join(goldenDir, e.Name()))
		}
	}
}

// lineDiff shows the lines that differ, with their line numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  -golden %q\n  +got    %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

func findCase(t *testing.T, name string) encodeCase {
	t.Helper()
	for _, tc := range encodeCases() {
		if tc.name == name {
			return tc
		}
	}
	t.Fatalf("no case %q", name)
	return encodeCase{}
}

func decodeData(t *testing.T, raw []byte) (object, oldObject map[string]interface{}) {
	t.Helper()
	var d struct {
		Object    map[string]interface{} `json:"object"`
		OldObject map[string]interface{} `json:"oldObject"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("data: %v\n%s", err, raw)
	}
	return d.Object, d.OldObject
}

// TestTypedObjectGetsTypeMeta: informer caches hold typed objects with an
// empty TypeMeta; the data must still say what the object is, without the
// cached object being touched.
func TestTypedObjectGetsTypeMeta(t *testing.T) {
	c := findCase(t, "updated-pod").change(t)
	enc, err := newEncoder(0).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	obj, old := decodeData(t, enc.Msg.Data)
	for name, o := range map[string]map[string]interface{}{"object": obj, "oldObject": old} {
		if o == nil {
			t.Fatalf("data has no %s", name)
		}
		if o["apiVersion"] != "v1" || o["kind"] != "Pod" {
			t.Errorf("%s: apiVersion=%v kind=%v, want v1 Pod", name, o["apiVersion"], o["kind"])
		}
	}
	rv := func(o map[string]interface{}) interface{} {
		return o["metadata"].(map[string]interface{})["resourceVersion"]
	}
	if rv(obj) != "9002" || rv(old) != "9001" {
		t.Errorf("resourceVersions object=%v oldObject=%v, want 9002 and 9001", rv(obj), rv(old))
	}
	if !c.Object.GetObjectKind().GroupVersionKind().Empty() || !c.OldObject.GetObjectKind().GroupVersionKind().Empty() {
		t.Errorf("encoding set TypeMeta on the cached objects: %v / %v",
			c.Object.GetObjectKind().GroupVersionKind(), c.OldObject.GetObjectKind().GroupVersionKind())
	}
}

// TestRedactedSecret: values are gone, keys stay, and nothing of the values
// survives anywhere in the message.
func TestRedactedSecret(t *testing.T) {
	c := findCase(t, "added-secret-redacted").change(t)
	enc, err := newEncoder(0).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var wire bytes.Buffer
	wire.WriteString(enc.Msg.Subject + "\n")
	for k, vs := range enc.Msg.Header {
		for _, v := range vs {
			wire.WriteString(k + ": " + v + "\n")
		}
	}
	wire.Write(enc.Msg.Data)
	for _, leak := range secretLeaks() {
		if bytes.Contains(wire.Bytes(), []byte(leak)) {
			t.Errorf("message contains secret material %q", leak)
		}
	}

	obj, _ := decodeData(t, enc.Msg.Data)
	data, ok := obj["data"].(map[string]interface{})
	if !ok {
		t.Fatalf("data.object.data = %#v, want the keys with null values", obj["data"])
	}
	if len(data) != 2 {
		t.Errorf("data.object.data has keys %v, want password and username", data)
	}
	for _, k := range []string{"password", "username"} {
		v, ok := data[k]
		if !ok || v != nil {
			t.Errorf("data.object.data[%q] = %#v (present %v), want null", k, v, ok)
		}
	}
	md := obj["metadata"].(map[string]interface{})
	if _, ok := md["managedFields"]; ok {
		t.Error("managedFields survived StripManagedFields")
	}
	ann, _ := md["annotations"].(map[string]interface{})
	if _, ok := ann[informers.LastAppliedAnnotation]; ok {
		t.Error("last-applied annotation of a Secret survived RedactSecrets")
	}
	if ann["example.com/owner"] != "billing" {
		t.Errorf("unrelated annotation lost: %v", ann)
	}
}

// TestSecretLeakCheckFires makes sure TestRedactedSecret's scan would catch
// a leak: the same Secret without the transform does leak.
func TestSecretLeakCheckFires(t *testing.T) {
	s := redactedSecret(t)
	s.Data["password"] = []byte(secretPassword)
	enc, err := newEncoder(0).Encode(informers.Change{Verb: informers.Added, Resource: secrets, Object: s, ObservedAt: observedAt})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, leak := range secretLeaks() {
		found = found || bytes.Contains(enc.Msg.Data, []byte(leak))
	}
	if !found {
		t.Fatal("an unredacted password was not detected by the leak scan")
	}
}

// natsPayloadSize is what the NATS client and server count against
// max_payload: the encoded header block plus the data, per nats.go.
func natsPayloadSize(m *nats.Msg) int { return m.Size() - len(m.Subject) - len(m.Reply) }

func TestTruncated(t *testing.T) {
	tc := findCase(t, "updated-truncated")
	c := tc.change(t)
	full, err := json.Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) <= tc.maxPayload {
		t.Fatalf("test object is only %d bytes; it must exceed MaxPayload %d", len(full), tc.maxPayload)
	}
	enc, err := tc.encoder().Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if !enc.Truncated {
		t.Error("Encoded.Truncated = false")
	}
	if got := enc.Msg.Header.Get("ce-truncated"); got != "true" {
		t.Errorf("ce-truncated = %q, want true", got)
	}
	if n := natsPayloadSize(enc.Msg); n > tc.maxPayload {
		t.Errorf("truncated message is %d bytes on the wire, limit %d", n, tc.maxPayload)
	}
	obj, old := decodeData(t, enc.Msg.Data)
	wantMeta := map[string]interface{}{
		"name": "big-config", "namespace": "default", "uid": "b16b16b1-6b16-4b16-8b16-b16b16b16b16",
	}
	for name, o := range map[string]map[string]interface{}{"object": obj, "oldObject": old} {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"apiVersion", "kind", "metadata"}) {
			t.Errorf("%s has fields %v, want apiVersion, kind, metadata", name, keys)
		}
		if o["apiVersion"] != "v1" || o["kind"] != "ConfigMap" {
			t.Errorf("%s: apiVersion=%v kind=%v", name, o["apiVersion"], o["kind"])
		}
		md, _ := o["metadata"].(map[string]interface{})
		want := map[string]interface{}{"resourceVersion": map[string]string{"object": "101", "oldObject": "100"}[name]}
		for k, v := range wantMeta {
			want[k] = v
		}
		if fmt.Sprint(md) != fmt.Sprint(want) {
			t.Errorf("%s metadata = %v, want %v", name, md, want)
		}
	}
}

func TestTooLarge(t *testing.T) {
	c := findCase(t, "updated-truncated").change(t)
	enc, err := newEncoder(100).Encode(c)
	if !errors.Is(err, encode.ErrTooLarge) {
		t.Fatalf("Encode with MaxPayload 100: err = %v, want ErrTooLarge", err)
	}
	if enc.Msg != nil || enc.ID != "" || enc.Truncated {
		t.Errorf("Encode returned %+v along with an error", enc)
	}
	if !strings.Contains(err.Error(), "kubebridge.prod.core.v1.configmaps.default.big-config") {
		t.Errorf("error %q does not name the subject", err)
	}
}

// TestMarkersIgnoreMaxPayload: markers carry no data to truncate, so they
// go out whole whatever the limit.
func TestMarkersIgnoreMaxPayload(t *testing.T) {
	c := findCase(t, "snapshot-end").change(t)
	enc, err := newEncoder(10).Encode(c)
	if err != nil {
		t.Fatalf("marker with tiny MaxPayload: %v", err)
	}
	if enc.Truncated || enc.Msg.Header.Get("ce-truncated") != "" {
		t.Error("a marker was marked truncated")
	}
}

func TestEncodeErrors(t *testing.T) {
	e := newEncoder(0)
	if _, err := e.Encode(informers.Change{Verb: "patched", Resource: configMaps, Object: appConfig("1")}); err == nil {
		t.Error("unknown verb: no error")
	}
	if _, err := e.Encode(informers.Change{Verb: informers.Added, Object: appConfig("1")}); err == nil {
		t.Error("nil resource: no error")
	}
	if _, err := e.Encode(informers.Change{Verb: informers.Added, Resource: configMaps}); err == nil {
		t.Error("nil object: no error")
	}
}
