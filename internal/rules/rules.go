package rules

import "errors"

// Spec is one resource type's rules as the configuration file gives them.
type Spec struct {
	// Match is a CEL expression over object; empty: every object is in scope.
	Match string
	// IgnoreFields are paths of keys removed from every published object.
	IgnoreFields [][]string
	// When is a CEL expression over object and oldObject, for updates;
	// empty: every update is published.
	When string
	// Patch adds the RFC 6902 JSON Patch from oldObject to object to an
	// update's data.
	Patch bool
	// OldObject keeps oldObject in an update's data (the file's default).
	OldObject bool
}

// Rules is a compiled Spec. A nil *Rules has no rules: every object is in
// scope, every update is published, nothing is projected.
type Rules struct {
	spec Spec
}

// Option configures Compile.
type Option func(*options) error

type options struct {
	costLimit uint64
}

// DefaultCostLimit is the CEL runtime cost one evaluation may use.
const DefaultCostLimit uint64 = 1_000_000

// WithCostLimit sets the runtime cost limit of one evaluation.
func WithCostLimit(limit uint64) Option {
	return func(o *options) error { o.costLimit = limit; return nil }
}

// Compile compiles spec. STUB: replaced by the real implementation.
func Compile(spec Spec, opts ...Option) (*Rules, error) {
	return nil, errors.New("rules: not implemented")
}

// Spec is what r was compiled from.
func (r *Rules) Spec() Spec {
	if r == nil {
		return Spec{OldObject: true}
	}
	return r.spec
}

// Project removes the ignored fields from obj in place.
func (r *Rules) Project(obj map[string]any) {}

// Matches reports whether obj is in scope.
func (r *Rules) Matches(obj map[string]any) (bool, error) { return true, nil }

// Publishes reports whether an update from old to obj is published.
func (r *Rules) Publishes(obj, old map[string]any) (bool, error) { return true, nil }

// OnlyResourceVersionDiffers reports whether obj and old differ in nothing
// but metadata.resourceVersion.
func OnlyResourceVersionDiffers(obj, old map[string]any) bool { return false }
