package informers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// LastAppliedAnnotation is kubectl's copy of the last applied manifest.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TransformOptions say what is trimmed from objects before they are cached.
type TransformOptions struct {
	StripManagedFields bool
	StripLastApplied   bool
	// RedactSecrets removes the values of a Secret's data and stringData,
	// keeping the keys. It also removes the last-applied annotation of
	// Secrets, which holds the values in clear text.
	RedactSecrets bool
}

// Transform returns the cache.TransformFunc for o, or nil when it would do
// nothing. The informer hands it freshly decoded objects that are not yet
// shared, so trimming them in place is safe; nothing is modified after an
// object has entered the cache.
func (o TransformOptions) Transform() cache.TransformFunc {
	if !o.StripManagedFields && !o.StripLastApplied && !o.RedactSecrets {
		return nil
	}
	return func(obj interface{}) (interface{}, error) {
		// Deletion tombstones carry an object that is already cached.
		if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return obj, nil
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return obj, nil
		}
		if o.StripManagedFields {
			m.SetManagedFields(nil)
		}
		secret := o.RedactSecrets && redactSecret(obj)
		if o.StripLastApplied || secret {
			if a := m.GetAnnotations(); a != nil {
				if _, ok := a[LastAppliedAnnotation]; ok {
					delete(a, LastAppliedAnnotation)
					m.SetAnnotations(a)
				}
			}
		}
		return obj, nil
	}
}

// redactSecret empties the values of a Secret, typed or unstructured, and
// reports whether obj was a Secret.
func redactSecret(obj interface{}) bool {
	switch s := obj.(type) {
	case *corev1.Secret:
		for k := range s.Data {
			s.Data[k] = nil
		}
		for k := range s.StringData {
			s.StringData[k] = ""
		}
		return true
	case *unstructured.Unstructured:
		if s.GetAPIVersion() != "v1" || s.GetKind() != "Secret" {
			return false
		}
		for _, field := range []string{"data", "stringData"} {
			if m, ok := s.Object[field].(map[string]interface{}); ok {
				for k := range m {
					m[k] = nil
				}
			}
		}
		return true
	}
	return false
}
