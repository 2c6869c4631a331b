package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestSecretsRedacted publishes Secrets through all four paths (snapshot
// item, added, updated with oldObject, deleted) with the default
// redaction: no value, in clear or base64, is in any stored byte, while
// the keys are.
func TestSecretsRedacted(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secrets := h.cs.CoreV1().Secrets(h.ns)

	var values []string
	secretValue := func(what string) string {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		v := what + "-" + hex.EncodeToString(b)
		values = append(values, v)
		return v
	}
	newSecret := func(name string) *corev1.Secret {
		data := map[string][]byte{"password": []byte(secretValue("pw"))}
		str := map[string]string{"token": secretValue("tok")}
		// What `kubectl apply` leaves behind: the manifest, values included.
		applied, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "stringData": map[string]string{"applied-key": secretValue("applied")}})
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied), "note": "visible"}},
			Data:       data,
			StringData: str,
		}
	}
	if _, err := secrets.Create(ctx, newSecret("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	h.startBridge(map[string]string{"BRIDGE_RESOURCES": "secrets"})

	typ := h.typeSubject("", "v1", "secrets")
	s, err := secrets.Create(ctx, newSecret("live"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The update waits for the added event, so the two are not merged
	// into one added event (the test wants all four kinds).
	h.waitEvent(typ+"."+h.ns+".live", contract.TypeAdded, s.ResourceVersion)
	s = s.DeepCopy()
	s.Data["password"] = []byte(secretValue("pw2"))
	s.Data["extra"] = []byte(secretValue("extra"))
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	msgs := h.waitStream("all four kinds of secret events", 30*time.Second, func(m []replay.Message) string {
		for _, want := range []string{contract.TypeSnapshotItem, contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted} {
			if len(ofType(m, want, typ+".")) == 0 {
				return "no " + want
			}
		}
		return ""
	})
	defer logOnFailure(t, msgs)

	// Make sure the values really were in the apiserver (so that their
	// absence from the stream means something).
	got, err := secrets.Get(ctx, "live", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got.Data["token"]), "tok-") || !strings.Contains(got.Annotations["kubectl.kubernetes.io/last-applied-configuration"], "applied-") {
		t.Fatalf("the apiserver does not hold the values the test set: %v", got)
	}

	for _, v := range values {
		forms := map[string]bool{v: true}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forms[enc.EncodeToString([]byte(v))] = true
		}
		for form := range forms {
			if where := rawContains(msgs, []byte(form)); len(where) > 0 {
				t.Errorf("secret value %q (as %q) published: %s", v, form, strings.Join(where, ", "))
			}
		}
	}
	for _, key := range []string{`"password"`, `"token"`, `"extra"`, `"note":"visible"`} {
		if len(rawContains(msgs, []byte(key))) == 0 {
			t.Errorf("%s is in no message; keys (and other metadata) must be kept", key)
		}
	}
	// The data of each event: keys with null values, no last-applied
	// annotation.
	for _, m := range msgs {
		if len(m.Data) == 0 || m.Event.Type() == contract.TypeTerm {
			continue
		}
		var d map[string]*corev1.Secret
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatalf("seq %d: %v", m.Seq, err)
		}
		for which, sec := range d {
			if sec == nil {
				continue
			}
			if _, ok := sec.Data["password"]; !ok {
				t.Errorf("seq %d %s: key password missing: %v", m.Seq, which, sec.Data)
			}
			for k, v := range sec.Data {
				if v != nil {
					t.Errorf("seq %d %s: data[%s] = %q, want null", m.Seq, which, k, v)
				}
			}
			if _, ok := sec.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				t.Errorf("seq %d %s: last-applied annotation published", m.Seq, which)
			}
		}
	}
}
