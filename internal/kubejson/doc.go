// Package kubejson writes Kubernetes objects as JSON, byte for byte what
// encoding/json writes for them with SetEscapeHTML(false), without the
// allocations encoding/json makes on the way: a copy of every map key and
// value it iterates, a fresh slice from every MarshalJSON of metav1.Time,
// resource.Quantity and intstr.IntOrString, and a second pass over that
// slice to compact it.
//
// It compiles one encoder per Go type, as encoding/json does. The encoders
// read values through unsafe pointers at offsets reflection found once,
// not through reflect.Value, whose every Field and Index call checks again
// what the compiled encoder already knows; strings are scanned eight bytes
// at a time for the few bytes that need escaping. It hands every value it
// does not know to write exactly (a type with its own MarshalJSON or
// MarshalText other than the three above, a struct whose fields collide by
// name, a ",string" field, a map with non-string keys) to encoding/json
// itself. Any error, including encoding/json's own, makes Append fail; the
// caller then encodes the whole object with encoding/json, so the output,
// or the error, is always encoding/json's. The differential tests and fuzz
// targets in this package hold it to that.
package kubejson
