// Package rules owns a resource type's publishing rules: which objects are
// in scope (match, CEL over object), which fields are never published
// (ignoreFields), which updates are published (when, CEL over object and
// oldObject), and the shape of an update's data (patch, oldObject).
// Expressions are compiled once, when the configuration is read; the
// bridge evaluates them on every change of the type.
//
// Expressions are cel-go's, in the environment of Kubernetes' admission
// policies (k8s.io/apiserver/pkg/cel/library and cel-go's extensions, as
// its base environment has them at 1.37, less the authorizer), so that
// one reads as in a ValidatingAdmissionPolicy. An evaluation fails open:
// on an error, or past the cost limit, the answer is true, with the error.
// The cost is counted as an expression runs only where CEL's estimate
// over the largest object the API server takes can exceed the limit.
//
// It works on objects' unstructured content (map[string]any), adapted to
// CEL so that == compares the Go values in place (adapter.go), and imports
// nothing of this module.
package rules
