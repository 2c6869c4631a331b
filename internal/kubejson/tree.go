package kubejson

import (
	"errors"
	"strconv"
)

// errTreeValue ends an encoding of unstructured content holding a value
// of a type JSON decoding does not make; encoding/json writes those.
var errTreeValue = errors.New("kubejson: unstructured content holds a value of another type")

// appendTree writes unstructured content (what decoding JSON into an
// interface makes, with integers as int64) as encoding/json writes it with
// HTML escaping on, as Unstructured's own encoding does.
func (s *state) appendTree(x any) error {
	switch x := x.(type) {
	case nil:
		s.buf = append(s.buf, "null"...)
	case string:
		s.buf = appendString(s.buf, x, true)
	case bool:
		s.buf = strconv.AppendBool(s.buf, x)
	case int64:
		s.buf = strconv.AppendInt(s.buf, x, 10)
	case int:
		s.buf = strconv.AppendInt(s.buf, int64(x), 10)
	case int32:
		s.buf = strconv.AppendInt(s.buf, int64(x), 10)
	case float64:
		return s.appendFloat(x, 64)
	case map[string]any:
		return s.appendTreeMap(x)
	case []any:
		return s.appendTreeSlice(x)
	default:
		return errTreeValue
	}
	return nil
}

func (s *state) appendTreeMap(m map[string]any) error {
	if ok, err := s.open(m == nil); !ok {
		return err
	}
	defer s.leave()
	keys := sortedKeys(s, m)
	defer s.giveKeys(keys)
	s.buf = append(s.buf, '{')
	for i, k := range keys {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		s.buf = appendString(s.buf, k, true)
		s.buf = append(s.buf, ':')
		if err := s.appendTree(m[k]); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, '}')
	return nil
}

func (s *state) appendTreeSlice(items []any) error {
	if ok, err := s.open(items == nil); !ok {
		return err
	}
	defer s.leave()
	s.buf = append(s.buf, '[')
	for i, item := range items {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		if err := s.appendTree(item); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, ']')
	return nil
}
