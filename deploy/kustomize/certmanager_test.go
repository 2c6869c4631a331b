package kustomize_test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kubebridge/kubebridge/internal/manifests"
)

// certificate is the part of a cert-manager Certificate this test reads.
type certificate struct {
	Kind     string
	Metadata struct{ Name, Namespace string }
	Spec     struct {
		SecretName  string
		IsCA        bool
		DNSNames    []string
		IPAddresses []string
		IssuerRef   struct{ Name, Kind string }
		Ca          *struct{ SecretName string } `json:"ca"`
		SelfSigned  *struct{}                    `json:"selfSigned"`
	}
}

// TestCertManagerComponent builds overlays/with-nats with
// components/cert-manager: a self-signed Issuer signs only the CA, a CA
// Issuer with that CA's Secret signs the rest, the Certificates write
// exactly the Secrets hack/nats-certs.sh writes, with the names the
// script's certificates carry, and every Secret the overlay mounts for TLS
// is one of them.
func TestCertManagerComponent(t *testing.T) {
	dir := t.TempDir()
	// kustomize takes the kustomizations it builds on by relative path.
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	k := "resources: [" + filepath.Join(root, "overlays", "with-nats") + "]\ncomponents: [" + filepath.Join(root, "components", "cert-manager") + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	built, err := manifests.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	issuers := map[string]certificate{}
	certs := map[string]certificate{} // by secretName
	mounted := map[string]bool{}
	for _, data := range built.Objects {
		var o certificate
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "Issuer":
			issuers[o.Metadata.Name] = o
		case "Certificate":
			certs[o.Spec.SecretName] = o
		case "Deployment", "StatefulSet":
			var w struct {
				Spec struct {
					Template struct {
						Spec struct {
							Volumes []struct{ Secret *struct{ SecretName string } }
						}
					}
				}
			}
			if err := json.Unmarshal(data, &w); err != nil {
				t.Fatal(err)
			}
			for _, v := range w.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					mounted[v.Secret.SecretName] = true
				}
			}
		}
	}
	var names []string
	for name := range certs {
		names = append(names, name)
	}
	certsDir := natsCerts(t)
	scripts, err := certsDir.Secrets()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(names); !slices.Equal(names, scripts) {
		t.Errorf("the Certificates write the Secrets %q, hack/nats-certs.sh %q", names, scripts)
	}
	for name := range mounted {
		if _, ok := certs[name]; !ok && name != "kubebridge-nats" {
			t.Errorf("the overlay mounts Secret %s, which no Certificate writes", name)
		}
	}
	ca, ok := certs["kubebridge-nats-ca"]
	if !ok || !ca.Spec.IsCA || issuers[ca.Spec.IssuerRef.Name].Spec.SelfSigned == nil {
		t.Fatalf("the CA's Certificate must be isCA, issued by a self-signed Issuer: %+v", ca)
	}
	for name, c := range certs {
		if name == ca.Spec.SecretName {
			continue
		}
		if is := issuers[c.Spec.IssuerRef.Name]; c.Spec.IssuerRef.Kind != "Issuer" || is.Spec.Ca == nil || is.Spec.Ca.SecretName != ca.Spec.SecretName {
			t.Errorf("Certificate %s: issued by %s %s, want the CA Issuer of Secret %s", c.Metadata.Name, c.Spec.IssuerRef.Kind, c.Spec.IssuerRef.Name, ca.Spec.SecretName)
		}
		script := scriptCert(t, certsDir.File(name, "tls.crt"))
		var ips []string
		for _, ip := range script.IPAddresses {
			ips = append(ips, ip.String())
		}
		if !slices.Equal(slices.Sorted(slices.Values(c.Spec.DNSNames)), slices.Sorted(slices.Values(script.DNSNames))) ||
			!slices.Equal(slices.Sorted(slices.Values(c.Spec.IPAddresses)), slices.Sorted(slices.Values(ips))) {
			t.Errorf("Certificate %s names %q %q, hack/nats-certs.sh's %q %q", c.Metadata.Name, c.Spec.DNSNames, c.Spec.IPAddresses, script.DNSNames, ips)
		}
	}
}

func scriptCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
