package encode

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// truncatedObject is what is sent in place of an object too large to publish:
// enough for a consumer to know the object exists and to fetch it.
type truncatedObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   truncatedMetadata `json:"metadata"`
}

type truncatedMetadata struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace,omitempty"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Generation      int64  `json:"generation,omitempty"`
}

// writeObject writes obj's JSON with apiVersion and kind filled in
// (informers.AppendObjectJSON), or, for a Compact object, the JSON it
// holds.
func writeObject(buf *bytes.Buffer, obj runtime.Object, apiVersion, kind string, truncate bool) error {
	if truncate {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		return informers.AppendJSON(buf, truncatedObject{APIVersion: apiVersion, Kind: kind, Metadata: truncatedMetadata{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: string(m.GetUID()),
			ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		}})
	}
	if r, ok := obj.(rawJSON); ok {
		// A compact object holds the JSON AppendObjectJSON wrote for it
		// (or encoding/json for a custom resource), apiVersion and kind
		// included: copied, not scanned again. (Asking its
		// GroupVersionKind would parse its apiVersion at every event.)
		buf.WriteString(r.RawJSON())
		return nil
	}
	return informers.AppendObjectJSON(buf, obj, apiVersion, kind)
}

// rawJSON is an object that holds its own JSON, with its apiVersion and
// kind (informers.Compact).
type rawJSON interface {
	RawJSON() string
}
