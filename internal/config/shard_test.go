package config_test

import (
	"path/filepath"
	"testing"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

func TestShard(t *testing.T) {
	defer config.SetServiceAccountNamespaceFile(filepath.Join(t.TempDir(), "missing"))()
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      contract.Shard
		wantLease string
	}{
		{"one shard", env("BRIDGE_LEADER_ELECTION", "true", "HOSTNAME", "kubebridge-3"), contract.Shard{}, "kubebridge-default"},
		{"explicit", env("BRIDGE_SHARDS", "3", "BRIDGE_SHARD", "2", "HOSTNAME", "kubebridge-0"), contract.Shard{Index: 2, Count: 3}, ""},
		{"from POD_NAME", env("BRIDGE_SHARDS", "3", "POD_NAME", "kb-shards-4", "HOSTNAME", "kubebridge-0"), contract.Shard{Index: 1, Count: 3}, ""},
		{"from HOSTNAME", env("BRIDGE_SHARDS", "2", "HOSTNAME", "kubebridge-3"), contract.Shard{Index: 1, Count: 2}, ""},
		{"a Lease per shard", env("BRIDGE_SHARDS", "3", "BRIDGE_SHARD", "1", "BRIDGE_LEADER_ELECTION", "true", "BRIDGE_CLUSTER_NAME", "prod"), contract.Shard{Index: 1, Count: 3}, "kubebridge-prod-1-of-3"},
		{"the Lease named", env("BRIDGE_SHARDS", "3", "BRIDGE_SHARD", "1", "BRIDGE_LEADER_ELECTION", "true", "BRIDGE_LEASE_NAME", "mine"), contract.Shard{Index: 1, Count: 3}, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Shard(); got != tc.want {
				t.Errorf("shard %+v, want %+v", got, tc.want)
			}
			if c.LeaseName != tc.wantLease {
				t.Errorf("Lease %q, want %q", c.LeaseName, tc.wantLease)
			}
		})
	}
}

func TestShardProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		wants []want
	}{
		{"no shards", env("BRIDGE_SHARDS", "0"), []want{p("BRIDGE_SHARDS", "at least 1")}},
		{"index out of range", env("BRIDGE_SHARDS", "3", "BRIDGE_SHARD", "3"), []want{p("BRIDGE_SHARD", "0 to 2")}},
		{"index not canonical", env("BRIDGE_SHARDS", "3", "BRIDGE_SHARD", "01"), []want{p("BRIDGE_SHARD", "0 to 2")}},
		{"index without shards", env("BRIDGE_SHARD", "1"), []want{p("BRIDGE_SHARD", "BRIDGE_SHARDS=1")}},
		{"no ordinal", env("BRIDGE_SHARDS", "3", "HOSTNAME", "my-laptop"), []want{p("BRIDGE_SHARD", "my-laptop", "set BRIDGE_SHARD")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.env)
			checkProblems(t, err, tc.wants)
		})
	}
}
