package informers

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// AppendObjectJSON appends obj's JSON, as encoding/json writes it with
// HTML escaping off, with apiVersion and kind first when obj's own
// TypeMeta is empty: typed objects from an informer cache have an empty
// TypeMeta, and setting it on the cached object would mutate the cache,
// so the fields are written ahead of the object's own. A consumer's
// object is what kubectl would show, with its "<" and "&" as they are.
//
// The bridge writes a typed object's JSON with it twice: into its cache
// (the Compact form of a built-in type) and, for a typed cache, into each
// event; one function keeps the two byte for byte the same.
func AppendObjectJSON(buf *bytes.Buffer, obj runtime.Object, apiVersion, kind string) error {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return AppendJSON(buf, obj)
	}
	start := buf.Len()
	buf.WriteString(`{"apiVersion":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), apiVersion))
	buf.WriteString(`,"kind":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), kind))
	buf.WriteByte(',')
	at := buf.Len()
	if err := AppendJSON(buf, obj); err != nil {
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

// AppendJSON appends v's JSON as encoding/json writes it with HTML
// escaping off, without the encoder's newline.
func AppendJSON(buf *bytes.Buffer, v any) error {
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
