package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// streamTail is what the reconciler reads from the stream. sink.Tail is one.
type streamTail interface {
	LastPerSubject(ctx context.Context, filter string, fn func(subject string, seq uint64, header nats.Header) error) error
	Every(ctx context.Context, filters []string, fn func(subject string, seq uint64, header nats.Header) error) error
	Last(ctx context.Context, subject string) (*nats.Msg, uint64, error)
}

// reconciler finds the objects the stream still shows but the cluster no
// longer has: deleted while no bridge was publishing. Without it the last
// message of such an object's subject would stay an added, updated or
// snapshot item forever, and a consumer bootstrapping from the last message
// per subject would hold objects that do not exist.
type reconciler struct {
	tail     streamTail
	subjects contract.Subjects
	// owns, if set, says which objects are this bridge's (its shard's):
	// another shard's subjects are that shard's to reconcile.
	owns func(namespace, name string) bool
	// seen, if set, is told the last sequence and headers of every
	// subject scanned: the fence starts from it, so the snapshot that
	// follows the scan is not refused once per object. It reports (true)
	// a foreign last message, which no refusal will then.
	seen func(ctx context.Context, subject string, seq uint64, header nats.Header) bool
}

// missedDeletes reads the last message of every object subject of res and
// returns a deleted change (final state unknown, with the last state the
// stream holds) for each object that the cache does not have, or has under
// another uid. Objects outside scope (another namespace, labels the
// selector does not match) are left alone: they are not watched, so their
// absence from the cache says nothing.
//
// A last message that a deposed leader stored after a newer term began
// is one consumers ignore (contract §3), so a delete among them deletes
// nothing: the object it names is published as deleted again, whatever
// its labels (a delete for leaving the selector carries the labels that
// left it).
func (r *reconciler) missedDeletes(ctx context.Context, res *informers.Resource, scope informers.Scope, cache intake.CacheReader, now time.Time) ([]informers.Change, error) {
	selector, err := labels.Parse(scope.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: label selector: %w", res, err)
	}
	candidates, err := r.scan(ctx, res, scope, cache)
	if err != nil {
		return nil, err
	}
	var deletes []informers.Change
	for _, c := range candidates {
		obj, ok, err := r.confirm(ctx, c, selector, cache)
		if err != nil {
			return nil, err
		}
		if ok {
			deletes = append(deletes, informers.Change{Verb: informers.Deleted, Resource: res, Object: obj, FinalStateUnknown: true, ObservedAt: now})
		}
	}
	return deletes, nil
}

// scan reads the last message of every object subject of res, headers
// only, and returns the subjects whose object the cache may lack.
func (r *reconciler) scan(ctx context.Context, res *informers.Resource, scope informers.Scope, cache intake.CacheReader) ([]candidate, error) {
	markers, err := readTermMarkers(ctx, r.tail, r.subjects)
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", res, err)
	}
	// <type>.<namespace>.<name>: object subjects only (and the two marker
	// subjects, which ParseObject rejects).
	filter := r.subjects.Type(res.Type()) + ".*.*"
	var candidates []candidate
	scanned := 0
	err = r.tail.LastPerSubject(ctx, filter, func(subject string, seq uint64, h nats.Header) error {
		ref, err := r.subjects.ParseObject(subject)
		if err == nil && r.owns != nil && !r.owns(ref.Namespace, ref.Name) {
			// Another shard's object: neither its delete nor its fence
			// is this bridge's.
			return nil
		}
		scanned++
		if r.seen != nil && r.seen(ctx, subject, seq, h) {
			// Foreign: no object's state to delete. If the cluster has the
			// object, its start-up snapshot overwrites the message; else
			// readers report it.
			return nil
		}
		if err != nil {
			return nil // a marker, not one of ours
		}
		deposed := markers.deposed(seq, h)
		if !deposed && h.Get(contract.HeaderType) == contract.TypeDeleted {
			return nil // deleted already
		}
		if res.Namespaced && len(scope.Namespaces) > 0 && !slices.Contains(scope.Namespaces, ref.Namespace) {
			return nil
		}
		if cached(cache, ref, types.UID(h.Get(contract.Header(contract.ExtUID)))) {
			return nil
		}
		candidates = append(candidates, candidate{subject: subject, seq: seq, deposed: deposed})
		return nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Read the stream's last message per object", "subjects", scanned, "missing", len(candidates))
	return candidates, nil
}

// confirm reads a candidate's last message whole and returns the object
// to publish as deleted, if it still is one.
func (r *reconciler) confirm(ctx context.Context, c candidate, selector labels.Selector, cache intake.CacheReader) (*unstructured.Unstructured, bool, error) {
	msg, seq, err := r.tail.Last(ctx, c.subject)
	if err != nil {
		return nil, false, err
	}
	obj, err := lastState(msg)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the last state of an object the cluster no longer has; no delete is published for it", "subject", c.subject)
		return nil, false, nil
	}
	// Checked again on the message read now: the object may have been
	// published since the scan.
	ref, _ := r.subjects.ParseObject(c.subject)
	if cached(cache, ref, obj.GetUID()) {
		return nil, false, nil
	}
	deleted := msg.Header.Get(contract.HeaderType) == contract.TypeDeleted
	switch {
	case c.deposed && seq != c.seq:
		return nil, false, nil // written since, by this term
	case c.deposed && deleted:
		// Its labels may be the ones that left the selector.
		return obj, true, nil
	case deleted || !selector.Matches(labels.Set(obj.GetLabels())):
		return nil, false, nil
	}
	return obj, true, nil
}

// candidate is a subject whose last message shows an object the cache
// does not have.
type candidate struct {
	subject string
	seq     uint64
	// deposed: its last message is a deposed leader's, which consumers
	// ignore.
	deposed bool
}

// cached reports whether the cache holds the object ref names under uid.
func cached(cache intake.CacheReader, ref contract.Subject, uid types.UID) bool {
	key := ref.Name
	if ref.Namespace != "" {
		key = ref.Namespace + "/" + ref.Name
	}
	obj, ok := cache.Get(key)
	return ok && uidOf(obj) == uid
}

// lastState decodes the object a stored event carries.
func lastState(msg *nats.Msg) (*unstructured.Unstructured, error) {
	ev, err := cenats.Decode(msg)
	if err != nil {
		return nil, err
	}
	var data contract.Data
	if err := json.Unmarshal(ev.Data(), &data); err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.ID(), err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data.Object); err != nil {
		return nil, fmt.Errorf("event %s: object: %w", ev.ID(), err)
	}
	return obj, nil
}
