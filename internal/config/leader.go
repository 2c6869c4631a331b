package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serviceAccountNamespaceFile holds the pod's namespace in a pod that
// mounts its service account token.
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// validateLeader fills in the Lease's namespace and name when leader
// election is on and they are unset, and checks the election settings.
func (c *Config) validateLeader(lookup envconfig.Lookuper) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if !c.LeaderElection {
		return nil
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = podNamespace(lookup)
	}
	if c.LeaseName == "" {
		c.LeaseName = "kubebridge-" + c.ClusterName
		if sh := c.Shard(); sh.Sharded() {
			// Each shard elects its own leader.
			c.LeaseName += "-" + strconv.Itoa(sh.Index) + "-of-" + strconv.Itoa(sh.Count)
		}
	}
	if errs := validation.IsDNS1123Label(c.LeaseNamespace); len(errs) > 0 {
		add("BRIDGE_LEASE_NAMESPACE=%q: is not a namespace name: %s", c.LeaseNamespace, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(c.LeaseName); len(errs) > 0 {
		add("BRIDGE_LEASE_NAME=%q: is not a Lease name: %s", c.LeaseName, errs[0])
	}
	for _, x := range []struct {
		key string
		v   any
		ok  bool
	}{
		{"BRIDGE_LEASE_DURATION", c.LeaseDuration, c.LeaseDuration > 0},
		{"BRIDGE_LEASE_RENEW_DEADLINE", c.LeaseRenewDeadline, c.LeaseRenewDeadline > 0},
		{"BRIDGE_LEASE_RETRY_PERIOD", c.LeaseRetryPeriod, c.LeaseRetryPeriod > 0},
	} {
		if !x.ok {
			add("%s=%v: must be positive", x.key, x.v)
		}
	}
	if c.LeaseRenewDeadline > 0 && c.LeaseRenewDeadline >= c.LeaseDuration {
		add("BRIDGE_LEASE_RENEW_DEADLINE=%v: must be less than BRIDGE_LEASE_DURATION=%v, or a standby can take the Lease while the leader still publishes", c.LeaseRenewDeadline, c.LeaseDuration)
	}
	if c.LeaseRetryPeriod > 0 && c.LeaseRenewDeadline > 0 && c.LeaseRetryPeriod >= c.LeaseRenewDeadline {
		add("BRIDGE_LEASE_RETRY_PERIOD=%v: must be less than BRIDGE_LEASE_RENEW_DEADLINE=%v", c.LeaseRetryPeriod, c.LeaseRenewDeadline)
	}
	return p
}

// podNamespace is POD_NAMESPACE (the downward API), else the namespace of
// the pod's service account, else "default".
func podNamespace(lookup envconfig.Lookuper) string {
	if v, ok := lookup.Lookup("POD_NAMESPACE"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}
