package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// tlsFile is a TLS file setting under the name it was given by: messages
// name the variable the operator set, whichever spelling that was.
type tlsFile struct {
	key, path string
}

// resolveTLSName keeps the nats CLI's variable (field cli) and its
// NATS_TLS_ spelling (field alias) as one setting: cli ends up holding the
// path either gave. Both set to different files is a problem, since
// neither can be known to be the one meant.
func resolveTLSName(cliKey, aliasKey string, cli, alias *string) (tlsFile, rule) {
	switch {
	case *alias == "":
		return tlsFile{cliKey, *cli}, rule{}
	case *cli == "":
		*cli = *alias
		return tlsFile{aliasKey, *alias}, rule{}
	}
	return tlsFile{cliKey, *cli}, rule{aliasKey, *cli != *alias,
		fmt.Sprintf("=%q: %s=%q names another file: set one of the two names, or both to the same file", *alias, cliKey, *cli)}
}

// natsTLSRules resolve the TLS files' two spellings, then check that the
// files hold what they should, so that a bad file is one clear line at
// start-up rather than a connection refused again and again.
func (c *Config) natsTLSRules() []rule {
	ca, caRule := resolveTLSName("NATS_CA", "NATS_TLS_CA", &c.NATSCA, &c.NATSTLSCA)
	cert, certRule := resolveTLSName("NATS_CERT", "NATS_TLS_CERT", &c.NATSCert, &c.NATSTLSCert)
	key, keyRule := resolveTLSName("NATS_KEY", "NATS_TLS_KEY", &c.NATSKey, &c.NATSTLSKey)
	rules := []rule{caRule, certRule, keyRule, caFileRule(ca)}
	return append(rules, keyPairRules(cert, key, time.Now())...)
}

// caFileRule is broken when the CA bundle cannot be read or holds no
// certificate: a pool without one would trust nothing.
func caFileRule(ca tlsFile) rule {
	if ca.path == "" {
		return rule{}
	}
	data, r := readTLSFile(ca)
	if r.broken {
		return r
	}
	return rule{ca.key, !x509.NewCertPool().AppendCertsFromPEM(data), fmt.Sprintf("=%q: holds no PEM certificate", ca.path)}
}

// keyPairRules check the client certificate and its key: set together,
// readable, a certificate, the key of that certificate, and not expired
// (the server would refuse it at every attempt).
func keyPairRules(cert, key tlsFile, now time.Time) []rule {
	if (cert.path == "") != (key.path == "") {
		set := cert
		if cert.path == "" {
			set = key
			cert.key = "NATS_CERT"
			if key.key == "NATS_TLS_KEY" {
				cert.key = "NATS_TLS_CERT"
			}
		}
		_, readRule := readTLSFile(set)
		return []rule{{cert.key, true, fmt.Sprintf(" and %s must be set together", pairName(cert.key))}, readRule}
	}
	if cert.path == "" {
		return nil
	}
	certPEM, certRule := readTLSFile(cert)
	keyPEM, keyRule := readTLSFile(key)
	if certRule.broken || keyRule.broken {
		return []rule{certRule, keyRule}
	}
	leaf, err := firstCertificate(certPEM)
	if err != nil {
		return []rule{{cert.key, true, fmt.Sprintf("=%q: %v", cert.path, err)}}
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return []rule{{key.key, true, fmt.Sprintf("=%q is not the key of %s=%q: %v", key.path, cert.key, cert.path, err)}}
	}
	return []rule{{cert.key, now.After(leaf.NotAfter),
		fmt.Sprintf("=%q: the certificate expired at %s", cert.path, leaf.NotAfter.UTC().Format(time.RFC3339))}}
}

// pairName is the key variable that goes with certificate variable k.
func pairName(k string) string {
	if k == "NATS_TLS_CERT" {
		return "NATS_TLS_KEY"
	}
	return "NATS_KEY"
}

// firstCertificate parses the first certificate of a PEM file: the one a
// client presents.
func firstCertificate(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("holds no PEM certificate")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// readTLSFile reads f; the rule is broken when it cannot be read.
func readTLSFile(f tlsFile) ([]byte, rule) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		if cause := errors.Unwrap(err); cause != nil {
			err = cause
		}
		return nil, rule{f.key, true, fmt.Sprintf("=%q: cannot read the file: %v", f.path, err)}
	}
	return data, rule{}
}
