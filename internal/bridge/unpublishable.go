package bridge

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// unpublishable remembers, per object, the resourceVersion that could not be
// published in any form, so that it is logged and counted once, not at
// every snapshot. An entry goes when a later state of the object is
// published or the object is deleted.
type unpublishable struct {
	mu    sync.Mutex
	byUID map[types.UID]string
}

func newUnpublishable() *unpublishable { return &unpublishable{byUID: map[types.UID]string{}} }

// record reports whether this resourceVersion of c's object is new to the
// list.
func (u *unpublishable) record(c informers.Change) bool {
	m, err := meta.Accessor(c.Object)
	if err != nil {
		return true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	uid, rv := m.GetUID(), m.GetResourceVersion()
	if u.byUID[uid] == rv {
		return false
	}
	u.byUID[uid] = rv
	return true
}

// forget is told that a change of c's object was published.
func (u *unpublishable) forget(c informers.Change) {
	if c.Object == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.byUID) == 0 {
		return
	}
	delete(u.byUID, uidOf(c.Object))
}

func objectName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName()
	}
	return m.GetName()
}

func resourceVersionOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func uidOf(obj runtime.Object) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}
