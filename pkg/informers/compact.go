package informers

import (
	"bytes"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Compact is an object as the bridge's informer cache holds it: the
// object's JSON, trimmed by the informer's transform, and the metadata the
// bridge reads. For a dynamic type (a custom resource, or any type the
// typed clients do not serve) it stands instead of an Unstructured tree of
// maps, which takes about twice the memory (docs/memory.md); for a typed
// one (WithCompactTyped), its JSON is written once, when it enters the
// cache, rather than at each event that carries it.
//
// Its metadata has the name, namespace, uid, resourceVersion, generation,
// creation and deletion timestamps, labels and owner references; the
// other fields (annotations, finalizers) are in the JSON only, which
// Unstructured decodes; of the annotations, it keeps only the watch-list
// bookmark's (k8s.io/initial-events-end), which never reaches the cache.
// Like every cached object it is read-only.
type Compact struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw string
}

var _ runtime.Object = (*Compact)(nil)

// NewCompact is u's compact form: u's JSON as encoding it writes it, and
// its metadata.
func NewCompact(u *unstructured.Unstructured) (*Compact, error) {
	var buf bytes.Buffer
	return newCompact(u, &buf, nil)
}

// newCompact is NewCompact encoding in buf, which it resets, packed by
// p (see assemble).
func newCompact(u *unstructured.Unstructured, buf *bytes.Buffer, p *packer) (*Compact, error) {
	buf.Reset()
	if err := unstructured.UnstructuredJSONScheme.Encode(u, buf); err != nil {
		return nil, err
	}
	m := compactMetaOf(u, u.GetAPIVersion(), u.GetKind())
	// Read alone: GetAnnotations would copy every annotation.
	m.Annotations.InitialEventsEnd, _, _ = unstructured.NestedString(u.Object, "metadata", "annotations", metav1.InitialEventsAnnotationKey)
	return m.assemble(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), p), nil
}

// compactMetaOf is the metadata a Compact keeps of o, an object of
// apiVersion and kind, but for the annotation, which each caller reads
// its own way.
func compactMetaOf(o metav1.Object, apiVersion, kind string) compactMeta {
	return compactMeta{
		APIVersion: apiVersion, Kind: kind, Name: o.GetName(), Namespace: o.GetNamespace(), UID: string(o.GetUID()),
		ResourceVersion: o.GetResourceVersion(), Generation: o.GetGeneration(), CreationTimestamp: o.GetCreationTimestamp(),
		DeletionTimestamp: o.GetDeletionTimestamp(), Labels: o.GetLabels(), OwnerReferences: o.GetOwnerReferences(),
	}
}

// compactMeta is the metadata a Compact keeps, as it is read from an
// Unstructured or decoded from the object's JSON (compactDecoder).
type compactMeta struct {
	APIVersion        string                  `json:"-"`
	Kind              string                  `json:"-"`
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace"`
	UID               string                  `json:"uid"`
	ResourceVersion   string                  `json:"resourceVersion"`
	Generation        int64                   `json:"generation"`
	CreationTimestamp metav1.Time             `json:"-"`
	DeletionTimestamp *metav1.Time            `json:"-"`
	Labels            map[string]string       `json:"labels"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	// Annotations has the one annotation a Compact keeps: the watch-list
	// bookmark's, which the reflector reads.
	Annotations struct {
		InitialEventsEnd string `json:"k8s.io/initial-events-end"`
	} `json:"annotations"`
	// The timestamps as decoded: parsed as Unstructured parses them
	// (metav1.Time's JSON decoding would decode each string twice).
	Created *string `json:"creationTimestamp"`
	Deleted *string `json:"deletionTimestamp"`
}

// parseTimes sets the timestamps from the decoded strings, as the
// Unstructured getters read them: an empty or null one is zero, or nil.
func (m *compactMeta) parseTimes() error {
	if m.Created != nil {
		if err := m.CreationTimestamp.UnmarshalQueryParameter(*m.Created); err != nil {
			return err
		}
	}
	if m.Deleted != nil {
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(*m.Deleted); err != nil {
			return err
		}
		if !t.IsZero() {
			m.DeletionTimestamp = &t
		}
	}
	return nil
}

// assemble is the Compact of encoded and m. The JSON and the metadata's
// strings are kept in one block of exactly their length (an encoder's
// buffer would keep up to twice as much, and the small strings of the
// decoded object, left alive among the object's garbage, would keep most
// of its memory from being reused), which p, if set, may pack with other
// objects' (packer).
func (m *compactMeta) assemble(encoded []byte, p *packer) *Compact {
	strs := []string{m.APIVersion, m.Kind, m.Name, m.Namespace, m.UID, m.ResourceVersion}
	for k, v := range m.Labels {
		strs = append(strs, k, v)
	}
	n := len(encoded)
	for _, s := range strs {
		n += len(s)
	}
	p = p.ifPacking()
	block := p.block(n, func(b *strings.Builder) {
		b.Write(encoded)
		for _, s := range strs {
			b.WriteString(s)
		}
	})
	// Each string again, as a part of block.
	at := len(encoded)
	for i, s := range strs {
		strs[i], at = block[at:at+len(s)], at+len(s)
	}
	c := p.compact()
	c.raw = block[:len(encoded)]
	c.APIVersion, c.Kind, c.Name, c.Namespace, c.UID, c.ResourceVersion = strs[0], strs[1], strs[2], strs[3], types.UID(strs[4]), strs[5]
	if m.Labels != nil {
		c.Labels = make(map[string]string, len(m.Labels))
		for i := 6; i+1 < len(strs); i += 2 {
			c.Labels[strs[i]] = strs[i+1]
		}
	}
	c.Generation = m.Generation
	c.CreationTimestamp, c.DeletionTimestamp = m.CreationTimestamp, m.DeletionTimestamp
	c.OwnerReferences = m.OwnerReferences
	if v := m.Annotations.InitialEventsEnd; v != "" {
		c.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
	}
	return c
}

// RawJSON is the object's JSON, with its apiVersion and kind.
func (c *Compact) RawJSON() string { return c.raw }

// MarshalJSON returns the object's JSON, so that encoding/json writes a
// Compact as the object it stands for.
func (c *Compact) MarshalJSON() ([]byte, error) { return []byte(c.raw), nil }

// Unstructured decodes the object's JSON into a new Unstructured, the
// caller's own.
func (c *Compact) Unstructured() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(c.raw)); err != nil {
		return nil, err
	}
	return u, nil
}

// DeepCopyObject copies the metadata; the JSON, never changed, is shared.
func (c *Compact) DeepCopyObject() runtime.Object {
	out := &Compact{TypeMeta: c.TypeMeta, raw: c.raw}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// NewTypedCompact is the compact form of obj, a typed object of apiVersion
// and kind (as WithCompactTyped caches it): its JSON as AppendObjectJSON
// writes it, and its metadata.
func NewTypedCompact(obj runtime.Object, apiVersion, kind string) (*Compact, error) {
	var buf bytes.Buffer
	return newTypedCompact(obj, apiVersion, kind, &buf, nil)
}

// newTypedCompact is the compact form of obj, a typed object of apiVersion
// and kind: its JSON as AppendObjectJSON writes it, in buf, which it
// resets, and its metadata, packed by p (see assemble).
func newTypedCompact(obj runtime.Object, apiVersion, kind string, buf *bytes.Buffer, p *packer) (*Compact, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if err := AppendObjectJSON(buf, obj, apiVersion, kind); err != nil {
		return nil, err
	}
	m := compactMetaOf(o, apiVersion, kind)
	m.Annotations.InitialEventsEnd = o.GetAnnotations()[metav1.InitialEventsAnnotationKey]
	return m.assemble(buf.Bytes(), p), nil
}

// compacting wraps an informer's transform: transform first (it trims and
// redacts the decoded objects), then the compact form of res's objects is
// what is cached, packed by p (nil: each object on its own). Tombstones
// carry objects already cached, so already compact.
func compacting(transform cache.TransformFunc, res *Resource, p *packer) cache.TransformFunc {
	apiVersion, kind := res.GVR.GroupVersion().String(), res.Kind
	// The encoders' buffers, reused: the informer's objects are encoded
	// one after another.
	buffers := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return func(obj any) (any, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return nil, err
			}
		}
		switch o := obj.(type) {
		case *Compact:
			return o, nil
		case *unstructured.Unstructured:
			buf := buffers.Get().(*bytes.Buffer)
			defer buffers.Put(buf)
			return newCompact(o, buf, p)
		case runtime.Object:
			buf := buffers.Get().(*bytes.Buffer)
			defer buffers.Put(buf)
			return newTypedCompact(o, apiVersion, kind, buf, p)
		}
		return obj, nil
	}
}
