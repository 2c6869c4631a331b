package rules

import "fmt"

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

// checkPaths reports every empty path and every empty key of paths.
func checkPaths(paths [][]string) []error {
	var errs []error
	for i, path := range paths {
		field := fmt.Sprintf("ignoreFields[%d]", i)
		if len(path) == 0 {
			errs = append(errs, &FieldError{Field: field, Msg: "empty path: name at least one key, e.g. [status]"})
			continue
		}
		for j, k := range path {
			if k == "" {
				errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf("key %d of %q is empty", j+1, path)})
				break
			}
		}
	}
	return errs
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
