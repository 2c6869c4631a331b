package rules

import (
	"fmt"
	"slices"
	"strings"
)

// Project removes the ignored fields from obj in place. A path whose keys
// are not all there, or that leads through something other than a map,
// removes nothing.
func (r *Rules) Project(obj map[string]any) {
	if r == nil {
		return
	}
	for _, path := range r.spec.IgnoreFields {
		remove(obj, path)
	}
}

func remove(m map[string]any, path []string) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// identity are the fields that say which object, and which version of it,
// an event is about: a path removing one of them, or what holds one, is
// refused.
var identity = [][]string{
	{"apiVersion"}, {"kind"},
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"}, {"metadata", "resourceVersion"},
}

// checkPaths reports every empty path, every empty key of paths, and
// every path that would remove part of an object's identity.
func checkPaths(paths [][]string) []error {
	var errs []error
	for i, path := range paths {
		field := fmt.Sprintf("ignoreFields[%d]", i)
		if msg := checkPath(path); msg != "" {
			errs = append(errs, &FieldError{Field: field, Msg: msg})
		}
	}
	return errs
}

// checkPath is what is wrong with path, "" if nothing is.
func checkPath(path []string) string {
	if len(path) == 0 {
		return "empty path: name at least one key, e.g. [status]"
	}
	for j, k := range path {
		if k == "" {
			return fmt.Sprintf("key %d of %q is empty", j+1, path)
		}
	}
	for _, id := range identity {
		if len(path) <= len(id) && slices.Equal(path, id[:len(path)]) {
			return fmt.Sprintf("%q would remove %s, which events need", path, strings.Join(id, "."))
		}
	}
	return ""
}

// OnlyResourceVersionDiffers reports whether obj and old are equal but for
// metadata.resourceVersion, as unstructured content compares (numbers by
// value): the resourceVersion may differ, be equal, or be missing from
// either. Neither map is changed nor copied.
func OnlyResourceVersionDiffers(obj, old map[string]any) bool {
	if len(obj) != len(old) {
		return false
	}
	for k, v := range obj {
		ov, ok := old[k]
		if !ok {
			return false
		}
		if k == "metadata" {
			if !equalBut(v, ov, "resourceVersion") {
				return false
			}
		} else if !equal(v, ov) {
			return false
		}
	}
	return true
}

// equalBut reports whether a and b are equal maps but for key skip, or
// equal values that are not both maps.
func equalBut(a, b any, skip string) bool {
	x, ok1 := a.(map[string]any)
	y, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return equal(a, b)
	}
	n := 0
	for k, vx := range x {
		if k == skip {
			continue
		}
		vy, ok := y[k]
		if !ok || !equal(vx, vy) {
			return false
		}
		n++
	}
	_, skipped := y[skip]
	if skipped {
		n++
	}
	return n == len(y)
}
