package encode_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// ceAttributes are the CloudEvents 1.0 context attributes that are not
// extensions.
var ceAttributes = []string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema"}

var extName = regexp.MustCompile(`^[a-z0-9]{1,20}$`)

func deepCopy(o runtime.Object) runtime.Object {
	if o == nil {
		return nil
	}
	return o.DeepCopyObject()
}

// expectedObject is obj as the event should carry it: its JSON with
// apiVersion and kind set from the resource when the object has none.
func expectedObject(t *testing.T, obj runtime.Object, r *informers.Resource) map[string]interface{} {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]interface{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = r.GVR.GroupVersion().String()
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = r.Kind
	}
	return m
}

func asMap(t *testing.T, raw []byte) map[string]interface{} {
	t.Helper()
	if raw == nil {
		return nil
	}
	var m map[string]interface{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m
}

// TestDecodeRoundTrip: every message is a valid CloudEvent to an sdk-go
// consumer, with the attributes a reader expects, and encoding leaves the
// cached objects alone.
func TestDecodeRoundTrip(t *testing.T) {
	for _, tc := range encodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.change(t)
			before, beforeOld := deepCopy(c.Object), deepCopy(c.OldObject)

			enc, err := tc.encoder().Encode(c)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}

			if !reflect.DeepEqual(c.Object, before) || !reflect.DeepEqual(c.OldObject, beforeOld) {
				t.Errorf("Encode modified the change's objects:\nbefore %#v\nafter  %#v", before, c.Object)
			}
			if enc.Truncated != tc.truncated {
				t.Errorf("Truncated = %v, want %v", enc.Truncated, tc.truncated)
			}
			msg := enc.Msg
			if msg.Subject != tc.subject {
				t.Errorf("subject = %q, want %q", msg.Subject, tc.subject)
			}
			if !server.IsValidLiteralSubject(msg.Subject) {
				t.Errorf("subject %q is not a valid literal NATS subject", msg.Subject)
			}
			s := newEncoder(0).Subjects
			if w := s.TypeWildcard(c.Resource.Type()); !server.SubjectMatchesFilter(msg.Subject, w) {
				t.Errorf("subject %q is not under its type wildcard %q", msg.Subject, w)
			}
			if !c.Verb.IsMarker() {
				ref, err := s.ParseObject(msg.Subject)
				if err != nil {
					t.Errorf("ParseObject(%q): %v", msg.Subject, err)
				}
				want := contract.Subject{Kind: contract.ObjectSubject, Type: c.Resource.Type(), Namespace: tc.ext["namespace"], Name: tc.ext["name"]}
				if ref != want {
					t.Errorf("ParseObject(%q) = %+v, want %+v", msg.Subject, ref, want)
				}
			} else if _, err := s.ParseObject(msg.Subject); err == nil {
				t.Errorf("ParseObject accepted the marker subject %q", msg.Subject)
			}

			// Headers.
			if enc.ID != tc.id || msg.Header.Get("Nats-Msg-Id") != "prod/"+tc.id || msg.Header.Get("ce-id") != tc.id {
				t.Errorf("Encoded.ID=%q Nats-Msg-Id=%q ce-id=%q, want %q", enc.ID, msg.Header.Get("Nats-Msg-Id"), msg.Header.Get("ce-id"), tc.id)
			}
			if ct, cect := msg.Header.Get("Content-Type"), msg.Header.Get("ce-datacontenttype"); ct != cect {
				t.Errorf("Content-Type %q != ce-datacontenttype %q", ct, cect)
			}
			for k, vs := range msg.Header {
				if len(vs) != 1 {
					t.Errorf("header %s has %d values", k, len(vs))
				}
				if !validHeaderKey(k) {
					t.Errorf("header key %q is not valid in NATS", k)
				}
			}
			if got := msg.Header.Get("ce-time"); got != observedAtText {
				t.Errorf("ce-time = %q, want %q", got, observedAtText)
			}

			// sdk-go's view.
			ev, err := cenats.Decode(msg)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := ev.Validate(); err != nil {
				t.Errorf("decoded event is invalid: %v", err)
			}
			checkEvent(t, tc, c, ev)
			checkRewrite(t, ev, msg)

			// Data.
			if c.Verb.IsMarker() {
				if len(ev.Data()) != 0 || ev.DataContentType() != "" || msg.Header.Get("Content-Type") != "" {
					t.Errorf("marker has data %q, datacontenttype %q", ev.Data(), ev.DataContentType())
				}
				return
			}
			if ev.DataContentType() != "application/json" {
				t.Errorf("datacontenttype = %q", ev.DataContentType())
			}
			var d contract.Data
			if err := ev.DataAs(&d); err != nil {
				t.Fatalf("DataAs: %v", err)
			}
			if tc.truncated {
				return // TestTruncated checks the truncated form
			}
			if got, want := asMap(t, d.Object), expectedObject(t, c.Object, c.Resource); !reflect.DeepEqual(got, want) {
				t.Errorf("data.object:\n got %v\nwant %v", got, want)
			}
			var wantOld map[string]interface{}
			if c.OldObject != nil {
				wantOld = expectedObject(t, c.OldObject, c.Resource)
			}
			if got := asMap(t, d.OldObject); !reflect.DeepEqual(got, wantOld) {
				t.Errorf("data.oldObject:\n got %v\nwant %v", got, wantOld)
			}
		})
	}
}

func checkEvent(t *testing.T, tc encodeCase, c informers.Change, ev *event.Event) {
	t.Helper()
	if ev.SpecVersion() != event.CloudEventsVersionV1 {
		t.Errorf("specversion = %q", ev.SpecVersion())
	}
	if ev.ID() != tc.id {
		t.Errorf("id = %q, want %q", ev.ID(), tc.id)
	}
	if ev.Type() != tc.ceType {
		t.Errorf("type = %q, want %q", ev.Type(), tc.ceType)
	}
	if ev.Source() != tc.source {
		t.Errorf("source = %q, want %q", ev.Source(), tc.source)
	}
	if ev.Subject() != tc.ceSubject {
		t.Errorf("subject = %q, want %q", ev.Subject(), tc.ceSubject)
	}
	if !ev.Time().Equal(c.ObservedAt) {
		t.Errorf("time = %v, want %v", ev.Time(), c.ObservedAt)
	}
	got := map[string]string{}
	for k, v := range ev.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			t.Errorf("extension %s: %v", k, err)
		}
		got[k] = s
		if !extName.MatchString(k) || slices.Contains(ceAttributes, k) {
			t.Errorf("extension name %q is not a valid CloudEvents extension name", k)
		}
	}
	if !reflect.DeepEqual(got, tc.ext) {
		t.Errorf("extensions:\n got %v\nwant %v", got, tc.ext)
	}
}

// checkRewrite: sdk-go's binding writes the decoded event back with the
// very headers the encoder wrote (the JetStream ones aside), so the
// encoder's own header writer says what sdk-go would.
func checkRewrite(t *testing.T, ev *event.Event, msg *nats.Msg) {
	t.Helper()
	again, err := cenats.Message(ev, msg.Subject)
	if err != nil {
		t.Fatalf("cenats.Message: %v", err)
	}
	want := nats.Header{}
	for k, vs := range msg.Header {
		if !strings.HasPrefix(k, "Nats-") {
			want[k] = vs
		}
	}
	if !reflect.DeepEqual(again.Header, want) {
		t.Errorf("sdk-go writes the event with the headers\n%v\nthe encoder wrote\n%v", again.Header, want)
	}
	if !bytes.Equal(again.Data, msg.Data) {
		t.Errorf("sdk-go writes the data %q, the encoder %q", again.Data, msg.Data)
	}
}

// validHeaderKey is ADR-4's rule for NATS header names: printable ASCII
// without ':'.
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e || k[i] == ':' {
			return false
		}
	}
	return true
}

func TestDecodeRejectsPlainMessage(t *testing.T) {
	_, err := cenats.Decode(&nats.Msg{Subject: "x", Header: nats.Header{"Content-Type": {"application/json"}}, Data: []byte(`{}`)})
	if err != cenats.ErrNotCloudEvent {
		t.Errorf("Decode of a message without ce-specversion: %v, want ErrNotCloudEvent", err)
	}
}

// TestDeterministic: the same change always makes the same message, and
// ObservedAt only shows in ce-time, so a re-sent event is a JetStream
// duplicate of the first.
func TestDeterministic(t *testing.T) {
	for _, tc := range encodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.encoder()
			c := tc.change(t)
			a, err := e.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, c2 := range []informers.Change{c, tc.change(t)} {
				b, err := e.Encode(c2)
				if err != nil {
					t.Fatal(err)
				}
				if a.Msg.Subject != b.Msg.Subject || !reflect.DeepEqual(a.Msg.Header, b.Msg.Header) ||
					string(a.Msg.Data) != string(b.Msg.Data) || a.ID != b.ID || a.Truncated != b.Truncated {
					t.Errorf("two encodings differ:\n%s\n%s", render(t, a.Msg), render(t, b.Msg))
				}
			}

			later := c
			later.ObservedAt = observedAt.Add(97*time.Minute + 3*time.Nanosecond)
			b, err := e.Encode(later)
			if err != nil {
				t.Fatal(err)
			}
			if a.Msg.Subject != b.Msg.Subject || string(a.Msg.Data) != string(b.Msg.Data) || a.ID != b.ID {
				t.Errorf("ObservedAt changed more than ce-time:\n%s\n%s", render(t, a.Msg), render(t, b.Msg))
			}
			var diff []string
			for k := range a.Msg.Header {
				if !reflect.DeepEqual(a.Msg.Header[k], b.Msg.Header[k]) {
					diff = append(diff, k)
				}
			}
			for k := range b.Msg.Header {
				if _, ok := a.Msg.Header[k]; !ok {
					diff = append(diff, k)
				}
			}
			if !slices.Equal(diff, []string{"ce-time"}) {
				t.Errorf("headers that changed with ObservedAt: %v, want [ce-time]", diff)
			}
			if got, want := b.Msg.Header.Get("ce-time"), "2026-01-02T04:41:05.123456792Z"; got != want {
				t.Errorf("ce-time = %q, want %q", got, want)
			}
		})
	}
}

// TestObservedAtZone: ce-time is in UTC whatever zone ObservedAt is in.
func TestObservedAtZone(t *testing.T) {
	c := findCase(t, "added-configmap").change(t)
	c.ObservedAt = observedAt.In(time.FixedZone("CEST", 2*3600))
	enc, err := newEncoder(0).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := enc.Msg.Header.Get("ce-time"); got != observedAtText {
		t.Errorf("ce-time = %q, want %q", got, observedAtText)
	}
}

// TestDataIsJSONForAnyTypeName: apiVersion and kind are written into the
// data by the encoder for typed objects; whatever discovery says they are,
// the data must stay valid JSON and carry them as JSON strings.
func TestDataIsJSONForAnyTypeName(t *testing.T) {
	check := func(t *testing.T, group, kind string) (ok bool, why string) {
		r := &informers.Resource{
			GVR:  schema.GroupVersionResource{Group: group, Version: "v1", Resource: "configmaps"},
			Kind: kind, Namespaced: true,
		}
		enc, err := newEncoder(0).Encode(informers.Change{Verb: informers.Added, Resource: r, Object: appConfig("1"), ObservedAt: observedAt})
		if err != nil {
			return false, "Encode: " + err.Error()
		}
		if !json.Valid(enc.Msg.Data) {
			return false, fmt.Sprintf("data is not valid JSON: %.120q", enc.Msg.Data)
		}
		obj, _ := decodeData(t, enc.Msg.Data)
		// What encoding/json makes of the strings (invalid UTF-8 becomes U+FFFD).
		var wantKind, wantAPIVersion string
		rt := func(s string, into *string) {
			b, _ := json.Marshal(s)
			_ = json.Unmarshal(b, into)
		}
		rt(kind, &wantKind)
		rt(r.GVR.GroupVersion().String(), &wantAPIVersion)
		if obj["kind"] != wantKind || obj["apiVersion"] != wantAPIVersion {
			return false, fmt.Sprintf("data has apiVersion %q kind %q, want %q %q", obj["apiVersion"], obj["kind"], wantAPIVersion, wantKind)
		}
		return true, ""
	}
	for _, kind := range []string{"ConfigMap", `Quo"te`, `Back\slash`, "Ünïcödé", "日本", "</script>", "tab\there"} {
		if ok, why := check(t, "", kind); !ok {
			t.Errorf("kind %q: %s", kind, why)
		}
	}
	if ok, why := check(t, "we\"ird.example.com", "Widget"); !ok {
		t.Errorf("group with a quote: %s", why)
	}
	// strconv.AppendQuote is Go syntax, not JSON: \x7f, \x00, \a and bytes
	// of invalid UTF-8 come out as \x.. or \a escapes JSON does not have.
	var bad []string
	for _, kind := range []string{"del\x7f", "nul\x00", "bell\a", "vt\v", "bad\xffutf8"} {
		if ok, why := check(t, "", kind); !ok {
			bad = append(bad, fmt.Sprintf("kind %q: %s", kind, why))
		}
	}
	if len(bad) > 0 {
		t.Errorf("apiVersion/kind not quoted as JSON:\n%s", strings.Join(bad, "\n"))
	}
}
