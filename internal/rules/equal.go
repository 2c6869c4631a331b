package rules

import (
	"github.com/google/cel-go/common/types"
)

// equal reports whether a and b, values of unstructured content, are equal
// as CEL's == has them: maps and lists entry by entry, numbers by value
// across int and double, null only to null. It allocates nothing for the
// types unstructured content holds (maps, lists, strings, int64, float64,
// bools, nil); any other value is compared as CEL values.
func equal(a, b any) bool {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			return equalMaps(x, y)
		}
	case []any:
		if y, ok := b.([]any); ok {
			return equalLists(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return types.Int(x).Equal(types.Double(y)) == types.True
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case int64:
			return types.Double(x).Equal(types.Int(y)) == types.True
		}
	case nil:
		if b == nil {
			return true
		}
	default:
		return celEqual(a, b)
	}
	// a is of a type of unstructured content, and b not of a comparable one.
	return !isUnstructured(b) && celEqual(a, b)
}

// celEqual is CEL's ==.
func celEqual(a, b any) bool {
	return types.Equal(adapter{}.NativeToValue(a), adapter{}.NativeToValue(b)) == types.True
}

// isUnstructured reports whether v is of a type unstructured content holds,
// which equal compares itself.
func isUnstructured(v any) bool {
	switch v.(type) {
	case map[string]any, []any, string, bool, int64, float64, nil:
		return true
	}
	return false
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !equal(va, vb) {
			return false
		}
	}
	return true
}

func equalLists(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
