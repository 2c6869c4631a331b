package cli

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxFieldsNamed is how many differing fields a difference names.
const maxFieldsNamed = 4

// lastApplied is the annotation the bridge removes by default (contract
// §5).
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// contentDiff compares an object of the replayed state with the same
// object as the apiserver lists it, projected, as a type that ignores
// fields is compared (contract §11): without metadata.resourceVersion and
// what the bridge removes anyway (managed fields, the last-applied
// annotation, Secret values when redacted). The stream's object is taken
// as it is: an ignored field in it is a difference. It names the fields
// that differ, "" when none does.
//
// A typed object of the state went through its Go type, which drops the
// fields it does not know; the listed one goes through the same type, so
// that such fields do not count.
func contentDiff(streamObj runtime.Object, listed map[string]any) (string, error) {
	if streamObj == nil {
		return "", errors.New("no object in the replayed state")
	}
	s, err := roundTrip(streamObj, nil)
	if err != nil {
		return "", err
	}
	c, err := roundTrip(streamObj, listed)
	if err != nil {
		return "", err
	}
	withoutBridgeFields(s)
	withoutBridgeFields(c)
	redactLike(s, c)
	return strings.Join(diffFields("", s, c, nil), ", "), nil
}

// roundTrip returns content (nil: obj itself) as JSON values, decoded
// through obj's Go type unless obj is unstructured.
func roundTrip(obj runtime.Object, content map[string]any) (map[string]any, error) {
	var v any = obj
	if content != nil {
		v = content
		if _, ok := obj.(*unstructured.Unstructured); !ok {
			b, err := json.Marshal(content)
			if err != nil {
				return nil, err
			}
			typed := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
			if err := json.Unmarshal(b, typed); err != nil {
				return nil, err
			}
			v = typed
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// withoutBridgeFields removes what is never compared: the resourceVersion,
// which lags for updates of ignored fields only, and what the bridge
// removes by default.
func withoutBridgeFields(m map[string]any) {
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		return
	}
	delete(md, "resourceVersion")
	delete(md, "managedFields")
	if a, _ := md["annotations"].(map[string]any); a != nil {
		delete(a, lastApplied)
		if len(a) == 0 {
			delete(md, "annotations")
		}
	}
}

// redactLike blanks the listed Secret's values where the stream's are
// redacted (null): the bridge publishes a Secret's keys only, by default.
func redactLike(stream, listed map[string]any) {
	if stream["kind"] != "Secret" || stream["apiVersion"] != "v1" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		s, _ := stream[field].(map[string]any)
		c, _ := listed[field].(map[string]any)
		if s == nil || c == nil {
			continue
		}
		for k, v := range s {
			if _, ok := c[k]; ok && v == nil {
				c[k] = nil
			}
		}
	}
}

// diffFields appends to out the paths, below path, where a and b differ,
// up to maxFieldsNamed (then "…").
func diffFields(path string, a, b any, out []string) []string {
	if len(out) > maxFieldsNamed {
		return out
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			out = appendField(out, path)
		}
		return out
	}
	keys := make([]string, 0, len(am)+len(bm))
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		out = diffFields(p, am[k], bm[k], out)
	}
	return out
}

func appendField(out []string, path string) []string {
	if path == "" {
		path = "(the object)"
	}
	if len(out) == maxFieldsNamed {
		return append(out, "…")
	}
	return append(out, path)
}
