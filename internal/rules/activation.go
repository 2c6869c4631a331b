package rules

import (
	"sync"

	"github.com/google/cel-go/interpreter"
)

// activation binds object and oldObject for one evaluation. It is reused
// through activations instead of building a map[string]any per
// evaluation: an evaluation then allocates nothing for its variables.
type activation struct {
	object, oldObject map[string]any
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varObject:
		return a.object, a.object != nil
	case varOldObject:
		return a.oldObject, a.oldObject != nil
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// activations is a pool of activations, held by each program (no package
// state); an activation keeps nothing between uses.
type activations struct{ pool sync.Pool }

func (p *activations) get(obj, old map[string]any) *activation {
	a, _ := p.pool.Get().(*activation)
	if a == nil {
		a = new(activation)
	}
	a.object, a.oldObject = obj, old
	return a
}

// put returns a to the pool, without references to the objects it bound.
func (p *activations) put(a *activation) {
	a.object, a.oldObject = nil, nil
	p.pool.Put(a)
}
