package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Shard is this bridge's shard, as Load resolved it: the zero value when
// BRIDGE_SHARDS is 1.
func (c *Config) Shard() contract.Shard {
	i, err := strconv.Atoi(c.ShardIndex)
	if c.Shards <= 1 || err != nil || i < 0 || i >= c.Shards {
		return contract.Shard{}
	}
	return contract.Shard{Index: i, Count: c.Shards}
}

// ordinalRE is a StatefulSet pod's name: <statefulset>-<ordinal>.
var ordinalRE = regexp.MustCompile(`-([0-9]+)$`)

// resolveShard sets BRIDGE_SHARD, when it is unset with BRIDGE_SHARDS
// above 1, from the ordinal of the pod's name, and returns the name it
// read ("" when it read none).
func (c *Config) resolveShard(lookup envconfig.Lookuper) string {
	if c.Shards <= 1 || c.ShardIndex != "" {
		return ""
	}
	name := ""
	for _, k := range []string{"POD_NAME", "HOSTNAME"} {
		if v, ok := lookup.Lookup(k); ok && strings.TrimSpace(v) != "" {
			name = strings.TrimSpace(v)
			break
		}
	}
	if m := ordinalRE.FindStringSubmatch(name); m != nil {
		if ordinal, err := strconv.Atoi(m[1]); err == nil {
			c.ShardIndex = strconv.Itoa(ordinal % c.Shards)
		}
	}
	return name
}

// shardRules check BRIDGE_SHARDS and BRIDGE_SHARD once resolveShard has
// read the pod's name, podName.
func (c *Config) shardRules(podName string) []rule {
	sharded := c.Shards > 1
	return []rule{
		{"BRIDGE_SHARDS", c.Shards < 1, fmt.Sprintf("=%d: must be at least 1", c.Shards)},
		{"BRIDGE_SHARD", c.Shards == 1 && c.ShardIndex != "" && c.ShardIndex != "0", fmt.Sprintf("=%q: must be 0, or unset, with BRIDGE_SHARDS=1", c.ShardIndex)},
		{"BRIDGE_SHARD", sharded && c.ShardIndex != "" && !isIndex(c.ShardIndex, c.Shards), fmt.Sprintf("=%q: must be a shard index from 0 to %d (BRIDGE_SHARDS=%d)", c.ShardIndex, c.Shards-1, c.Shards)},
		{"BRIDGE_SHARD", sharded && c.ShardIndex == "", fmt.Sprintf(": unset with BRIDGE_SHARDS=%d, and the pod name (POD_NAME or HOSTNAME: %q) ends in no ordinal such as -2: set BRIDGE_SHARD, or run the bridge as a StatefulSet", c.Shards, podName)},
	}
}

// isIndex reports whether s is written as an index from 0 to n-1 is:
// decimal, without sign or leading zeros.
func isIndex(s string, n int) bool {
	i, err := strconv.Atoi(s)
	return err == nil && i >= 0 && i < n && strconv.Itoa(i) == s
}
