package kubejson

import (
	"reflect"
	"strings"
	"unicode"
)

// field is one JSON member of a struct, found as encoding/json finds it.
type field struct {
	name string
	// index leads from the struct to the field through embedded structs;
	// a nil embedded pointer on the way leaves the field out.
	index     []int
	typ       reflect.Type
	omitEmpty bool
	omitZero  bool
}

// structFields lists t's JSON members in encoding/json's order, following
// its rules for tags and embedded structs. It reports false when t needs
// the rules it does not follow: two members of one name (which
// encoding/json settles by depth and tags), a ",string" option, or an
// embedded pointer to an unexported struct.
func structFields(t reflect.Type) ([]field, bool) {
	var fields []field
	names := map[string]bool{}
	ok := collectFields(t, nil, &fields, names, map[reflect.Type]bool{})
	return fields, ok
}

func collectFields(t reflect.Type, at []int, fields *[]field, names map[string]bool, onPath map[reflect.Type]bool) bool {
	if onPath[t] {
		// A struct embedded in itself through a pointer: encoding/json
		// visits each type once; leave that rule to it.
		return false
	}
	onPath[t] = true
	defer delete(onPath, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !sf.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
			if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
				return false
			}
		} else if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, options, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = ""
		}
		index := append(append([]int(nil), at...), i)
		ft := sf.Type
		if ft.Name() == "" && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if hasOption(options, "string") {
			return false
		}
		if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
			if !collectFields(ft, index, fields, names, onPath) {
				return false
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if names[name] {
			return false
		}
		names[name] = true
		*fields = append(*fields, field{
			name:      name,
			index:     index,
			typ:       sf.Type,
			omitEmpty: hasOption(options, "omitempty"),
			omitZero:  hasOption(options, "omitzero"),
		})
	}
	return true
}

func hasOption(options, name string) bool {
	for options != "" {
		var o string
		o, options, _ = strings.Cut(options, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validTagName is encoding/json's rule for a name in a json tag; a tag
// with any other name is ignored, and the field keeps its Go name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
