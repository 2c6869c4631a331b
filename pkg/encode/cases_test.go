package encode_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// observedAt is the fixed ObservedAt of every case, with nanoseconds so a
// lossy time format shows up.
var observedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

const observedAtText = "2026-01-02T03:04:05.123456789Z"

var (
	configMaps = &informers.Resource{
		GVR:        schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Kind:       "ConfigMap",
		Namespaced: true,
	}
	pods = &informers.Resource{
		GVR:        schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Kind:       "Pod",
		Namespaced: true,
	}
	secrets = &informers.Resource{
		GVR:        schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
		Kind:       "Secret",
		Namespaced: true,
	}
	clusterRoles = &informers.Resource{
		GVR:  schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		Kind: "ClusterRole",
	}
	widgets = &informers.Resource{
		GVR:        schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		Kind:       "Widget",
		Namespaced: true,
	}
)

// limitedEncoder is an Encoder with the payload limit a case encodes
// within, as the bridge passes the server's max_payload.
type limitedEncoder struct {
	*encode.Encoder
	maxPayload int
}

func (e limitedEncoder) Encode(c informers.Change) (encode.Encoded, error) {
	return e.EncodeWithin(c, e.maxPayload)
}

func newEncoder(maxPayload int) limitedEncoder {
	return limitedEncoder{&encode.Encoder{Subjects: contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}}, maxPayload}
}

// The secret value of the redacted Secret case; it must never leave the
// encoder in any form.
const (
	secretPassword = "hunter2-Sup3rS3cret-9f8e7d"
	secretUsername = "svc-billing-admin"
)

var created = metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

// appConfig is a ConfigMap as an informer cache holds it: empty TypeMeta.
func appConfig(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "app-config",
			Namespace:         "default",
			UID:               "6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01",
			ResourceVersion:   rv,
			CreationTimestamp: created,
			Labels:            map[string]string{"app": "web"},
		},
		Data: map[string]string{
			"LOG_LEVEL":   "info",
			"config.yaml": "listen: :8080\n",
		},
	}
}

func webPod(rv string, running bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "web-7d4b9c-x2x8q",
			Namespace:         "default",
			UID:               "0b7e3a52-8c1d-4d4e-a5b6-3c2d1e0f9a87",
			ResourceVersion:   rv,
			CreationTimestamp: created,
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d4b9c"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1",
				Kind:       "ReplicaSet",
				Name:       "web-7d4b9c",
				UID:        "a1b2c3d4-0000-4000-8000-000000000001",
				Controller: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "nginx",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			}},
			RestartPolicy: corev1.RestartPolicyAlways,
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
	if running {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.244.1.17"
		p.Status.StartTime = &created
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func plainConfigMap(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       "default",
			UID:             k8stypes.UID("uid-" + name),
			ResourceVersion: rv,
		},
		Data: map[string]string{"k": "v"},
	}
}

const clusterRoleName = "system:controller:foo*>"

func fooClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:              clusterRoleName,
			UID:               "c0ffee00-1111-4222-8333-444455556666",
			ResourceVersion:   "123",
			CreationTimestamp: created,
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"pods"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
}

func gizmoWidget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]interface{}{
			"name":              "gizmo",
			"namespace":         "team-a",
			"uid":               "5e5e5e5e-aaaa-4bbb-8ccc-dddddddddddd",
			"resourceVersion":   "77",
			"generation":        int64(3),
			"creationTimestamp": "2026-01-01T12:00:00Z",
		},
		"spec": map[string]interface{}{
			"color": "blue",
			"size":  int64(3),
		},
	}}
}

// lastApplied is what kubectl apply leaves on a Secret applied from a
// manifest that used stringData: the value in clear text.
const lastApplied = `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{},"name":"db-credentials","namespace":"default"},"stringData":{"password":"` + secretPassword + `","username":"` + secretUsername + `"},"type":"Opaque"}` + "\n"

// redactedSecret builds a Secret as the API server returns it and passes it
// through the informer transform, as the bridge's informers do.
func redactedSecret(t testing.TB) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "db-credentials",
			Namespace:         "default",
			UID:               "9d9d9d9d-1234-4567-89ab-cdef01234567",
			ResourceVersion:   "555",
			CreationTimestamp: created,
			Annotations: map[string]string{
				informers.LastAppliedAnnotation: lastApplied,
				"example.com/owner":             "billing",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager:    "kubectl-client-side-apply",
				Operation:  metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1",
				FieldsType: "FieldsV1",
				FieldsV1:   metav1.NewFieldsV1(`{"f:data":{".":{},"f:password":{},"f:username":{}},"f:type":{}}`),
			}},
		},
		Data: map[string][]byte{
			"password": []byte(secretPassword),
			"username": []byte(secretUsername),
		},
		Type: corev1.SecretTypeOpaque,
	}
	transform := informers.TransformOptions{StripManagedFields: true, StripLastApplied: false, RedactSecrets: true}.Transform()
	if transform == nil {
		t.Fatal("TransformOptions{RedactSecrets: true}.Transform() returned nil")
	}
	out, err := transform(s)
	if err != nil {
		t.Fatalf("transform: %v", err)
	}
	red, ok := out.(*corev1.Secret)
	if !ok {
		t.Fatalf("transform returned %T, want *corev1.Secret", out)
	}
	return red
}

// secretLeaks are the forms in which the Secret's values must not appear.
func secretLeaks() []string {
	var out []string
	for _, v := range []string{secretPassword, secretUsername} {
		out = append(out, v,
			base64.StdEncoding.EncodeToString([]byte(v)),
			base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)))
	}
	return out
}

func bigConfigMap(rv string) *corev1.ConfigMap {
	cm := plainConfigMap("big-config", rv)
	cm.UID = "b16b16b1-6b16-4b16-8b16-b16b16b16b16"
	cm.Annotations = map[string]string{"example.com/blob": strings.Repeat("x", 10*1024)}
	return cm
}

const snapshotID = "01JGZ8K3M4N5P6Q7R8S9T0V1W2"

// encodeCase is one Change with the expectations a reader would write down
// by hand from the CloudEvents and Kubernetes conventions, independent of
// the golden files.
type encodeCase struct {
	name       string
	maxPayload int
	// tombstones sets the encoder's TombstoneTTL (with TombstoneRollup).
	tombstones time.Duration
	change     func(t testing.TB) informers.Change

	subject   string // NATS subject
	id        string
	ceType    string
	source    string
	ceSubject string // "" for markers (no subject attribute)
	truncated bool
	ext       map[string]string // every extension, formatted as on the wire
}

// encoder is the encoder the case is encoded with.
func (tc encodeCase) encoder() limitedEncoder {
	e := newEncoder(tc.maxPayload)
	e.TombstoneTTL, e.TombstoneRollup = tc.tombstones, tc.tombstones > 0
	return e
}

func objExt(kind, apiVersion, ns, name, uid, rv string, extra ...string) map[string]string {
	m := map[string]string{
		"cluster":         "prod",
		"kind":            kind,
		"apiversion":      apiVersion,
		"name":            name,
		"uid":             uid,
		"resourceversion": rv,
	}
	if ns != "" {
		m["namespace"] = ns
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// appConfigCase is tc, an event about appConfig(rv), with the subject,
// source and extensions (extra as for objExt) of that ConfigMap.
func appConfigCase(tc encodeCase, rv string, extra ...string) encodeCase {
	tc.subject = "kubebridge.prod.core.v1.configmaps.default.app-config"
	tc.source = "k8s://prod/api/v1/namespaces/default/configmaps"
	tc.ceSubject = "default/app-config"
	tc.ext = objExt("ConfigMap", "v1", "default", "app-config", "6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01", rv, extra...)
	return tc
}

func encodeCases() []encodeCase {
	deleted := appConfigCase(encodeCase{
		name: "deleted-configmap",
		change: func(testing.TB) informers.Change {
			return informers.Change{Verb: informers.Deleted, Resource: configMaps, Object: appConfig("4720"), ObservedAt: observedAt}
		},
		id:     "configmaps.v1/6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01/4720/deleted",
		ceType: "io.kubebridge.object.deleted",
	}, "4720")
	// As published to a stream that lets deletes expire: Nats-TTL and
	// Nats-Rollup, no other difference.
	tombstone := deleted
	tombstone.name, tombstone.tombstones = "deleted-tombstone-ttl", 24*time.Hour
	return []encodeCase{
		appConfigCase(encodeCase{
			name: "added-configmap",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Added, Resource: configMaps, Object: appConfig("4711"), ObservedAt: observedAt}
			},
			id:     "configmaps.v1/6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01/4711/added",
			ceType: "io.kubebridge.object.added",
		}, "4711"),
		{
			name: "updated-pod",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Updated, Resource: pods,
					Object: webPod("9002", true), OldObject: webPod("9001", false), ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.core.v1.pods.default.web-7d4b9c-x2x8q",
			id:        "pods.v1/0b7e3a52-8c1d-4d4e-a5b6-3c2d1e0f9a87/9002/updated",
			ceType:    "io.kubebridge.object.updated",
			source:    "k8s://prod/api/v1/namespaces/default/pods",
			ceSubject: "default/web-7d4b9c-x2x8q",
			ext:       objExt("Pod", "v1", "default", "web-7d4b9c-x2x8q", "0b7e3a52-8c1d-4d4e-a5b6-3c2d1e0f9a87", "9002"),
		},
		appConfigCase(encodeCase{
			name: "updated-coalesced",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Updated, Resource: configMaps,
					Object: appConfig("4719"), OldObject: appConfig("4711"), Coalesced: 3, ObservedAt: observedAt}
			},
			id:     "configmaps.v1/6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01/4719/updated",
			ceType: "io.kubebridge.object.updated",
		}, "4719", "coalesced", "3"),
		deleted,
		tombstone,
		{
			name: "deleted-finalstateunknown",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Deleted, Resource: configMaps, Object: plainConfigMap("stale-config", "4000"),
					FinalStateUnknown: true, ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.core.v1.configmaps.default.stale-config",
			id:        "configmaps.v1/uid-stale-config/4000/deleted",
			ceType:    "io.kubebridge.object.deleted",
			source:    "k8s://prod/api/v1/namespaces/default/configmaps",
			ceSubject: "default/stale-config",
			ext:       objExt("ConfigMap", "v1", "default", "stale-config", "uid-stale-config", "4000", "finalstateunknown", "true"),
		},
		{
			name: "snapshot-begin",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.SnapshotBegin, Resource: configMaps, SnapshotID: snapshotID, ObservedAt: observedAt}
			},
			subject: "kubebridge.prod.core.v1.configmaps._snapshot.begin",
			id:      "configmaps.v1/" + snapshotID + "/snapshot.begin",
			ceType:  "io.kubebridge.snapshot.begin",
			source:  "k8s://prod/api/v1/configmaps",
			ext:     map[string]string{"cluster": "prod", "kind": "ConfigMap", "apiversion": "v1", "snapshotid": snapshotID},
		},
		{
			name: "snapshot-begin-with-rules",
			change: func(testing.TB) informers.Change {
				scope := informers.Scope{Match: "object.metadata.labels['tier'] ==\n'frontend'", IgnoreFields: [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}}}
				return informers.Change{Verb: informers.SnapshotBegin, Resource: configMaps, SnapshotID: snapshotID, Scope: scope, ObservedAt: observedAt}
			},
			subject: "kubebridge.prod.core.v1.configmaps._snapshot.begin",
			id:      "configmaps.v1/" + snapshotID + "/snapshot.begin",
			ceType:  "io.kubebridge.snapshot.begin",
			source:  "k8s://prod/api/v1/configmaps",
			ext: map[string]string{"cluster": "prod", "kind": "ConfigMap", "apiversion": "v1", "snapshotid": snapshotID,
				"scopematch": "object.metadata.labels['tier'] == 'frontend'", "scopeignorefields": `[["status"],["metadata","annotations","example.com/heartbeat"]]`},
		},
		appConfigCase(encodeCase{
			name: "snapshot-item",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.SnapshotItem, Resource: configMaps, Object: appConfig("4711"),
					SnapshotID: snapshotID, ObservedAt: observedAt}
			},
			id:     "configmaps.v1/6f1c0c4e-1b5a-4f0e-9d61-2f8c3f0a9b01/4711/snapshot.item/" + snapshotID,
			ceType: "io.kubebridge.snapshot.item",
		}, "4711", "snapshotid", snapshotID),
		{
			name: "snapshot-end",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.SnapshotEnd, Resource: configMaps, SnapshotID: snapshotID,
					SnapshotCount: 3, ObservedAt: observedAt}
			},
			subject: "kubebridge.prod.core.v1.configmaps._snapshot.end",
			id:      "configmaps.v1/" + snapshotID + "/snapshot.end",
			ceType:  "io.kubebridge.snapshot.end",
			source:  "k8s://prod/api/v1/configmaps",
			ext: map[string]string{"cluster": "prod", "kind": "ConfigMap", "apiversion": "v1", "snapshotid": snapshotID,
				"snapshotcount": "3"},
		},
		{
			name: "snapshot-end-unpublished",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.SnapshotEnd, Resource: configMaps, SnapshotID: snapshotID,
					SnapshotCount: 2, SnapshotUnpublished: []string{"default/huge", "team_a/x:y"}, ObservedAt: observedAt}
			},
			subject: "kubebridge.prod.core.v1.configmaps._snapshot.end",
			id:      "configmaps.v1/" + snapshotID + "/snapshot.end",
			ceType:  "io.kubebridge.snapshot.end",
			source:  "k8s://prod/api/v1/configmaps",
			ext: map[string]string{"cluster": "prod", "kind": "ConfigMap", "apiversion": "v1", "snapshotid": snapshotID,
				"snapshotcount": "2", "unpublished": "default.huge team%5Fa.x%3Ay"},
		},
		{
			name: "added-clusterrole",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Added, Resource: clusterRoles, Object: fooClusterRole(), ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.system%3Acontroller%3Afoo%2A%3E",
			id:        "clusterroles.v1.rbac.authorization.k8s.io/c0ffee00-1111-4222-8333-444455556666/123/added",
			ceType:    "io.kubebridge.object.added",
			source:    "k8s://prod/apis/rbac.authorization.k8s.io/v1/clusterroles",
			ceSubject: clusterRoleName,
			ext: objExt("ClusterRole", "rbac.authorization.k8s.io/v1", "", clusterRoleName,
				"c0ffee00-1111-4222-8333-444455556666", "123"),
		},
		{
			name: "added-crd-widget",
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Added, Resource: widgets, Object: gizmoWidget(), ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.example_com.v1.widgets.team-a.gizmo",
			id:        "widgets.v1.example.com/5e5e5e5e-aaaa-4bbb-8ccc-dddddddddddd/77/added",
			ceType:    "io.kubebridge.object.added",
			source:    "k8s://prod/apis/example.com/v1/namespaces/team-a/widgets",
			ceSubject: "team-a/gizmo",
			ext:       objExt("Widget", "example.com/v1", "team-a", "gizmo", "5e5e5e5e-aaaa-4bbb-8ccc-dddddddddddd", "77"),
		},
		{
			name: "added-secret-redacted",
			change: func(t testing.TB) informers.Change {
				return informers.Change{Verb: informers.Added, Resource: secrets, Object: redactedSecret(t), ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.core.v1.secrets.default.db-credentials",
			id:        "secrets.v1/9d9d9d9d-1234-4567-89ab-cdef01234567/555/added",
			ceType:    "io.kubebridge.object.added",
			source:    "k8s://prod/api/v1/namespaces/default/secrets",
			ceSubject: "default/db-credentials",
			ext:       objExt("Secret", "v1", "default", "db-credentials", "9d9d9d9d-1234-4567-89ab-cdef01234567", "555"),
		},
		{
			name:       "updated-truncated",
			maxPayload: 2048,
			change: func(testing.TB) informers.Change {
				return informers.Change{Verb: informers.Updated, Resource: configMaps,
					Object: bigConfigMap("101"), OldObject: bigConfigMap("100"), ObservedAt: observedAt}
			},
			subject:   "kubebridge.prod.core.v1.configmaps.default.big-config",
			id:        "configmaps.v1/b16b16b1-6b16-4b16-8b16-b16b16b16b16/101/updated",
			ceType:    "io.kubebridge.object.updated",
			source:    "k8s://prod/api/v1/namespaces/default/configmaps",
			ceSubject: "default/big-config",
			truncated: true,
			ext: objExt("ConfigMap", "v1", "default", "big-config", "b16b16b1-6b16-4b16-8b16-b16b16b16b16", "101",
				"truncated", "true"),
		},
	}
}

// TestCasesCoverEveryVerb keeps the case table honest: every verb, both
// FinalStateUnknown forms and truncation are exercised.
func TestCasesCoverEveryVerb(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range encodeCases() {
		c := tc.change(t)
		seen[string(c.Verb)] = true
		if c.FinalStateUnknown {
			seen["finalstateunknown"] = true
		}
		if tc.truncated {
			seen["truncated"] = true
		}
	}
	for _, want := range []string{
		string(informers.Added), string(informers.Updated), string(informers.Deleted),
		string(informers.SnapshotBegin), string(informers.SnapshotItem), string(informers.SnapshotEnd),
		"finalstateunknown", "truncated",
	} {
		if !seen[want] {
			t.Errorf("no case covers %s", want)
		}
	}
}
