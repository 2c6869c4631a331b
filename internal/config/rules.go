package config

import (
	"fmt"
	"net"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/sethvargo/go-envconfig"
	"k8s.io/apimachinery/pkg/util/validation"
)

// rule is one check of a decoded Config: when broken, the problem reported
// is key followed by message, so that every line starts with the variable
// it is about.
type rule struct {
	key     string
	broken  bool
	message string
}

// brokenRules is the one loop every check goes through: the problems of
// the broken rules, in order.
func brokenRules(rules ...[]rule) []string {
	var p []string
	for _, r := range slices.Concat(rules...) {
		if r.broken {
			p = append(p, r.key+r.message)
		}
	}
	return p
}

// validate checks the decoded configuration as a whole; bad are the
// variables decode reported already. It fills in what other variables
// decide: the shard from the pod's name, then the Lease, whose default
// name names the shard.
func (c *Config) validate(lookup envconfig.Lookuper, bad map[string]bool) []string {
	set := func(key string) bool { v, ok := lookup.Lookup(key); return ok && v != "" }
	podName := c.resolveShard(lookup)
	c.resolveLease(lookup)
	return brokenRules(
		c.requiredRules(bad),
		c.nameRules(bad),
		c.durationRules(),
		c.limitRules(),
		c.streamRules(),
		c.natsRules(set),
		c.natsAuthRules(set),
		c.natsTLSRules(),
		c.shardRules(podName),
		c.leaseRules(),
	)
}

var (
	prefixRE     = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	streamNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

func (c *Config) nameRules(bad map[string]bool) []rule {
	rules := []rule{
		{"BRIDGE_CLUSTER_NAME", !isDNSLabel(c.ClusterName), fmt.Sprintf("=%q: must be a DNS label: lowercase letters, digits and '-', at most 63", c.ClusterName)},
		{"BRIDGE_SUBJECT_PREFIX", !prefixRE.MatchString(c.SubjectPrefix), fmt.Sprintf("=%q: must be dot-separated tokens of letters, digits, '-' and '_' (no wildcards)", c.SubjectPrefix)},
		{"BRIDGE_STREAM_NAME", !streamNameRE.MatchString(c.StreamName), fmt.Sprintf("=%q: must be letters, digits, '-' and '_'", c.StreamName)},
		{"BRIDGE_HTTP_ADDR", c.HTTPAddr != "off" && !isHostPort(c.HTTPAddr), fmt.Sprintf("=%q: must be host:port (e.g. :8080) or off", c.HTTPAddr)},
	}
	for _, ns := range c.Namespaces {
		errs := validation.IsDNS1123Label(ns)
		rules = append(rules, rule{"BRIDGE_NAMESPACES", len(errs) > 0, fmt.Sprintf(": %q is not a namespace name: %s", ns, first(errs))})
	}
	return rules
}

// requiredRules report every required variable that is unset, or set to
// nothing (BRIDGE_RESOURCES=";"), and not reported by decode already. The
// configuration file's resources, read by then, stand in for
// BRIDGE_RESOURCES.
func (c *Config) requiredRules(bad map[string]bool) []rule {
	var rules []rule
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		tag := parseEnvTag(v.Type().Field(i))
		if tag.required {
			rules = append(rules, rule{tag.key, v.Field(i).IsZero() && !bad[tag.key], missing(tag.key)})
		}
	}
	return rules
}

func (c *Config) durationRules() []rule {
	return []rule{
		nonNegative("BRIDGE_RESYNC_PERIOD", c.ResyncPeriod),
		nonNegative("BRIDGE_STREAM_MAX_AGE", c.StreamMaxAge),
		nonNegative("BRIDGE_SHARD_SELECTOR_REFRESH", c.ShardSelectorRefresh),
		nonNegative("BRIDGE_PUBLISH_LINGER", c.PublishLinger),
		positive("BRIDGE_PUBLISH_ACK_TIMEOUT", c.PublishAckTimeout),
		positive("BRIDGE_PUBLISH_MAX_BACKOFF", c.PublishMaxBackoff),
		positive("BRIDGE_SHUTDOWN_TIMEOUT", c.ShutdownTimeout),
		positive("BRIDGE_STREAM_DUPLICATE_WINDOW", c.StreamDuplicateWindow),
		{"BRIDGE_PUBLISH_MAX_BACKOFF", c.PublishMaxBackoff > 0 && c.PublishMaxBackoff < 100*time.Millisecond, fmt.Sprintf("=%v: must be at least 100ms, the first retry's wait", c.PublishMaxBackoff)},
		// JetStream's TTLs are whole seconds, at least one: a fraction would
		// be cut off by the server, so it is refused here instead.
		{"BRIDGE_TOMBSTONE_TTL", c.TombstoneTTL != 0 && (c.TombstoneTTL < time.Second || c.TombstoneTTL%time.Second != 0), fmt.Sprintf("=%v: must be 0 (never expire) or whole seconds, at least 1s", c.TombstoneTTL)},
	}
}

func (c *Config) limitRules() []rule {
	return []rule{
		{"BRIDGE_PUBLISH_BUFFER_BYTES", c.PublishBufferBytes < 64<<10, fmt.Sprintf("=%d: must be at least 64Ki", c.PublishBufferBytes)},
		{"BRIDGE_PUBLISH_WINDOW", c.PublishWindow < 1, fmt.Sprintf("=%d: must be at least 1", c.PublishWindow)},
		{"BRIDGE_ENCODE_WORKERS", c.EncodeWorkers < 0, fmt.Sprintf("=%d: must not be negative", c.EncodeWorkers)},
		{"BRIDGE_LOG_VERBOSITY", c.LogVerbosity < 0, fmt.Sprintf("=%d: must not be negative", c.LogVerbosity)},
		{"BRIDGE_KUBE_QPS", c.KubeQPS <= 0, fmt.Sprintf("=%v: must be positive", c.KubeQPS)},
		{"BRIDGE_KUBE_BURST", c.KubeBurst < 1, fmt.Sprintf("=%d: must be at least 1", c.KubeBurst)},
	}
}

func (c *Config) streamRules() []rule {
	return []rule{
		{"BRIDGE_STREAM_STORAGE", c.StreamStorage != "file" && c.StreamStorage != "memory", fmt.Sprintf("=%q: must be file or memory", c.StreamStorage)},
		{"BRIDGE_STREAM_REPLICAS", c.StreamReplicas < 1 || c.StreamReplicas > 5, fmt.Sprintf("=%d: must be between 1 and 5", c.StreamReplicas)},
		positiveOrUnlimited("BRIDGE_STREAM_MAX_BYTES", c.StreamMaxBytes),
		positiveOrUnlimited("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", c.StreamMaxMsgsPerSubject),
	}
}

func nonNegative(key string, d time.Duration) rule {
	return rule{key, d < 0, fmt.Sprintf("=%v: must not be negative", d)}
}

func positive(key string, d time.Duration) rule {
	return rule{key, d <= 0, fmt.Sprintf("=%v: must be positive", d)}
}

// positiveOrUnlimited is a JetStream limit, where -1 means none.
func positiveOrUnlimited(key string, n int64) rule {
	return rule{key, n < -1 || n == 0, fmt.Sprintf("=%d: must be positive or -1 (unlimited)", n)}
}

func isDNSLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

func isHostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != ""
}

// first is the first of a validation's messages, "" when there are none.
func first(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return errs[0]
}
