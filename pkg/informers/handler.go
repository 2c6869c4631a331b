package informers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// handler turns the informers' callbacks into Changes for the queue: the
// initial list left to the start-up snapshot, relist noise dropped, a uid
// change split in two, tombstones unwrapped.
func (s *Source) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			// The start-up snapshot reports the initial list.
			if isInInitialList {
				return
			}
			if o, ok := s.object(obj); ok {
				s.offer(Change{Verb: Added, Object: o})
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok := s.object(newObj)
			if !ok {
				return
			}
			old, ok := s.object(oldObj)
			if !ok {
				return
			}
			oldMeta, newMeta := metaOf(old), metaOf(o)
			// A relist that finds a name deleted and created again while
			// the watch was down reports it as one update. It is two
			// objects: the old one is gone (its last state is all the cache
			// had), the new one is added.
			if oldMeta.GetUID() != newMeta.GetUID() {
				s.offer(Change{Verb: Deleted, Object: old, FinalStateUnknown: true}, Change{Verb: Added, Object: o})
				return
			}
			// Equal versions are resync or relist noise, not a change.
			if newMeta.GetResourceVersion() == oldMeta.GetResourceVersion() {
				return
			}
			s.offer(Change{Verb: Updated, Object: o, OldObject: old})
		},
		DeleteFunc: func(obj interface{}) {
			c := Change{Verb: Deleted}
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				c.FinalStateUnknown = true
				obj = tomb.Obj
			}
			if o, ok := s.object(obj); ok {
				c.Object = o
				s.offer(c)
			}
		},
	}
}

func (s *Source) object(obj interface{}) (runtime.Object, bool) {
	o, ok := obj.(runtime.Object)
	if !ok {
		s.logger.Error(nil, "Informer delivered a value that is not an object; skipped", "type", fmt.Sprintf("%T", obj))
		return nil, false
	}
	if _, err := meta.Accessor(o); err != nil {
		s.logger.Error(err, "Informer delivered an object without metadata; skipped")
		return nil, false
	}
	return o, true
}

// offer hands changes to the queue. Several changes offered together (the
// two halves of a uid change) reach the queue in order.
func (s *Source) offer(changes ...Change) {
	for _, c := range changes {
		c.Resource = s.Resource
		c.ObservedAt = s.now()
		s.observer.Observed(s.Resource, c.Verb)
		if l := s.logger.V(6); l.Enabled() {
			m := metaOf(c.Object)
			l.Info("Change observed", "verb", c.Verb, "object", cache.NewObjectName(m.GetNamespace(), m.GetName()).String(),
				"resourceVersion", m.GetResourceVersion(), "finalStateUnknown", c.FinalStateUnknown)
		}
		s.queue.Add(c)
	}
}

// metaOf returns obj's metadata; object has already checked that it has one.
func metaOf(obj runtime.Object) metav1.Object {
	m, _ := meta.Accessor(obj)
	return m
}
