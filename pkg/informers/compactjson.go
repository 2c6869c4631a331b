package informers

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// errNotCanonical is a document the walk leaves to the Unstructured
// decoding: something in it is not as encoding/json would write the
// decoded object again, so copying it would change the bytes the bridge
// has always published for it.
var errNotCanonical = errors.New("not in encoding/json's form")

// jsonTrimmer copies the JSON of an object, or of a list's items, as the
// apiserver serves a custom resource, into the compact form the
// Unstructured path writes: trimmed as trims says, and byte for byte what
// encoding/json marshals the decoded and trimmed object to. It checks
// that form as it goes (keys sorted, strings escaped and integers written
// as encoding/json does them) and fails with errNotCanonical where the
// input departs from it; whitespace between tokens it drops, as
// encoding/json writes none.
//
// Copying the apiserver's bytes works because the apiserver writes a
// custom resource with encoding/json from the same kind of tree the
// dynamic client decodes; checking costs a scan, while decoding the tree
// and encoding it again cost about four times as much (BenchmarkCompactDecoding).
type jsonTrimmer struct {
	dec   jsontext.Decoder
	in    bytes.Reader
	out   []byte
	trims TransformOptions
}

// objectHead is what the walk of a top-level object found: its type,
// where its metadata's JSON is in out, and whether it had a list's
// items.
type objectHead struct {
	apiVersion, kind string
	meta             [2]int
	items            bool
}

// where is the part of an object a walk is in: the trims apply to the
// top-level metadata and its annotations only.
type where int

const (
	inValue where = iota
	inTop
	inMetadata
	inAnnotations
)

// reset points t at the document doc.
func (t *jsonTrimmer) reset(doc []byte) {
	t.in.Reset(doc)
	// Keys must be sorted, so no name is repeated: the decoder need not
	// keep the names to check it.
	t.dec.Reset(&t.in, jsontext.AllowDuplicateNames(true))
	t.out = t.out[:0]
}

// object walks the object that comes next into out. A top-level object
// tells its head; item, if set, is called for each element of a
// top-level "items" array (a list's), whose bytes it then leaves out.
func (t *jsonTrimmer) object(at where, item func() error) (objectHead, error) {
	var head objectHead
	if _, err := t.dec.ReadToken(); err != nil {
		return head, err
	}
	t.out = append(t.out, '{')
	var last []byte
	written := 0
	for n := 0; t.dec.PeekKind() == '"'; n++ {
		name, err := t.dec.ReadValue()
		if err != nil {
			return head, err
		}
		// name is the decoder's until the next read: what the value's
		// walk needs from it is taken now.
		key := name[1 : len(name)-1]
		if bytes.IndexByte(key, '\\') >= 0 || !canonicalString(name) || (n > 0 && bytes.Compare(key, last) <= 0) {
			return head, fmt.Errorf("key %s: %w", name, errNotCanonical)
		}
		last = append(last[:0], key...)
		if t.trimmed(at, key) {
			if err := t.dec.SkipValue(); err != nil {
				return head, err
			}
			continue
		}
		role := roleOf(at, key)
		if role == roleItems && item != nil {
			if err := t.items(item); err != nil {
				return head, err
			}
			head.items = true
			continue
		}
		if written > 0 {
			t.out = append(t.out, ',')
		}
		written++
		t.out = append(append(t.out, name...), ':')
		start := len(t.out)
		if err := t.value(inside(at, key)); err != nil {
			return head, err
		}
		if err := head.note(role, t.out, start); err != nil {
			return head, err
		}
	}
	if _, err := t.dec.ReadToken(); err != nil {
		return head, err
	}
	t.out = append(t.out, '}')
	return head, nil
}

// note keeps what h needs of a member in role, whose value is in out from
// start.
func (h *objectHead) note(r role, out []byte, start int) error {
	switch r {
	case roleAPIVersion, roleKind:
		v := out[start:]
		if v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
			return fmt.Errorf("%s: %w", v, errNotCanonical)
		}
		if r == roleAPIVersion {
			h.apiVersion = string(v[1 : len(v)-1])
		} else {
			h.kind = string(v[1 : len(v)-1])
		}
	case roleMetadata:
		h.meta = [2]int{start, len(out)}
	}
	return nil
}

// role is what a top-level member is to the walk.
type role int

const (
	roleNone role = iota
	roleAPIVersion
	roleKind
	roleMetadata
	roleItems
)

// roleOf is the role of member key of an object at at.
func roleOf(at where, key []byte) role {
	if at != inTop {
		return roleNone
	}
	switch string(key) {
	case "apiVersion":
		return roleAPIVersion
	case "kind":
		return roleKind
	case "metadata":
		return roleMetadata
	case "items":
		return roleItems
	}
	return roleNone
}

// inside is where the value of member key of an object at at is.
func inside(at where, key []byte) where {
	switch {
	case at == inTop && string(key) == "metadata":
		return inMetadata
	case at == inMetadata && string(key) == "annotations":
		return inAnnotations
	}
	return inValue
}

// trimmed reports whether member key of an object at at is left out, as
// TransformOptions.Transform removes it from the Unstructured.
func (t *jsonTrimmer) trimmed(at where, key []byte) bool {
	switch at {
	case inMetadata:
		return t.trims.StripManagedFields && string(key) == "managedFields"
	case inAnnotations:
		return t.trims.StripLastApplied && string(key) == LastAppliedAnnotation
	}
	return false
}

// items calls item for each element of the array that comes next.
func (t *jsonTrimmer) items(item func() error) error {
	// The dynamic client takes any top-level "items" for a list's.
	if t.dec.PeekKind() != '[' {
		return fmt.Errorf("items not an array: %w", errNotCanonical)
	}
	if _, err := t.dec.ReadToken(); err != nil {
		return err
	}
	for t.dec.PeekKind() == '{' {
		if err := item(); err != nil {
			return err
		}
	}
	if t.dec.PeekKind() != ']' {
		return fmt.Errorf("a list's item is not an object: %w", errNotCanonical)
	}
	_, err := t.dec.ReadToken()
	return err
}

// value walks the value that comes next into out.
func (t *jsonTrimmer) value(at where) error {
	switch t.dec.PeekKind() {
	case '{':
		_, err := t.object(at, nil)
		return err
	case '[':
		if _, err := t.dec.ReadToken(); err != nil {
			return err
		}
		t.out = append(t.out, '[')
		for i := 0; t.dec.PeekKind() != ']'; i++ {
			if i > 0 {
				t.out = append(t.out, ',')
			}
			if err := t.value(inValue); err != nil {
				return err
			}
		}
		if _, err := t.dec.ReadToken(); err != nil {
			return err
		}
		t.out = append(t.out, ']')
		return nil
	}
	v, err := t.dec.ReadValue()
	if err != nil {
		return err
	}
	switch v.Kind() {
	case '"':
		if !canonicalString(v) {
			return fmt.Errorf("string %.40s: %w", v, errNotCanonical)
		}
	case '0':
		if !canonicalInteger(v) {
			return fmt.Errorf("number %s: %w", v, errNotCanonical)
		}
	}
	t.out = append(t.out, v...)
	return nil
}
