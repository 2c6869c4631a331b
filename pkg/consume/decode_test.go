package consume

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

func TestDecodeTypedAndUnstructured(t *testing.T) {
	f := newFab(t, &memStore{})
	term := f.term("a")
	old := cm("ns", "a", "u1", "10")
	f.change(informers.Updated, cm("ns", "a", "u1", "11"), old, func(c *informers.Change) { c.Coalesced = 3 })
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "ns", "name": "w.1", "uid": "u2", "resourceVersion": "12"}, "spec": map[string]any{"size": int64(3)}}}
	f.changeOf(widgets, informers.Deleted, w, nil, func(c *informers.Change) { c.FinalStateUnknown = true })
	f.end("s1", 2, "ns/gone", "cluster-wide")
	c := memClient(t)

	ev, err := c.Decode(f.seqs[1], f.msgs[1])
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || obj.Data["rv"] != "11" || ev.OldObject.(*corev1.ConfigMap).ResourceVersion != "10" {
		t.Fatalf("object %T %v, old %v", ev.Object, ev.Object, ev.OldObject)
	}
	if ev.Verb != Updated || ev.Term != term || ev.Coalesced != 3 || ev.UID != "u1" || ev.ResourceVersion != "11" ||
		ev.Key() != "ns/a" || ev.Resource != schemaGVR("", "v1", "configmaps") || ev.CloudEvent.Type() != contract.TypeUpdated {
		t.Errorf("event %+v", ev)
	}

	ev, err = c.Decode(f.seqs[2], f.msgs[2])
	if err != nil {
		t.Fatal(err)
	}
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || u.GetName() != "w.1" || !ev.FinalStateUnknown || ev.Verb != Deleted || ev.Resource != widgets.GVR {
		t.Fatalf("widget: %T %+v", ev.Object, ev)
	}
	if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d", size)
	}

	ev, err = c.Decode(f.seqs[3], f.msgs[3])
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verb != SnapshotEnd || ev.SnapshotCount != 2 || ev.SnapshotID != "s1" || !slices.Equal(ev.Unpublished, []string{"ns/gone", "cluster-wide"}) {
		t.Errorf("end marker %+v", ev)
	}
	if ev, err := c.Decode(f.seqs[0], f.msgs[0]); err != nil || ev.Verb != Term {
		t.Errorf("term marker: %+v, %v", ev, err)
	}
}

func TestDecodeTruncated(t *testing.T) {
	f := newFab(t, &memStore{})
	o := cm("ns", "big", "u1", "10")
	o.Data["payload"] = strings.Repeat("x", 4096)
	f.maxPayload = 2048
	f.added(o)
	ev, err := memClient(t).Decode(1, f.msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	got := ev.Object.(*corev1.ConfigMap)
	if !ev.Truncated || got.Name != "big" || got.UID != "u1" || len(got.Data) != 0 {
		t.Errorf("truncated=%v object %+v", ev.Truncated, got)
	}
}

// Messages that break the contract are errors, not silence.
func TestDecodeErrors(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	good := f.msgs[0]
	mutate := func(fn func(m *nats.Msg)) *nats.Msg {
		m := &nats.Msg{Subject: good.Subject, Header: nats.Header{}, Data: slices.Clone(good.Data)}
		for k, v := range good.Header {
			m.Header[k] = slices.Clone(v)
		}
		fn(m)
		return m
	}
	cases := map[string]*nats.Msg{
		"not a CloudEvent": mutate(func(m *nats.Msg) { m.Header.Del("ce-specversion") }),
		"unknown type":     mutate(func(m *nats.Msg) { m.Header.Set("ce-type", "io.kubebridge.object.renamed") }),
		"bad JSON":         mutate(func(m *nats.Msg) { m.Data = []byte(`{"object":`) }),
		"no object":        mutate(func(m *nats.Msg) { m.Data = []byte(`{}`) }),
		"other name":       mutate(func(m *nats.Msg) { m.Subject = strings.TrimSuffix(m.Subject, ".a") + ".b" }),
		"other uid":        mutate(func(m *nats.Msg) { m.Header.Set("ce-uid", "u9") }),
		"other rv":         mutate(func(m *nats.Msg) { m.Header.Set("ce-resourceversion", "9") }),
		"coalesced 1":      mutate(func(m *nats.Msg) { m.Header.Set("ce-coalesced", "1") }),
		"coalesced x":      mutate(func(m *nats.Msg) { m.Header.Set("ce-coalesced", "x") }),
		"bad term":         mutate(func(m *nats.Msg) { m.Header.Set("ce-term", "-1") }),
		"marker subject":   mutate(func(m *nats.Msg) { m.Subject = strings.TrimSuffix(m.Subject, ".ns.a") + "._snapshot.begin" }),
		"other cluster":    mutate(func(m *nats.Msg) { m.Subject = strings.Replace(m.Subject, ".c1.", ".c2.", 1) }),
	}
	c := memClient(t)
	if _, err := c.Decode(1, good); err != nil {
		t.Fatalf("the unchanged message: %v", err)
	}
	for name, m := range cases {
		_, err := c.Decode(5, m)
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrUndecodable) || de.Seq != 5 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFilterSubjects(t *testing.T) {
	cases := []struct {
		f            Filter
		ref          contract.Type
		events       []string
		stateSubject []string
	}{
		{Filter{Resource: "configmaps"}, contract.Type{Group: "", Version: "", Resource: "configmaps"},
			[]string{"kb.c1.core.*.configmaps.>"}, []string{"kb.c1.core.*.configmaps.>"}},
		{Filter{Resource: "ConfigMaps.v1"}, contract.Type{Group: "", Version: "v1", Resource: "configmaps"},
			[]string{"kb.c1.core.v1.configmaps.>"}, nil},
		{Filter{Resource: "deployments.apps", Namespace: "web"}, contract.Type{Group: "apps", Version: "", Resource: "deployments"},
			[]string{"kb.c1.apps.*.deployments.web.*"}, []string{"kb.c1.apps.*.deployments.web.*", "kb.c1.apps.*.deployments._snapshot.>"}},
		{Filter{Resource: "ingresses.networking.k8s.io", Name: "a_b"}, contract.Type{Group: "networking.k8s.io", Version: "", Resource: "ingresses"},
			[]string{"kb.c1.networking_k8s_io.*.ingresses.*.a%5Fb"}, nil},
		{Filter{Resource: "horizontalpodautoscalers.v2.autoscaling", Namespace: "x", Name: "y"}, contract.Type{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
			[]string{"kb.c1.autoscaling.v2.horizontalpodautoscalers.x.y"}, nil},
	}
	for _, c := range cases {
		f, err := parseFilter(c.f)
		if err != nil {
			t.Errorf("%v: %v", c.f, err)
			continue
		}
		if f.ref != c.ref {
			t.Errorf("%v: ref %+v, want %+v", c.f, f.ref, c.ref)
		}
		if got := f.eventSubjects(testSubjects); !slices.Equal(got, c.events) {
			t.Errorf("%v: event subjects %v, want %v", c.f, got, c.events)
		}
		if got := f.stateSubjects(testSubjects); c.stateSubject != nil && !slices.Equal(got, c.stateSubject) {
			t.Errorf("%v: state subjects %v, want %v", c.f, got, c.stateSubject)
		}
	}
	for _, bad := range []string{"", "a..b", "cm.*", "x.>"} {
		if _, err := parseFilter(Filter{Resource: bad}); !errors.Is(err, ErrBadFilter) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestDecodedObjectsKeepNoHeader decodes a message whose header is read
// as nats.go reads one off the wire: one string for the block, every value
// a piece of it. A cached object that kept a piece (its apiVersion and
// kind come from the header) would keep the whole block alive, about as
// large as the object's metadata, for as long as it is cached.
func TestDecodedObjectsKeepNoHeader(t *testing.T) {
	f := newFab(t, &memStore{})
	f.term("a")
	f.change(informers.Updated, cm("ns", "a", "u1", "11"), cm("ns", "a", "u1", "10"))
	wire := []byte("NATS/1.0\r\n")
	for k, vs := range f.msgs[1].Header {
		for _, v := range vs {
			wire = append(wire, k+": "+v+"\r\n"...)
		}
	}
	h, err := nats.DecodeHeadersMsg(append(wire, "\r\n"...))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := memClient(t).Decode(f.seqs[1], &nats.Msg{Subject: f.msgs[1].Subject, Header: h, Data: f.msgs[1].Data})
	if err != nil {
		t.Fatal(err)
	}
	inHeader := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		for _, vs := range h {
			for _, v := range vs {
				if start := uintptr(unsafe.Pointer(unsafe.StringData(v))); len(v) > 0 && p >= start && p < start+uintptr(len(v)) {
					return true
				}
			}
		}
		return false
	}
	for name, obj := range map[string]*corev1.ConfigMap{"object": ev.Object.(*corev1.ConfigMap), "oldObject": ev.OldObject.(*corev1.ConfigMap)} {
		if obj.APIVersion != "v1" || obj.Kind != "ConfigMap" {
			t.Fatalf("%s's TypeMeta %+v", name, obj.TypeMeta)
		}
		if inHeader(obj.APIVersion) || inHeader(obj.Kind) {
			t.Errorf("%s's TypeMeta %+v is a piece of the header block", name, obj.TypeMeta)
		}
	}
}

// TestDecodeTypedAsLenientAsEncodingJSON checks that typed objects, which
// JSON v2 decodes (typedJSON), still accept what encoding/json accepted
// and a producer other than the bridge might send: a name given twice
// (the last wins) and bytes that are not UTF-8 (replaced).
func TestDecodeTypedAsLenientAsEncodingJSON(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	m := f.msgs[0]
	m.Data = bytes.Replace(m.Data, []byte(`"data":{`), []byte("\"data\":{\"rv\":\"9\",\"odd\":\"\xff\","), 1)
	if !bytes.Contains(m.Data, []byte("odd")) {
		t.Fatalf("the data has no data field: %s", m.Data)
	}
	ev, err := memClient(t).Decode(1, m)
	if err != nil {
		t.Fatal(err)
	}
	data := ev.Object.(*corev1.ConfigMap).Data
	if data["rv"] != "10" || data["odd"] != "\uFFFD" {
		t.Errorf("data %q, want rv 10 (the later of two) and odd U+FFFD", data)
	}
}
