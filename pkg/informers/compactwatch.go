package informers

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch's JSON is read three times by client-go's JSON framing and
// watch event decoding (the framer's encoding/json decoder, the event's
// decoding, the copy of its object); on a custom resource's churn that
// took as much of the bridge's CPU as decoding the objects
// (docs/memory.md, custom resources). These read it with jsontext
// instead: one scan to cut each frame, one to split its event.

// jsonFramer cuts a watch's JSON stream into one frame per event, as
// client-go's JSON framer does.
type jsonFramer struct{}

func (jsonFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	// Invalid UTF-8 and repeated names are left to the decoding of the
	// event, which takes the Unstructured way for them, as before.
	return &jsonFrameReader{r: r, dec: jsontext.NewDecoder(r, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))}
}

// NewFrameWriter writes JSON values one after another: frames need no
// more. The REST client sends no watch.
func (jsonFramer) NewFrameWriter(w io.Writer) io.Writer { return w }

type jsonFrameReader struct {
	r   io.ReadCloser
	dec *jsontext.Decoder
	// remaining is the part of the current frame that did not fit.
	remaining []byte
}

// Read reads the next frame into data, or as much of it as fits, with
// io.ErrShortBuffer (the streaming decoder then grows its buffer and
// reads on).
func (f *jsonFrameReader) Read(data []byte) (int, error) {
	frame := f.remaining
	if len(frame) == 0 {
		v, err := f.dec.ReadValue()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// A watch cut within an event: as client-go's framer says it,
			// for its watch to end it quietly as before (jsontext wraps it
			// in a syntax error).
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
		frame = v
	}
	n := copy(data, frame)
	if n < len(frame) {
		// The decoder's buffer is its own until the next ReadValue, which
		// comes only once remaining is read.
		f.remaining = frame[n:]
		return n, io.ErrShortBuffer
	}
	f.remaining = nil
	return n, nil
}

func (f *jsonFrameReader) Close() error { return f.r.Close() }

// watchEventDecoder decodes a frame into a metav1.WatchEvent, whose
// object's JSON is the frame's own bytes rather than a copy: client-go's
// watch decoder (rest/watch.Decoder) decodes the object before it reads
// the next frame into the same buffer. What it cannot split, the
// apimachinery JSON serializer (slow) decodes, with the errors it gives.
type watchEventDecoder struct {
	slow runtime.Serializer
	decs sync.Pool
}

var _ runtime.Serializer = (*watchEventDecoder)(nil)

func newWatchEventDecoder(slow runtime.Serializer) *watchEventDecoder {
	return &watchEventDecoder{slow: slow, decs: sync.Pool{New: func() any { return new(splitter) }}}
}

// splitter reads one frame.
type splitter struct {
	in  bytes.Reader
	dec jsontext.Decoder
}

func (w *watchEventDecoder) Decode(frame []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if ev, ok := into.(*metav1.WatchEvent); ok {
		s := w.decs.Get().(*splitter)
		typ, object, ok := s.split(frame)
		w.decs.Put(s)
		if ok {
			ev.Type, ev.Object = typ, runtime.RawExtension{Raw: object}
			return ev, nil, nil
		}
	}
	return w.slow.Decode(frame, defaults, into)
}

// split reads frame as {"type": …, "object": …}, in either order and
// nothing else, and returns the type and the object's bytes in frame.
func (s *splitter) split(frame []byte) (typ string, object []byte, ok bool) {
	s.in.Reset(frame)
	s.dec.Reset(&s.in, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", nil, false
	}
	for s.dec.PeekKind() == '"' {
		name, err := s.dec.ReadToken()
		if err != nil {
			return "", nil, false
		}
		switch name.String() {
		case "type":
			v, err := s.dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return "", nil, false
			}
			typ = eventType(v.String())
		case "object":
			start := s.dec.InputOffset()
			if err := s.dec.SkipValue(); err != nil {
				return "", nil, false
			}
			object = bytes.TrimSpace(frame[start:s.dec.InputOffset()])
			// The offset before a value may be before the colon.
			object = bytes.TrimSpace(bytes.TrimPrefix(object, []byte(":")))
		default:
			return "", nil, false
		}
	}
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '}' || typ == "" || object == nil {
		return "", nil, false
	}
	if _, err := s.dec.ReadToken(); err != io.EOF {
		return "", nil, false
	}
	return typ, object, true
}

// eventType is t, as one of the watch package's constants when it is one
// (no string kept per event).
func eventType(t string) string {
	for _, known := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if t == string(known) {
			return string(known)
		}
	}
	return t
}

// Encode is the slow serializer's.
func (w *watchEventDecoder) Encode(obj runtime.Object, out io.Writer) error {
	return w.slow.Encode(obj, out)
}

// Identifier names the decoder for the REST client's caches.
func (w *watchEventDecoder) Identifier() runtime.Identifier { return "kubebridge-watch-event-json" }
