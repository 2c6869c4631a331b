package consume

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// AddEventHandler adds a handler for the type named as in its Filter.
func (a *Applier) AddEventHandler(resource string, h cache.ResourceEventHandler) error {
	t := a.lookup(resource)
	if t == nil {
		return fmt.Errorf("%w: no filter names %q", ErrBadOption, resource)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t.handlers = append(t.handlers, h)
	if a.synced {
		for _, obj := range t.indexer.List() {
			h.OnAdd(obj, true)
		}
	}
	return nil
}

// EndInitialList ends the initial list: every handler gets OnAdd(obj,
// true) for every object held, and from now on every change.
func (a *Applier) EndInitialList() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.synced {
		return
	}
	a.synced = true
	for _, t := range a.types {
		for _, obj := range t.indexer.List() {
			for _, h := range t.handlers {
				h.OnAdd(obj, true)
			}
		}
	}
}

// HasSynced reports whether EndInitialList was called.
func (a *Applier) HasSynced() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.synced
}

// notifier calls a type's handlers once the initial list has ended.
type notifier struct {
	a *Applier
	t *typeState
}

func (n notifier) add(obj any) {
	if n.a.synced {
		for _, h := range n.t.handlers {
			h.OnAdd(obj, false)
		}
	}
}

func (n notifier) update(old, obj any) {
	if n.a.synced {
		for _, h := range n.t.handlers {
			h.OnUpdate(old, obj)
		}
	}
}

func (n notifier) delete(obj any) {
	if n.a.synced {
		for _, h := range n.t.handlers {
			h.OnDelete(obj)
		}
	}
}
