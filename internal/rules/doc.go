// Package rules owns a resource type's publishing rules: which objects are
// in scope (match, CEL over object), which fields are never published
// (ignoreFields), which updates are published (when, CEL over object and
// oldObject), and the shape of an update's data (patch, oldObject).
// Expressions are compiled once, when the configuration is read; the
// bridge evaluates them on every change of the type.
//
// It works on objects' unstructured content (map[string]any) and imports
// nothing of this module.
package rules
