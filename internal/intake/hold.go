package intake

import (
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Hold keeps res's changes (merged per object as usual) from being handed
// on until Release. Call it before the type's informer delivers anything.
func (in *Intake) Hold(res *informers.Resource) {
	in.mu.Lock()
	in.held[res] = true
	in.mu.Unlock()
}

// Release puts the missed deletes of res in front of whatever each object
// has waiting, and lets res's changes go. A missed delete is left out when
// the object already has a change of that uid waiting (its live delete).
func (in *Intake) Release(res *informers.Resource, deletes []informers.Change) {
	in.mu.Lock()
	for _, c := range deletes {
		key, err := cache.MetaNamespaceKeyFunc(c.Object)
		if err != nil {
			continue
		}
		st := in.state(Ref{Resource: res, Key: key})
		uid := uidOf(c.Object)
		if !slices.ContainsFunc(st.queue, func(p pending) bool { return p.uid == uid }) {
			st.queue = slices.Insert(st.queue, 0, pending{c: c, uid: uid, since: c.ObservedAt})
		}
	}
	delete(in.held, res)
	for ref, st := range in.objects {
		if ref.Resource == res {
			in.settle(ref, st)
		}
	}
	in.mu.Unlock()
	in.signal()
}

// AbandonHeld forgets the changes of types still held, at shutdown: they
// were never published, and the next leader's missed-delete scan and
// snapshot tell their state in the right order. It returns how many
// objects had changes.
func (in *Intake) AbandonHeld() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for ref, st := range in.objects {
		if in.held[ref.Resource] {
			if st.isParked {
				in.parked--
			}
			delete(in.objects, ref)
			n++
		}
	}
	return n
}

// Publishable is the number of objects with a change waiting or in flight
// that the publisher is meant to be working on: none while a type is still
// held, whose changes wait for its missed-delete scan (which retries and
// logs on its own), not for the publisher. Liveness counts these.
func (in *Intake) Publishable() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.held) > 0 {
		return 0
	}
	return len(in.objects) - in.parked
}
