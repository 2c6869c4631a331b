package e2e

import (
	"encoding/json"
	"reflect"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Objects are compared as JSON values: both sides are encoded and decoded
// again, so that key order, the Go types of numbers (an unstructured
// object's int64, a decoded message's float64) and the spelling of
// numbers do not count.

// jsonValue is v as encoding/json decodes its encoding; nil when it has
// none.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// sameJSON reports whether two JSON values are equal.
func sameJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

// msgData is an object message's data, decoded.
type msgData struct {
	object, oldObject any
	hasOld            bool
}

// dataOf decodes a message's data (contract §5).
func dataOf(m replay.Message) (msgData, error) {
	var d struct {
		Object    json.RawMessage `json:"object"`
		OldObject json.RawMessage `json:"oldObject"`
	}
	if err := json.Unmarshal(m.Data, &d); err != nil {
		return msgData{}, err
	}
	var out msgData
	if err := json.Unmarshal(d.Object, &out.object); err != nil {
		return msgData{}, err
	}
	if len(d.OldObject) > 0 && string(d.OldObject) != "null" {
		out.hasOld = true
		if err := json.Unmarshal(d.OldObject, &out.oldObject); err != nil {
			return msgData{}, err
		}
	}
	return out, nil
}

func isTruncated(m replay.Message) bool { return m.Ext(contract.ExtTruncated) == "true" }

// truncatedForm is what a truncated event carries in place of obj (contract
// §1, pkg/encode's truncatedObject): apiVersion, kind, and the metadata
// that names the object and its version.
func truncatedForm(obj any) any {
	o, _ := obj.(map[string]any)
	meta, _ := o["metadata"].(map[string]any)
	short := map[string]any{"name": meta["name"], "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
	if ns, _ := meta["namespace"].(string); ns != "" {
		short["namespace"] = ns
	}
	if g, _ := meta["generation"].(float64); g != 0 {
		short["generation"] = g
	}
	return map[string]any{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": short}
}

// withResourceVersion is a copy of obj (a JSON value) whose
// metadata.resourceVersion is rv; "" removes it.
func withResourceVersion(obj any, rv string) any {
	o, ok := obj.(map[string]any)
	if !ok {
		return obj
	}
	c := make(map[string]any, len(o))
	for k, v := range o {
		c[k] = v
	}
	meta, _ := o["metadata"].(map[string]any)
	m := make(map[string]any, len(meta))
	for k, v := range meta {
		m[k] = v
	}
	if rv == "" {
		delete(m, "resourceVersion")
	} else {
		m["resourceVersion"] = rv
	}
	c["metadata"] = m
	return c
}

// resourceVersionOf is a JSON object's metadata.resourceVersion.
func resourceVersionOf(obj any) string {
	o, _ := obj.(map[string]any)
	meta, _ := o["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	return rv
}
