package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Scope is what a type's begin marker says the bridge publishes of it
// (contract §1): its namespaces and selectors, and its rules' match and
// ignored fields (§11, §12). Empty fields mean all, and none ignored.
type Scope struct {
	Namespaces    []string
	LabelSelector string
	FieldSelector string
	// Match is the CEL expression over object that objects in the stream
	// are true for.
	Match string
	// IgnoreFields are the paths removed from every published object:
	// compare a listed object with the stream's after removing them, and
	// without metadata.resourceVersion.
	IgnoreFields [][]string
}

// scopeOf reads a begin marker's scope.
func scopeOf(m Message) (Scope, error) {
	s := Scope{LabelSelector: m.Ext(contract.ExtScopeLabels), FieldSelector: m.Ext(contract.ExtScopeFields), Match: m.Ext(contract.ExtScopeMatch)}
	if ns := m.Ext(contract.ExtScopeNamespaces); ns != "" {
		s.Namespaces = strings.Split(ns, ",")
	}
	v := m.Ext(contract.ExtScopeIgnoreFields)
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s.IgnoreFields); err != nil {
		return Scope{}, fmt.Errorf("replay: %s %q is not a JSON array of paths: %w", contract.ExtScopeIgnoreFields, v, err)
	}
	for _, p := range s.IgnoreFields {
		if len(p) == 0 {
			return Scope{}, fmt.Errorf("replay: %s %q has an empty path", contract.ExtScopeIgnoreFields, v)
		}
	}
	return s, nil
}

// data is an object event's payload (contract §5).
type data struct {
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
	Patch     json.RawMessage `json:"patch"`
}

// hasPatch reports whether an event's data may carry a patch: a cheap test
// before it is decoded.
func hasPatch(d []byte) bool { return bytes.Contains(d, []byte(`"patch"`)) }

// checkPatch checks the patch of the event m (contract §14): it turns the
// published oldObject, when sent, into the published object, and so it
// does the object held, the one the subject's last message published,
// when it is of the same uid. prev is that message's data, nil when none
// is held. Mismatches are recorded in s.PatchMismatches.
func (s *State) checkPatch(m Message, prev []byte) {
	if !hasPatch(m.Data) {
		return
	}
	var d data
	if err := json.Unmarshal(m.Data, &d); err != nil {
		s.patchMismatch(m, "data: "+err.Error())
		return
	}
	if len(d.Patch) == 0 || string(d.Patch) == "null" {
		return
	}
	if m.Event.Type() != contract.TypeUpdated {
		s.patchMismatch(m, "a patch on a "+m.Event.Type()+" event")
		return
	}
	p, err := jsonpatch.DecodePatch(d.Patch)
	if err != nil {
		s.patchMismatch(m, "patch: "+err.Error())
		return
	}
	s.Patches++
	if len(d.OldObject) > 0 && string(d.OldObject) != "null" {
		if msg := patchGives(p, d.OldObject, d.Object); msg != "" {
			s.patchMismatch(m, "applied to oldObject: "+msg)
		}
	}
	if prev == nil {
		return
	}
	var held data
	if err := json.Unmarshal(prev, &held); err != nil || len(held.Object) == 0 {
		return
	}
	if msg := patchGives(p, held.Object, d.Object); msg != "" {
		s.patchMismatch(m, "applied to the object held: "+msg)
	}
}

// patchGives applies p to base and says how the result differs from
// want; "" when it is want.
func patchGives(p jsonpatch.Patch, base, want []byte) string {
	got, err := p.Apply(base)
	if err != nil {
		return err.Error()
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return "object: " + err.Error()
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("gives %s, not the object %s", got, want)
	}
	return ""
}

func (s *State) patchMismatch(m Message, detail string) {
	s.PatchMismatches = append(s.PatchMismatches, fmt.Sprintf("seq %d %s %s: %s", m.Seq, m.Event.Type(), m.Subject, detail))
}
