package informers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// CompactList is a list of a dynamic type as compactDecoder decodes it.
type CompactList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*Compact
}

var _ runtime.Object = (*CompactList)(nil)

// DeepCopyObject copies the list and its items' metadata.
func (l *CompactList) DeepCopyObject() runtime.Object {
	out := &CompactList{TypeMeta: l.TypeMeta, Items: make([]*Compact, len(l.Items))}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i, c := range l.Items {
		out.Items[i] = c.DeepCopyObject().(*Compact)
	}
	return out
}

// compactDecoder decodes the JSON the apiserver serves for a dynamic type
// straight into Compact objects (CompactList for lists), trimmed as
// trims says: the informer then needs no transform. Without it, each
// object is decoded into an Unstructured tree, trimmed, and encoded again
// into its compact form.
//
// An object whose JSON is not in the form encoding/json writes (see
// jsonTrimmer), and anything that is not an object of the type (a
// Status), is decoded the Unstructured way: into the same Compact, or a
// *metav1.Status, which the REST client turns into errors.
type compactDecoder struct {
	trims TransformOptions
	// compacting is what the informer's transform would do with an
	// Unstructured (trims, then the compact form): the Unstructured way.
	compacting cache.TransformFunc
	packer     *packer
	trimmers   sync.Pool
}

var _ runtime.Serializer = (*compactDecoder)(nil)

func newCompactDecoder(trims TransformOptions, res *Resource, p *packer) *compactDecoder {
	return &compactDecoder{
		trims: trims, compacting: compacting(trims.Transform(), res, p), packer: p,
		trimmers: sync.Pool{New: func() any { return &jsonTrimmer{trims: trims} }},
	}
}

// Decode decodes data: an object of the type, a list of them, or a Status.
func (d *compactDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		if obj, err := d.copied(data); err == nil {
			gvk := obj.GetObjectKind().GroupVersionKind()
			return obj, &gvk, nil
		}
	}
	return d.unstructured(data, defaults)
}

// copied decodes data by copying it (jsonTrimmer); it fails where the
// Unstructured way is needed.
func (d *compactDecoder) copied(data []byte) (runtime.Object, error) {
	t := d.trimmers.Get().(*jsonTrimmer)
	defer d.trimmers.Put(t)
	t.reset(data)
	if t.dec.PeekKind() != '{' {
		return nil, errNotCanonical
	}
	var items []*Compact
	head, err := t.object(inTop, func() error {
		start := len(t.out)
		h, err := t.object(inTop, nil)
		if err != nil {
			return err
		}
		c, err := d.compact(h, t.out, start)
		if err != nil {
			return err
		}
		items = append(items, c)
		t.out = t.out[:start]
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := t.dec.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("after the object: %w", errNotCanonical)
	}
	if !head.items {
		if head.apiVersion == "v1" && head.kind == "Status" {
			return nil, errNotCanonical
		}
		return d.compact(head, t.out, 0)
	}
	if head.apiVersion == "" || head.kind == "" {
		return nil, errNotCanonical
	}
	list := &CompactList{TypeMeta: metav1.TypeMeta{APIVersion: head.apiVersion, Kind: head.kind}, Items: items}
	if head.meta[1] > 0 {
		if err := jsonv2.Unmarshal(t.out[head.meta[0]:head.meta[1]], &list.ListMeta); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// compact is the Compact of the object walked into out from start, whose
// head is h.
func (d *compactDecoder) compact(h objectHead, out []byte, start int) (*Compact, error) {
	// The Unstructured way fills in an item's missing apiVersion and kind
	// from its list's; a Secret's values it redacts.
	if h.apiVersion == "" || h.kind == "" || (d.trims.RedactSecrets && h.apiVersion == "v1" && h.kind == "Secret") {
		return nil, errNotCanonical
	}
	m := compactMeta{APIVersion: h.apiVersion, Kind: h.kind}
	if h.meta[1] > 0 {
		if err := jsonv2.Unmarshal(out[h.meta[0]:h.meta[1]], &m); err != nil {
			return nil, err
		}
		if err := m.parseTimes(); err != nil {
			return nil, err
		}
	}
	return m.assemble(out[start:], d.packer), nil
}

// unstructured decodes data as the dynamic client does, then trims and
// compacts each object.
func (d *compactDecoder) unstructured(data []byte, defaults *schema.GroupVersionKind) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := unstructured.UnstructuredJSONScheme.Decode(data, defaults, nil)
	if err != nil {
		return nil, nil, err
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if o.GetAPIVersion() == "v1" && o.GetKind() == "Status" {
			status := &metav1.Status{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, status); err != nil {
				return nil, nil, err
			}
			return status, gvk, nil
		}
		c, err := d.trimmed(o)
		return c, gvk, err
	case *unstructured.UnstructuredList:
		list := &CompactList{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()}}
		if len(o.Items) > 0 {
			// nil when empty, as the copying way leaves it.
			list.Items = make([]*Compact, len(o.Items))
		}
		if m, ok := o.Object["metadata"]; ok {
			// Every field of the list's metadata, shardInfo included.
			raw, err := json.Marshal(m)
			if err == nil {
				err = json.Unmarshal(raw, &list.ListMeta)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("list metadata: %w", err)
			}
		}
		for i := range o.Items {
			if list.Items[i], err = d.trimmed(&o.Items[i]); err != nil {
				return nil, nil, err
			}
		}
		return list, gvk, nil
	}
	return nil, nil, fmt.Errorf("decoded a %T", obj)
}

// trimmed is u's Compact, trimmed as the informer's transform would.
func (d *compactDecoder) trimmed(u *unstructured.Unstructured) (*Compact, error) {
	out, err := d.compacting(u)
	if err != nil {
		return nil, err
	}
	return out.(*Compact), nil
}

// Encode is not needed: lists and watches send no object.
func (d *compactDecoder) Encode(obj runtime.Object, _ io.Writer) error {
	return errors.New("informers: the compact decoder does not encode")
}

// Identifier names the decoder for the REST client's caches.
func (d *compactDecoder) Identifier() runtime.Identifier { return "kubebridge-compact-json" }
