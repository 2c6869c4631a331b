package kustomize_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"os"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubebridge/kubebridge/internal/natsconf"
)

// bridgeTLSVars are the bridge's TLS settings, each a file.
var bridgeTLSVars = []string{"NATS_CA", "NATS_CERT", "NATS_KEY"}

// checkNATSTLS: every link of the NATS cluster is TLS, with the
// certificates of the Secrets hack/nats-certs.sh (and
// components/cert-manager) make: the client port serves nats-server-tls,
// the routes nats-routes-tls with mutual TLS, and the bridge connects with
// tls://, trusts the servers' CA for the Service's name, and holds a client
// certificate, from files on its mounted Secrets, that the servers' CA
// accepts.
func checkNATSTLS(t *testing.T, b *build, ss *appsv1.StatefulSet, opts *server.Options, certs natsconf.Certs) {
	t.Helper()
	if opts.TLSConfig == nil {
		t.Fatal("the client port serves no TLS: nats.conf has no tls {} block")
	}
	serverCert := servedCert(t, "the client port", opts.TLSConfig, certs.File("nats-server-tls", "tls.crt"))
	routes := opts.Cluster.TLSConfig
	if routes == nil {
		t.Fatal("the routes have no TLS: nats.conf's cluster has no tls {} block")
	}
	routeCert := servedCert(t, "the route port", routes, certs.File("nats-routes-tls", "tls.crt"))
	if routes.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("routes: client authentication %v, want mutual TLS", routes.ClientAuth)
	}
	// A route's two ends: the server soliciting it checks the name of the
	// route's URL, the one accepting it checks the client certificate.
	for _, r := range opts.Routes {
		verifyCert(t, "the routes' certificate, as the server of "+r.Host, routeCert, routes.RootCAs, r.Hostname(), x509.ExtKeyUsageServerAuth)
		verifyCert(t, "the routes' certificate, as the client of "+r.Host, routeCert, routes.ClientCAs, "", x509.ExtKeyUsageClientAuth)
	}

	u, files := bridgeTLSFiles(t, b, certs)
	if files == nil {
		return
	}
	ca, err := os.ReadFile(files["NATS_CA"])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("NATS_CA: %s holds no certificate", files["NATS_CA"])
	}
	verifyCert(t, "the client port's certificate, as the bridge sees it", serverCert, roots, u.Hostname(), x509.ExtKeyUsageServerAuth)
	pair, err := tls.LoadX509KeyPair(files["NATS_CERT"], files["NATS_KEY"])
	if err != nil {
		t.Fatalf("NATS_CERT and NATS_KEY: %v", err)
	}
	client, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// Unchecked until nats.conf's tls has verify: true, but then the
	// bridge's certificate must pass.
	verifyCert(t, "the bridge's client certificate", client, opts.TLSConfig.ClientCAs, "", x509.ExtKeyUsageClientAuth)
}

// servedCert returns the certificate cfg serves, which must be the one
// in file.
func servedCert(t *testing.T, what string, cfg *tls.Config, file string) *x509.Certificate {
	t.Helper()
	if len(cfg.Certificates) != 1 {
		t.Fatalf("%s: %d certificates, want 1", what, len(cfg.Certificates))
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(want)
	if block == nil || !bytes.Equal(block.Bytes, cfg.Certificates[0].Certificate[0]) {
		t.Errorf("%s serves another certificate than %s", what, file)
	}
	c, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verifyCert checks that c is valid for name ("": any) and usage, under
// roots.
func verifyCert(t *testing.T, what string, c *x509.Certificate, roots *x509.CertPool, name string, usage x509.ExtKeyUsage) {
	t.Helper()
	if roots == nil {
		t.Errorf("%s: no CA to verify it (ca_file)", what)
		return
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// bridgeTLSFiles returns the bridge's NATS_URL and, for each of
// bridgeTLSVars, the file hack/nats-certs.sh wrote for the Secret key it
// names; nil (and errors) when one is not on a mounted Secret of the
// script's, or NATS_URL is not tls://.
func bridgeTLSFiles(t *testing.T, b *build, certs natsconf.Certs) (*url.URL, map[string]string) {
	t.Helper()
	bc := bridgeOf(t, b)
	env, _ := environment(t, b, bc)
	u, err := url.Parse(env["NATS_URL"])
	if err != nil || u.Scheme != "tls" {
		t.Errorf("the bridge's NATS_URL=%s: want tls://", env["NATS_URL"])
		return nil, nil
	}
	files := map[string]string{}
	for _, k := range bridgeTLSVars {
		secret, key, ok := natsconf.SecretFile(&bc.pod.Spec, bc.container, env[k])
		if !ok {
			t.Errorf("the bridge's %s=%q is no file of a Secret mounted into its container", k, env[k])
			continue
		}
		files[k] = certs.File(secret, key)
		if files[k] == "" {
			t.Errorf("the bridge's %s=%s is on Secret %s, which neither hack/nats-certs.sh nor components/cert-manager makes", k, env[k], secret)
		} else if _, err := os.Stat(files[k]); err != nil {
			t.Errorf("the bridge's %s=%s: Secret %s has no key %s (hack/nats-certs.sh, components/cert-manager)", k, env[k], secret, key)
		}
	}
	if len(files) != len(bridgeTLSVars) || t.Failed() {
		return nil, nil
	}
	return u, files
}
