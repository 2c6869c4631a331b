package bridge

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/rules"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// intakeQueue is where the informers' changes go: the intake, or the
// leader gate in front of it. Withhold takes an update that is published
// only merged into the object's next change.
type intakeQueue interface {
	informers.Queue
	Withhold(informers.Change)
}

// ruleGate applies a type's rules to its informer's changes on their way
// to the intake: match decides membership (an update that leaves it is
// published as a delete of the object as it is now, one that enters it as
// an add), and an update that changed nothing but ignored fields, or that
// when holds back, is withheld. The informer's transform (ruleTransform)
// has already projected the objects, so every expression sees what is
// published.
type ruleGate struct {
	res    *informers.Resource
	rules  *rules.Rules
	next   intakeQueue
	count  ruleCounters
	logger logr.Logger
	// errors counts the evaluation errors logged so far, so that a rule
	// that fails on every change logs at 1, 2, 4, 8, … of them.
	errors atomic.Uint64
}

// ruleCounters are a type's series of metrics.Rules, looked up once: the
// gate counts on every change of the type.
type ruleCounters struct {
	outOfScope, withheldWhen, withheldUnchanged, matchErrors, whenErrors prometheus.Counter
}

func newRuleGate(res *informers.Resource, r *rules.Rules, next intakeQueue, m metrics.Rules, logger logr.Logger) *ruleGate {
	name := res.String()
	return &ruleGate{res: res, rules: r, next: next, logger: logger, count: ruleCounters{
		outOfScope:        m.OutOfScope.WithLabelValues(name),
		withheldWhen:      m.Withheld.WithLabelValues(name, "when"),
		withheldUnchanged: m.Withheld.WithLabelValues(name, "unchanged"),
		matchErrors:       m.Errors.WithLabelValues(name, "match"),
		whenErrors:        m.Errors.WithLabelValues(name, "when"),
	}}
}

// Add routes c as the type's rules say.
func (g *ruleGate) Add(c informers.Change) {
	switch c.Verb {
	case informers.Added, informers.Deleted:
		if g.matches(c.Object, content(c.Object)) {
			g.next.Add(c)
			return
		}
	case informers.Updated:
		g.update(c)
		return
	default:
		g.next.Add(c)
		return
	}
	g.count.outOfScope.Inc()
}

func (g *ruleGate) update(c informers.Change) {
	// Each object's content is read once: a compact object's is decoded.
	obj, old := content(c.Object), content(c.OldObject)
	in, was := g.matches(c.Object, obj), g.matches(c.OldObject, old)
	switch {
	case in && was:
		g.inScopeUpdate(c, obj, old)
	case in:
		c.Verb, c.OldObject = informers.Added, nil
		g.next.Add(c)
	case was:
		// Out of scope from now on: consumers drop it as they would a
		// deleted object; its delete carries the object as it is now.
		c.Verb, c.OldObject = informers.Deleted, nil
		g.next.Add(c)
	default:
		g.count.outOfScope.Inc()
	}
}

func (g *ruleGate) inScopeUpdate(c informers.Change, obj, old map[string]any) {
	if obj == nil || old == nil {
		g.next.Add(c)
		return
	}
	if rules.OnlyResourceVersionDiffers(obj, old) {
		g.count.withheldUnchanged.Inc()
		g.logWithheld(c, "nothing but ignored fields changed")
		g.next.Withhold(c)
		return
	}
	publish, err := g.rules.Publishes(obj, old)
	if err != nil {
		g.failed("when", c.Object, err)
	}
	if publish {
		g.next.Add(c)
		return
	}
	g.count.withheldWhen.Inc()
	g.logWithheld(c, "when is false")
	g.next.Withhold(c)
}

// logWithheld says, at V(6) as every change, why an update is withheld:
// the version has no event of its own.
func (g *ruleGate) logWithheld(c informers.Change, why string) {
	if l := g.logger.V(6); l.Enabled() {
		l.Info("Update withheld until the object's next change", "resource", g.res.String(), "object", objectName(c.Object),
			"resourceVersion", resourceVersionOf(c.Object), "why", why)
	}
}

// matches evaluates match on obj, whose content is u; an object it
// cannot read is in scope.
func (g *ruleGate) matches(obj runtime.Object, u map[string]any) bool {
	if u == nil {
		return true
	}
	in, err := g.rules.Matches(u)
	if err != nil {
		g.failed("match", obj, err)
	}
	return in
}

// failed reports a rule that could not be evaluated on obj: the change
// goes on as if the rule were true, and is never dropped for it.
func (g *ruleGate) failed(rule string, obj runtime.Object, err error) {
	if rule == "match" {
		g.count.matchErrors.Inc()
	} else {
		g.count.whenErrors.Inc()
	}
	if n := g.errors.Add(1); n&(n-1) == 0 {
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		g.logger.Error(err, "A rule could not be evaluated; the change is published as if it were true", "resource", g.res.String(), "rule", rule,
			"object", key, "errorsSoFar", n, "nextLogAt", uint64(1)<<bits.Len64(n))
	}
}

// content is obj's unstructured content: what ruleTransform caches for a
// type with rules (the bridge builds its Source WithUnstructuredCache),
// or the content a Compact object decodes to (the caller's own). Nil for
// anything else.
func content(obj runtime.Object) map[string]any {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.Object
	case *informers.Compact:
		u, err := o.Unstructured()
		if err != nil {
			return nil
		}
		return u.Object
	}
	return nil
}

// ruleTransform is the informer transform of a type whose rules read or
// project objects: base's trimming, then the object as unstructured
// content (a typed object is converted, with its apiVersion and kind set)
// without the fields the type ignores. So the cache, snapshots, tombstones
// and every expression see objects as they are published. The informer
// hands the transform fresh objects, so the projection is done in place.
func ruleTransform(base cache.TransformFunc, res *informers.Resource, r *rules.Rules) cache.TransformFunc {
	apiVersion := res.GVR.GroupVersion().String()
	return func(obj any) (any, error) {
		if base != nil {
			var err error
			if obj, err = base(obj); err != nil {
				return nil, err
			}
		}
		if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			// Its object is already cached, so already projected.
			return obj, nil
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: converting %T for the type's rules: %w", res, obj, err)
			}
			u = &unstructured.Unstructured{Object: m}
			u.SetAPIVersion(apiVersion)
			u.SetKind(res.Kind)
		}
		r.Project(u.Object)
		return u, nil
	}
}

// matchingCache is a type's informer cache as its rules scope it: an
// object outside match reads as absent, so a snapshot has no item for it
// and the missed-delete scan deletes it from the stream.
type matchingCache struct {
	syncedCache
	gate *ruleGate
}

// Get returns the cached object under key if it is in scope.
func (c matchingCache) Get(key string) (runtime.Object, bool) {
	obj, ok := c.syncedCache.Get(key)
	if !ok || !c.gate.matches(obj, content(obj)) {
		return nil, false
	}
	return obj, true
}
