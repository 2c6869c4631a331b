package encode

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// truncatedObject is what is sent in place of an object too large to publish:
// enough for a consumer to know the object exists and to fetch it.
type truncatedObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   truncatedMetadata `json:"metadata"`
}

type truncatedMetadata struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace,omitempty"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Generation      int64  `json:"generation,omitempty"`
}

// writeObject writes obj's JSON with apiVersion and kind filled in: typed
// objects from an informer cache have an empty TypeMeta, and setting it on
// the cached object would mutate the cache, so the fields are inserted
// into the JSON ahead of the object's own.
func writeObject(buf *bytes.Buffer, obj runtime.Object, apiVersion, kind string, truncate bool) error {
	if truncate {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		return appendJSON(buf, truncatedObject{APIVersion: apiVersion, Kind: kind, Metadata: truncatedMetadata{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: string(m.GetUID()),
			ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		}})
	}
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		if r, ok := obj.(rawJSON); ok {
			// A dynamic informer's compact object holds the JSON that
			// encoding/json would write for it: copied, not scanned again.
			buf.WriteString(r.RawJSON())
			return nil
		}
		return appendJSON(buf, obj)
	}
	start := buf.Len()
	buf.WriteString(`{"apiVersion":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), apiVersion))
	buf.WriteString(`,"kind":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), kind))
	buf.WriteByte(',')
	at := buf.Len()
	if err := appendJSON(buf, obj); err != nil {
		buf.Truncate(start)
		return err
	}
	// Drop the object's own opening brace (and the comma before it when
	// the object is empty) by moving the rest down in place.
	b := buf.Bytes()
	if len(b)-at < 2 || b[at] != '{' {
		buf.Truncate(start)
		return fmt.Errorf("object did not marshal to a JSON object")
	}
	cut, from := at, at+1
	if b[from] == '}' {
		cut--
	}
	n := copy(b[cut:], b[from:])
	buf.Truncate(cut + n)
	return nil
}

// rawJSON is an object that holds its own JSON, with its apiVersion and
// kind (informers.Compact).
type rawJSON interface {
	RawJSON() string
}

// appendJSON appends v's JSON as encoding/json writes it with HTML
// escaping off (a consumer's object is what kubectl would show, with its
// "<" and "&" as they are).
func appendJSON(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Truncate(start)
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// appendJSONString appends s as a JSON string. Discovery names are plain
// ASCII, which is appended as is; anything else goes through encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
