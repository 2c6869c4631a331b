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

// resolveLease fills in the Lease's namespace and name when leader
// election is on and they are unset.
func (c *Config) resolveLease(lookup envconfig.Lookuper) {
	if !c.LeaderElection {
		return
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
}

// leaseRules check the election settings when leader election is on.
func (c *Config) leaseRules() []rule {
	if !c.LeaderElection {
		return nil
	}
	nsErrs := validation.IsDNS1123Label(c.LeaseNamespace)
	nameErrs := validation.IsDNS1123Subdomain(c.LeaseName)
	return []rule{
		{"BRIDGE_LEASE_NAMESPACE", len(nsErrs) > 0, fmt.Sprintf("=%q: is not a namespace name: %s", c.LeaseNamespace, first(nsErrs))},
		{"BRIDGE_LEASE_NAME", len(nameErrs) > 0, fmt.Sprintf("=%q: is not a Lease name: %s", c.LeaseName, first(nameErrs))},
		positive("BRIDGE_LEASE_DURATION", c.LeaseDuration),
		positive("BRIDGE_LEASE_RENEW_DEADLINE", c.LeaseRenewDeadline),
		positive("BRIDGE_LEASE_RETRY_PERIOD", c.LeaseRetryPeriod),
		{"BRIDGE_LEASE_RENEW_DEADLINE", c.LeaseRenewDeadline > 0 && c.LeaseRenewDeadline >= c.LeaseDuration, fmt.Sprintf("=%v: must be less than BRIDGE_LEASE_DURATION=%v, or a standby can take the Lease while the leader still publishes", c.LeaseRenewDeadline, c.LeaseDuration)},
		{"BRIDGE_LEASE_RETRY_PERIOD", c.LeaseRetryPeriod > 0 && c.LeaseRenewDeadline > 0 && c.LeaseRetryPeriod >= c.LeaseRenewDeadline, fmt.Sprintf("=%v: must be less than BRIDGE_LEASE_RENEW_DEADLINE=%v", c.LeaseRetryPeriod, c.LeaseRenewDeadline)},
	}
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
