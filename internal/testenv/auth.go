package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
)

// Identity of the admin user behind the bearer token.
const (
	AdminUser  = "admin"
	adminUID   = "admin-uid"
	adminGroup = "system:masters"
)

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeTokenFile writes a --token-auth-file granting token cluster-admin
// (system:masters) rights.
func writeTokenFile(path, token string) error {
	line := fmt.Sprintf("%s,%s,%s,%s\n", token, AdminUser, adminUID, adminGroup)
	return os.WriteFile(path, []byte(line), 0o600)
}

// writeServiceAccountKeys generates the ECDSA P-256 key pair kube-apiserver
// uses to sign and verify service-account tokens, as PEM files.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeKubeconfig writes a kubeconfig (JSON, which is valid YAML) with a
// single context using a bearer token and a CA file.
func writeKubeconfig(path, server, caFile, token string) error {
	cfg := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": "testenv",
		"clusters": []map[string]any{{
			"name":    "testenv",
			"cluster": map[string]any{"server": server, "certificate-authority": caFile},
		}},
		"users": []map[string]any{{
			"name": AdminUser,
			"user": map[string]any{"token": token},
		}},
		"contexts": []map[string]any{{
			"name":    "testenv",
			"context": map[string]any{"cluster": "testenv", "user": AdminUser},
		}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
