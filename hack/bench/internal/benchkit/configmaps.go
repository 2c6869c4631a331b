package benchkit

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// DataKeys is how many data keys a benchmark ConfigMap has: an update
// rewrites one of them, a quarter of the object.
const DataKeys = 4

// CreateConfigMap creates ConfigMap namespace/name with labels and size
// bytes of data in DataKeys keys, random from seed. One that exists
// already counts as created: a retry after a create whose response was
// lost.
func CreateConfigMap(ctx context.Context, cs kubernetes.Interface, namespace, name string, labels map[string]string, seed uint64, size int) error {
	rng := rand.New(rand.NewPCG(seed, 0x6b75626562726964))
	data := make(map[string]string, DataKeys)
	for k := range DataKeys {
		data["key-"+strconv.Itoa(k)] = fixtures.RandomData(rng, size/DataKeys)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Data:       data,
	}
	return Retry(ctx, func() error {
		_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// SetConfigMapData sets one data key of ConfigMap namespace/name with a
// merge patch.
func SetConfigMapData(ctx context.Context, cs kubernetes.Interface, namespace, name, key, value string) error {
	body, err := json.Marshal(map[string]any{"data": map[string]string{key: value}})
	if err != nil {
		return err
	}
	return Retry(ctx, func() error {
		_, err := cs.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
}

// DeleteConfigMap deletes ConfigMap namespace/name. One not found counts
// as deleted: a retry after a delete whose response was lost.
func DeleteConfigMap(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	return Retry(ctx, func() error {
		err := cs.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
