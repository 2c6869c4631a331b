package encode

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// writeData writes an object event's data (contract §5): the object, and
// for an update the old object and the patch from it, as the type's
// UpdateData says.
//
// The payload is assembled by hand, streaming each object into one
// buffer: marshalling a struct of json.RawMessage would scan both objects
// again, and json.Marshal would copy each of them once more.
func (e *Encoder) writeData(buf *bytes.Buffer, c informers.Change, apiVersion string, truncate bool) error {
	kind := c.Resource.Kind
	shape := e.Updates[c.Resource]
	buf.WriteString(`{"object":`)
	objStart := buf.Len()
	if err := writeObject(buf, c.Object, apiVersion, kind, truncate); err != nil {
		return err
	}
	objEnd := buf.Len()
	objects := int64(1)
	var oldJSON []byte
	if c.OldObject != nil {
		objects = 2
		old := buf
		if shape.OmitOldObject {
			old = new(bytes.Buffer)
		} else {
			buf.WriteString(`,"oldObject":`)
		}
		oldStart := old.Len()
		if err := writeObject(old, c.OldObject, apiVersion, kind, truncate); err != nil {
			return fmt.Errorf("old object: %w", err)
		}
		oldJSON = old.Bytes()[oldStart:]
	}
	if shape.Patch && oldJSON != nil && !truncate {
		patch, err := diff(oldJSON, buf.Bytes()[objStart:objEnd])
		if err != nil {
			return fmt.Errorf("patch: %w", err)
		}
		buf.WriteString(`,"patch":`)
		buf.Write(patch)
	}
	buf.WriteByte('}')
	e.lastObjectSize.Store(int64(buf.Len()) / objects)
	return nil
}

// diff is the RFC 6902 JSON Patch that turns the JSON document from into
// to, as a JSON array.
func diff(from, to []byte) ([]byte, error) {
	ops, err := jsonpatch.CreatePatch(from, to)
	if err != nil {
		return nil, err
	}
	if ops == nil {
		ops = []jsonpatch.Operation{}
	}
	return json.Marshal(ops)
}
