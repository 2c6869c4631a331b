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

// validateShard resolves BRIDGE_SHARDS and BRIDGE_SHARD, the latter from
// the pod's ordinal when unset.
func (c *Config) validateShard(lookup envconfig.Lookuper) []string {
	if c.Shards < 1 {
		return []string{fmt.Sprintf("BRIDGE_SHARDS=%d: must be at least 1", c.Shards)}
	}
	if c.Shards == 1 {
		if c.ShardIndex != "" && c.ShardIndex != "0" {
			return []string{fmt.Sprintf("BRIDGE_SHARD=%q: must be 0, or unset, with BRIDGE_SHARDS=1", c.ShardIndex)}
		}
		return nil
	}
	if c.ShardIndex != "" {
		if i, err := strconv.Atoi(c.ShardIndex); err != nil || i < 0 || i >= c.Shards || strconv.Itoa(i) != c.ShardIndex {
			return []string{fmt.Sprintf("BRIDGE_SHARD=%q: must be a shard index from 0 to %d (BRIDGE_SHARDS=%d)", c.ShardIndex, c.Shards-1, c.Shards)}
		}
		return nil
	}
	name := ""
	for _, k := range []string{"POD_NAME", "HOSTNAME"} {
		if v, ok := lookup.Lookup(k); ok && strings.TrimSpace(v) != "" {
			name = strings.TrimSpace(v)
			break
		}
	}
	m := ordinalRE.FindStringSubmatch(name)
	ordinal, err := 0, error(nil)
	if m != nil {
		ordinal, err = strconv.Atoi(m[1])
	}
	if m == nil || err != nil {
		return []string{fmt.Sprintf("BRIDGE_SHARD: unset with BRIDGE_SHARDS=%d, and the pod name (POD_NAME or HOSTNAME: %q) ends in no ordinal such as -2: set BRIDGE_SHARD, or run the bridge as a StatefulSet", c.Shards, name)}
	}
	c.ShardIndex = strconv.Itoa(ordinal % c.Shards)
	return nil
}
