package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate, PEM, as a client's or server's trust
	// bundle.
	File string
}

// Leaf describes a certificate to issue. A zero NotBefore or NotAfter is
// an hour before or after now.
type Leaf struct {
	CommonName string
	// Server makes a server certificate for 127.0.0.1 and localhost plus
	// DNSNames; otherwise a client certificate.
	Server    bool
	DNSNames  []string
	NotBefore time.Time
	NotAfter  time.Time
}

// Pair is where an issued certificate and its key were written.
type Pair struct {
	CertFile, KeyFile string
}

// NewCA makes a self-signed CA and writes its certificate as dir/name.crt.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	key := newKey(t)
	cert := sign(t, tmpl, tmpl, &key.PublicKey, key)
	ca := &CA{Cert: cert, key: key, File: filepath.Join(dir, name+".crt")}
	writePEM(t, ca.File, "CERTIFICATE", cert.Raw)
	return ca
}

// Issue signs a certificate with a fresh key and writes dir/name.crt and
// dir/name.key, replacing files of that name: issuing again under the
// same name is how a test rotates a certificate on disk.
func (ca *CA) Issue(t testing.TB, dir, name string, l Leaf) Pair {
	t.Helper()
	now := time.Now()
	if l.NotBefore.IsZero() {
		l.NotBefore = now.Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = now.Add(time.Hour)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: l.CommonName},
		NotBefore: l.NotBefore, NotAfter: l.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if l.Server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = append([]string{"localhost"}, l.DNSNames...)
	}
	key := newKey(t)
	cert := sign(t, tmpl, ca.Cert, &key.PublicKey, ca.key)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	writePEM(t, p.CertFile, "CERTIFICATE", cert.Raw)
	writePEM(t, p.KeyFile, "EC PRIVATE KEY", keyDER)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, parentKey *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
