package informers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
)

// watchSerializer is the apimachinery JSON serializer of the meta types,
// as the dynamic client decodes watch events with it.
func watchSerializer() runtime.Serializer {
	meta := runtime.NewScheme()
	metav1.AddToGroupVersion(meta, schema.GroupVersion{Version: "v1"})
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, meta, meta, json.SerializerOptions{})
}

// readEvents decodes every watch event of stream as client-go's watch
// decoder reads them: frames cut by framer into a streaming decoder's
// buffer (which starts small, so long frames come in parts), each
// decoded by decoder into a WatchEvent.
func readEvents(t *testing.T, stream string, framer runtime.Framer, decoder runtime.Decoder) []metav1.WatchEvent {
	t.Helper()
	frames := framer.NewFrameReader(io.NopCloser(strings.NewReader(stream)))
	dec := streaming.NewDecoder(frames, decoder)
	var out []metav1.WatchEvent
	for {
		var ev metav1.WatchEvent
		res, _, err := dec.Decode(nil, &ev)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		if res != &ev {
			t.Fatalf("decoded into %T, not the WatchEvent", res)
		}
		// The object's bytes are the buffer's until the next frame: kept
		// as the watch decoder uses them, before the next read.
		ev.Object.Raw = bytes.Clone(ev.Object.Raw)
		out = append(out, ev)
	}
}

// The framer and the event decoder read a watch stream into the events
// client-go's JSON framer and serializer read from it.
func TestWatchEventsAsClientGoReadsThem(t *testing.T) {
	long := `{"type":"MODIFIED","object":{"apiVersion":"example.com/v1","data":{"k":"` + strings.Repeat("x", 5000) + `"},"kind":"Widget","metadata":{"name":"w"}}}`
	stream := `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","resourceVersion":"1"}}}` + "\n" +
		long + "\n" +
		`  {"object" : {"kind":"Widget","metadata":{"name":"b"}} , "type" : "DELETED"}` + "\n" +
		`{"type":"BOOKMARK","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"9"}}}` +
		`{"type":"ERROR","object":{"apiVersion":"v1","code":410,"kind":"Status","metadata":{},"reason":"Expired","status":"Failure"}}` +
		`{"type":"ADDED","object":{"kind":"Widget"},"extra":1}` + "\n"
	slow := watchSerializer()
	want := readEvents(t, stream, json.Framer, slow)
	got := readEvents(t, stream, jsonFramer{}, newWatchEventDecoder(slow))
	if len(got) != len(want) || len(want) != 6 {
		t.Fatalf("read %d events, client-go %d; want 6", len(got), len(want))
	}
	for i := range want {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Object.Raw, want[i].Object.Raw) {
			t.Errorf("event %d: %s %s\nwant %s %s", i, got[i].Type, got[i].Object.Raw, want[i].Type, want[i].Object.Raw)
		}
	}
}

// split takes the frames it can read whole, and leaves the rest to the
// slow decoder.
func TestSplitWatchEvents(t *testing.T) {
	for frame, ok := range map[string]bool{
		`{"type":"ADDED","object":{"a":1}}`:         true,
		`{"object":[1, 2],"type":"ADDED"}`:          true,
		`{"type":"ADDED"}`:                          false,
		`{"object":{}}`:                             false,
		`{"type":1,"object":{}}`:                    false,
		`{"type":"ADDED","object":{},"extra":true}`: false,
		`{"type":"ADDED","object":{}} {}`:           false,
		`{"type":"ADDED","object":{"a":}}`:          false,
		`[{"type":"ADDED","object":{}}]`:            false,
	} {
		var s splitter
		typ, object, split := s.split([]byte(frame))
		if split != ok {
			t.Errorf("%s: split %v, want %v", frame, split, ok)
		}
		if split && (typ != "ADDED" || !bytes.HasPrefix(object, []byte(frame[strings.Index(frame, `"object":`)+9:][:1]))) {
			t.Errorf("%s: split into %q %s", frame, typ, object)
		}
	}
}

// A watch cut within an event ends as client-go's framer ends it: with
// io.ErrUnexpectedEOF itself, which the watch takes for a quiet end
// rather than an error event.
func TestWatchCutWithinAnEvent(t *testing.T) {
	stream := `{"type":"ADDED","object":{}}` + "\n" + `{"type":"ADDED","obj`
	for name, framer := range map[string]runtime.Framer{"client-go": json.Framer, "jsonFramer": jsonFramer{}} {
		frames := framer.NewFrameReader(io.NopCloser(strings.NewReader(stream)))
		buf := make([]byte, 1024)
		if _, err := frames.Read(buf); err != nil {
			t.Fatalf("%s: first frame: %v", name, err)
		}
		if _, err := frames.Read(buf); err != io.ErrUnexpectedEOF {
			t.Errorf("%s: the cut frame read with %v, want io.ErrUnexpectedEOF", name, err)
		}
	}
}
