package rules

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// adapter turns the maps and lists of unstructured content into CEL values
// whose == compares the Go values in place. CEL's own maps and lists
// compare entry by entry through CEL values, allocating several for each
// nested value: object.spec != oldObject.spec on a Pod would allocate
// hundreds of times. Everything else is CEL's default adaptation.
type adapter struct{}

// NativeToValue implements types.Adapter.
func (adapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		return mapValue(v)
	case []any:
		return &listValue{l: v}
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// mapValue is a map[string]any of unstructured content as a CEL map.
// Lookups and == work on the Go map; what CEL does rarely with an object
// (iteration, conversion) is CEL's own map's. A map is a pointer: turning
// one into a ref.Val allocates nothing.
type mapValue map[string]any

var (
	_ traits.Mapper   = mapValue(nil)
	_ traits.Foldable = mapValue(nil)
	_ traits.Zeroer   = mapValue(nil)
)

// celMap is CEL's own map of the same content.
func (v mapValue) celMap() traits.Mapper { return types.NewStringInterfaceMap(adapter{}, v) }

func (v mapValue) ConvertToNative(t reflect.Type) (any, error) { return v.celMap().ConvertToNative(t) }
func (v mapValue) ConvertToType(t ref.Type) ref.Val            { return v.celMap().ConvertToType(t) }
func (v mapValue) Iterator() traits.Iterator                   { return v.celMap().Iterator() }
func (v mapValue) Type() ref.Type                              { return types.MapType }
func (v mapValue) Value() any                                  { return map[string]any(v) }
func (v mapValue) Size() ref.Val                               { return types.Int(len(v)) }
func (v mapValue) IsZeroValue() bool                           { return len(v) == 0 }

// Find implements traits.Mapper as CEL's map[string]any does.
func (v mapValue) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	e, found := v[string(k)]
	if !found {
		return nil, false
	}
	return adapter{}.NativeToValue(e), true
}

func (v mapValue) Contains(key ref.Val) ref.Val {
	_, found := v.Find(key)
	return types.Bool(found)
}

func (v mapValue) Get(key ref.Val) ref.Val {
	e, found := v.Find(key)
	if !found {
		return types.ValOrErr(e, "no such key: %v", key)
	}
	return e
}

// Fold implements traits.Foldable as CEL's map[string]any does.
func (v mapValue) Fold(f traits.Folder) {
	for k, e := range v {
		if !f.FoldEntry(k, e) {
			break
		}
	}
}

// Equal implements ref.Val: CEL's map equality, on the Go maps when both
// are unstructured content.
func (v mapValue) Equal(other ref.Val) ref.Val {
	switch o := other.(type) {
	case mapValue:
		return types.Bool(equalMaps(v, o))
	case traits.Mapper:
		if o.Size() != v.Size() {
			return types.False
		}
		for k, e := range v {
			oe, found := o.Find(types.String(k))
			if !found || types.Equal(adapter{}.NativeToValue(e), oe) == types.False {
				return types.False
			}
		}
		return types.True
	}
	return types.False
}

// listValue is a []any of unstructured content as a CEL list, as mapValue
// is a map. A slice is not a pointer: a listValue is one allocation.
type listValue struct{ l []any }

var (
	_ traits.Lister   = (*listValue)(nil)
	_ traits.Foldable = (*listValue)(nil)
	_ traits.Zeroer   = (*listValue)(nil)
)

// celList is CEL's own list of the same content.
func (v *listValue) celList() traits.Lister { return types.NewDynamicList(adapter{}, v.l) }

func (v *listValue) Add(other ref.Val) ref.Val  { return v.celList().Add(other) }
func (v *listValue) Contains(e ref.Val) ref.Val { return v.celList().Contains(e) }
func (v *listValue) ConvertToNative(t reflect.Type) (any, error) {
	return v.celList().ConvertToNative(t)
}
func (v *listValue) ConvertToType(t ref.Type) ref.Val { return v.celList().ConvertToType(t) }
func (v *listValue) Iterator() traits.Iterator        { return v.celList().Iterator() }
func (v *listValue) Type() ref.Type                   { return types.ListType }
func (v *listValue) Value() any                       { return v.l }
func (v *listValue) Size() ref.Val                    { return types.Int(len(v.l)) }
func (v *listValue) IsZeroValue() bool                { return len(v.l) == 0 }

// Get implements traits.Indexer as CEL's lists do.
func (v *listValue) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	if i < 0 || i >= len(v.l) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, len(v.l))
	}
	return adapter{}.NativeToValue(v.l[i])
}

// Fold implements traits.Foldable as CEL's lists do.
func (v *listValue) Fold(f traits.Folder) {
	for i, e := range v.l {
		if !f.FoldEntry(i, e) {
			break
		}
	}
}

// Equal implements ref.Val: CEL's list equality, on the Go slices when
// both are unstructured content.
func (v *listValue) Equal(other ref.Val) ref.Val {
	switch o := other.(type) {
	case *listValue:
		return types.Bool(equalLists(v.l, o.l))
	case traits.Lister:
		if o.Size() != v.Size() {
			return types.False
		}
		for i, e := range v.l {
			if types.Equal(adapter{}.NativeToValue(e), o.Get(types.Int(i))) == types.False {
				return types.False
			}
		}
		return types.True
	}
	return types.False
}
