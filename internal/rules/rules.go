package rules

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

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
//
// Its methods may be called from several goroutines at once.
type Rules struct {
	spec  Spec
	match *program
	when  *program
}

// Option configures Compile.
type Option func(*options) error

type options struct {
	costLimit uint64
}

// DefaultCostLimit is the CEL runtime cost one evaluation may use. Cost is
// counted as Kubernetes counts it for admission policies (about one unit
// per value visited or operation); comparing two Pods' specs costs a few
// units, walking every element of a list of 10,000 items some 10,000s.
const DefaultCostLimit uint64 = 1_000_000

// WithCostLimit sets the runtime cost limit of one evaluation.
func WithCostLimit(limit uint64) Option {
	return func(o *options) error {
		if limit == 0 {
			return fmt.Errorf("%w: cost limit 0: no expression could run", ErrInvalid)
		}
		o.costLimit = limit
		return nil
	}
}

// ErrInvalid is matched by every error Compile returns for a Spec.
var ErrInvalid = errors.New("invalid rules")

// ErrEval is matched by every error Matches and Publishes return: the
// expression failed on this object (or ran over its cost limit), and the
// answer given is true.
var ErrEval = errors.New("rule evaluation failed")

// Compile checks spec and compiles its expressions, once. Every problem is
// returned: an error that errors.Join made when there are several, each a
// *FieldError naming the field (match, when, ignoreFields[i], oldObject)
// and, for an expression, the line and column in it.
func Compile(spec Spec, opts ...Option) (*Rules, error) {
	o := options{costLimit: DefaultCostLimit}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	r := &Rules{spec: spec}
	var errs []error
	var err error
	if spec.Match != "" {
		if r.match, err = compile("match", spec.Match, o, varObject); err != nil {
			errs = append(errs, err)
		}
	}
	if spec.When != "" {
		if r.when, err = compile("when", spec.When, o, varObject, varOldObject); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, checkPaths(spec.IgnoreFields)...)
	if !spec.OldObject && !spec.Patch {
		errs = append(errs, &FieldError{Field: "oldObject", Msg: "false needs patch: true, or an update would carry neither the old object nor how it changed"})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// FieldError is a problem with one field of a Spec.
type FieldError struct {
	// Field is match, when, ignoreFields[i] or oldObject.
	Field string
	// Line and Column locate the problem in an expression, from 1; 0 when
	// it has no position.
	Line, Column int
	Msg          string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %d:%d: %s", e.Field, e.Line, e.Column, e.Msg)
	}
	return e.Field + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Spec is what r was compiled from.
func (r *Rules) Spec() Spec {
	if r == nil {
		return Spec{OldObject: true}
	}
	return r.spec
}

// Matches reports whether obj is in scope. When match fails on obj, it
// returns true and an error matching ErrEval.
func (r *Rules) Matches(obj map[string]any) (bool, error) {
	if r == nil || r.match == nil {
		return true, nil
	}
	return r.match.eval(obj, nil)
}

// Publishes reports whether an update from old to obj is published. When
// when fails on them, it returns true and an error matching ErrEval.
func (r *Rules) Publishes(obj, old map[string]any) (bool, error) {
	if r == nil || r.when == nil {
		return true, nil
	}
	return r.when.eval(obj, old)
}

// program is one compiled expression.
type program struct {
	field string
	prg   cel.Program
	// limited: its cost is counted as it runs, and it stops at the limit.
	// Else no object can make it cost more (compileWith).
	limited bool
	acts    activations
}

func (p *program) eval(obj, old map[string]any) (bool, error) {
	a := p.acts.get(obj, old)
	out, _, err := p.prg.Eval(a)
	p.acts.put(a)
	if err != nil {
		return true, fmt.Errorf("%w: %s: %v", ErrEval, p.field, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return true, fmt.Errorf("%w: %s: result is %s, not bool", ErrEval, p.field, out.Type())
	}
	return bool(b), nil
}
