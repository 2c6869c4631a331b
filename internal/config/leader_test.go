package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/config"
)

func TestLeaderElectionDefaults(t *testing.T) {
	dir := t.TempDir()
	saFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(saFile, []byte("from-sa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name          string
		env           map[string]string
		saFile        string
		wantNamespace string
		wantName      string
	}{
		{"off: nothing filled in", env(), saFile, "", ""},
		{"POD_NAMESPACE first", env("BRIDGE_LEADER_ELECTION", "true", "POD_NAMESPACE", "from-pod"), saFile, "from-pod", "kubebridge-default"},
		{"service account namespace", env("BRIDGE_LEADER_ELECTION", "true"), saFile, "from-sa", "kubebridge-default"},
		{"default namespace", env("BRIDGE_LEADER_ELECTION", "true"), missing, "default", "kubebridge-default"},
		{"name from the cluster", env("BRIDGE_LEADER_ELECTION", "true", "BRIDGE_CLUSTER_NAME", "prod-eu"), missing, "default", "kubebridge-prod-eu"},
		{"explicit", env("BRIDGE_LEADER_ELECTION", "true", "POD_NAMESPACE", "from-pod", "BRIDGE_LEASE_NAMESPACE", "ops", "BRIDGE_LEASE_NAME", "my-lease"), saFile, "ops", "my-lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer config.SetServiceAccountNamespaceFile(tc.saFile)()
			c, err := load(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.LeaseNamespace != tc.wantNamespace || c.LeaseName != tc.wantName {
				t.Errorf("lease %q/%q, want %q/%q", c.LeaseNamespace, c.LeaseName, tc.wantNamespace, tc.wantName)
			}
			if c.LeaseDuration != 15*time.Second || c.LeaseRenewDeadline != 10*time.Second || c.LeaseRetryPeriod != 2*time.Second {
				t.Errorf("durations %v/%v/%v, want 15s/10s/2s", c.LeaseDuration, c.LeaseRenewDeadline, c.LeaseRetryPeriod)
			}
		})
	}
}

func TestLeaderElectionProblems(t *testing.T) {
	defer config.SetServiceAccountNamespaceFile(filepath.Join(t.TempDir(), "missing"))()
	on := func(kv ...string) map[string]string {
		return env(append([]string{"BRIDGE_LEADER_ELECTION", "true"}, kv...)...)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		wants []want
	}{
		{"renew not below duration", on("BRIDGE_LEASE_DURATION", "10s", "BRIDGE_LEASE_RENEW_DEADLINE", "10s"), []want{p("BRIDGE_LEASE_RENEW_DEADLINE", "less than BRIDGE_LEASE_DURATION")}},
		{"retry not below renew", on("BRIDGE_LEASE_RENEW_DEADLINE", "2s"), []want{p("BRIDGE_LEASE_RETRY_PERIOD", "less than BRIDGE_LEASE_RENEW_DEADLINE")}},
		{"zero durations", on("BRIDGE_LEASE_DURATION", "0s", "BRIDGE_LEASE_RENEW_DEADLINE", "-1s", "BRIDGE_LEASE_RETRY_PERIOD", "0s"), []want{
			p("BRIDGE_LEASE_DURATION", "positive"), p("BRIDGE_LEASE_RENEW_DEADLINE", "positive"), p("BRIDGE_LEASE_RETRY_PERIOD", "positive")}},
		{"bad names", on("BRIDGE_LEASE_NAMESPACE", "Not_A_NS", "BRIDGE_LEASE_NAME", "bad name"), []want{p("BRIDGE_LEASE_NAMESPACE"), p("BRIDGE_LEASE_NAME")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.env)
			checkProblems(t, err, tc.wants)
		})
	}
	// Off, the election settings are not checked.
	if _, err := load(env("BRIDGE_LEASE_RENEW_DEADLINE", "20s")); err != nil {
		t.Errorf("election off: %v", err)
	}
}
