package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// Config is everything the bridge reads from its environment. The env tag
// names the variable and its default, or says it is required, in
// go-envconfig's syntax; the help tag is what --help prints.
type Config struct {
	ConfigFile string    `env:"BRIDGE_CONFIG" help:"Path of the configuration file (YAML, apiVersion kubebridge.io/v1alpha1, kind BridgeConfiguration; README, The configuration file): its resources list the types to watch, as BRIDGE_RESOURCES does, each with optional publishing rules (match, ignoreFields, when, patch, oldObject). Give the types here or in BRIDGE_RESOURCES, not both."`
	Resources  Resources `env:"BRIDGE_RESOURCES, required" help:"Resource types to watch, ';' or newline separated, each as kubectl names it with optional '|'-separated scope: 'configmaps; deploy.apps | namespaces=web,api; pods | labels=app in (web,api) | fields=status.phase=Running'. Required, unless the file of BRIDGE_CONFIG lists resources."`
	Namespaces []string  `env:"BRIDGE_NAMESPACES" help:"Comma-separated namespaces watched by every namespaced type without its own namespaces=; empty means all namespaces."`

	ClusterName   string `env:"BRIDGE_CLUSTER_NAME, default=default" help:"Name of this cluster in subjects, the event source and the cluster extension (a DNS label)."`
	SubjectPrefix string `env:"BRIDGE_SUBJECT_PREFIX, default=kubebridge" help:"First token(s) of every subject: <prefix>.<cluster>.<group>.<version>.<resource>.<namespace>.<name>."`

	ResyncPeriod       time.Duration `env:"BRIDGE_RESYNC_PERIOD, default=1h" help:"How often each type's full snapshot is published again after the start-up one; 0 disables periodic snapshots."`
	PublishBufferBytes ByteSize      `env:"BRIDGE_PUBLISH_BUFFER_BYTES, default=16Mi" help:"Bytes of encoded events buffered for and in flight to JetStream, as a quantity (16Mi, 500k). When spent, changes wait per object and coalesce; nothing is dropped. Keep well below the pod's memory limit."`
	EncodeWorkers      int           `env:"BRIDGE_ENCODE_WORKERS, default=0" help:"Goroutines encoding events in parallel (order is kept); 0 means one per CPU."`
	PublishWindow      int           `env:"BRIDGE_PUBLISH_WINDOW, default=512" help:"Most JetStream publishes awaiting acknowledgement at once."`
	PublishAckTimeout  time.Duration `env:"BRIDGE_PUBLISH_ACK_TIMEOUT, default=5s" help:"How long to wait for a JetStream acknowledgement before retrying a publish."`
	PublishLinger      time.Duration `env:"BRIDGE_PUBLISH_LINGER, default=20ms" help:"When changes come at least four times per this long, how long the first after a wait waits for others to be encoded and published with it (as a Kafka producer's linger.ms): each event may be up to this much later, and a steady trickle of changes costs less CPU. A change after a longer quiet spell, and a busy bridge, never wait; a second change of an object that waits ends the linger instead of merging with it. 0: every change is taken at once."`
	PublishMaxBackoff  time.Duration `env:"BRIDGE_PUBLISH_MAX_BACKOFF, default=5s" help:"Longest wait between retries of a failed publish (retries start at 100ms and double)."`
	ShutdownTimeout    time.Duration `env:"BRIDGE_SHUTDOWN_TIMEOUT, default=20s" help:"On SIGTERM/SIGINT, how long to wait for queued events to be acknowledged before exiting."`
	StripManagedFields bool          `env:"BRIDGE_STRIP_MANAGED_FIELDS, default=true" help:"Remove metadata.managedFields before objects are cached and published."`
	StripLastApplied   bool          `env:"BRIDGE_STRIP_LAST_APPLIED, default=true" help:"Remove the kubectl.kubernetes.io/last-applied-configuration annotation before objects are cached and published."`
	RedactSecrets      bool          `env:"BRIDGE_REDACT_SECRETS, default=true" help:"Publish Secrets with the values of data and stringData removed (keys kept). Set to false to publish values."`
	LogVerbosity       int           `env:"BRIDGE_LOG_VERBOSITY, default=0" help:"klog verbosity, as -v: 0 start-up and problems, 2 snapshots and reconnects, 4 every retry, 6 every event."`

	HTTPAddr string `env:"BRIDGE_HTTP_ADDR, default=:8080" help:"Listen address (host:port) of /healthz, /readyz and /metrics; off disables the listener."`
	PProf    bool   `env:"BRIDGE_PPROF, default=false" help:"Also serve Go's runtime profiles (net/http/pprof) under /debug/pprof/ on BRIDGE_HTTP_ADDR, for profiling the bridge under load (docs/performance.md). Off by default: a profile shows what the process holds, and taking one costs CPU."`

	KubeContext string  `env:"BRIDGE_KUBE_CONTEXT" help:"Kubeconfig context to use instead of the current one. Kubernetes access: in-cluster config when running in a pod without KUBECONFIG, else KUBECONFIG or ~/.kube/config, as kubectl."`
	KubeQPS     float32 `env:"BRIDGE_KUBE_QPS, default=50" help:"Client-side rate limit for API requests (queries per second)."`
	KubeBurst   int     `env:"BRIDGE_KUBE_BURST, default=100" help:"Client-side burst for API requests."`
	// KubeCompression is off by default, as kube-controller-manager and
	// kube-scheduler run: gzip costs CPU at both ends of a cluster network
	// and saves bandwidth that is rarely short there.
	KubeCompression bool `env:"BRIDGE_KUBE_COMPRESSION, default=false" help:"Ask the API server to gzip its responses, lists and watches. Off by default, as in kube-controller-manager and kube-scheduler: on a cluster network gzip costs CPU on the API server and on the bridge (docs/performance.md). Turn it on for a bridge that reaches the API server over a slow link; a kubeconfig's disable-compression: true keeps it off."`

	NATSURL      string `env:"NATS_URL" help:"NATS server URL(s), comma-separated (nats://, tls://, ws://, wss://). Unset: start an embedded NATS server with JetStream."`
	NATSCreds    string `env:"NATS_CREDS" help:"Path to a NATS user credentials file (JWT and NKey seed)."`
	NATSNKey     string `env:"NATS_NKEY" help:"Path to an NKey seed file."`
	NATSToken    string `env:"NATS_TOKEN" help:"NATS authentication token."`
	NATSUser     string `env:"NATS_USER" help:"NATS user name (with NATS_PASSWORD)."`
	NATSPassword string `env:"NATS_PASSWORD" help:"NATS password (with NATS_USER)."`
	NATSCA       string `env:"NATS_CA" help:"Path to a PEM CA bundle to verify the NATS server, as the nats CLI reads it; setting it turns TLS on. Without it a tls:// URL is verified against the system's roots. Read again at every reconnect."`
	NATSCert     string `env:"NATS_CERT" help:"Path to a PEM client certificate for mutual TLS (with NATS_KEY), as the nats CLI reads it. Read again at every reconnect, so a certificate rotated on disk (cert-manager) is used from the next one."`
	NATSKey      string `env:"NATS_KEY" help:"Path to the PEM private key of NATS_CERT, as the nats CLI reads it."`
	// The NATS_TLS_ spellings are the ones issue 38 and the deploy
	// manifests name; the nats CLI's are kept, and either may be used.
	NATSTLSCA         string `env:"NATS_TLS_CA" help:"Another name of NATS_CA; set both only to the same file."`
	NATSTLSCert       string `env:"NATS_TLS_CERT" help:"Another name of NATS_CERT; set both only to the same file."`
	NATSTLSKey        string `env:"NATS_TLS_KEY" help:"Another name of NATS_KEY; set both only to the same file."`
	NATSTLSServerName string `env:"NATS_TLS_SERVER_NAME" help:"Name the NATS server's certificate must hold, when it is not the host of the NATS_URL dialled (a URL with an IP address, or a Service the certificate does not name). Unset: that host."`
	NATSJSDomain      string `env:"NATS_JS_DOMAIN" help:"JetStream domain of the stream, as the nats CLI's --js-domain: for a leaf node that reaches its hub's JetStream (docs/multicluster.md). Unset: the JetStream of the account."`

	StreamName            string        `env:"BRIDGE_STREAM_NAME, default=KUBEBRIDGE" help:"JetStream stream; created with the settings below when missing, else checked to cover <prefix>.<cluster>.>."`
	StreamStorage         string        `env:"BRIDGE_STREAM_STORAGE, default=file" help:"Storage of a created stream: file or memory."`
	StreamReplicas        int           `env:"BRIDGE_STREAM_REPLICAS, default=1" help:"Replicas of a created stream (1-5)."`
	StreamMaxAge          time.Duration `env:"BRIDGE_STREAM_MAX_AGE, default=168h" help:"Max age of messages in a created stream; 0 keeps them forever."`
	StreamMaxBytes        int64         `env:"BRIDGE_STREAM_MAX_BYTES, default=-1" help:"Max size in bytes of a created stream; -1 is unlimited."`
	StreamDuplicateWindow time.Duration `env:"BRIDGE_STREAM_DUPLICATE_WINDOW, default=2m" help:"JetStream de-duplication window of a created stream (Nats-Msg-Id)."`
	// Eight: the stream stays a few copies of the cluster's state instead of
	// one copy per snapshot, and a consumer that falls behind still sees
	// every step of an object that changed fewer than eight times meanwhile
	// (with hourly snapshots, an idle object's last seven hours).
	StreamMaxMsgsPerSubject int64 `env:"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT, default=8" help:"Messages a created stream keeps per subject, i.e. per object and per snapshot marker subject: the newest N; -1 is unlimited. A consumer behind an object by more than N messages sees its newest state, not every step."`
	// A day: far longer than a resync period, so a consumer that was away
	// for less than that still sees the delete; one away longer learns it
	// from the next snapshot's sweep.
	TombstoneTTL time.Duration `env:"BRIDGE_TOMBSTONE_TTL, default=24h" help:"How long the stream keeps a deleted event (Nats-TTL, whole seconds), which is then its object's only message (Nats-Rollup: sub): afterwards the object's subject is empty. 0 keeps deletes until the stream's own limits remove them."`

	EmbeddedNATSListen   string `env:"BRIDGE_EMBEDDED_NATS_LISTEN, default=127.0.0.1:4222" help:"host:port of the embedded NATS server (only without NATS_URL)."`
	EmbeddedNATSStoreDir string `env:"BRIDGE_EMBEDDED_NATS_STORE_DIR" help:"JetStream store directory of the embedded NATS server; default <tmp>/kubebridge-jetstream."`

	Shards               int           `env:"BRIDGE_SHARDS, default=1" help:"Number of bridge shards publishing this cluster, each owning the namespaces (and cluster-scoped names) that hash to it (docs/design/sharding.md); 1: one bridge publishes everything. Change it only as docs/operations.md says."`
	ShardSelectorRefresh time.Duration `env:"BRIDGE_SHARD_SELECTOR_REFRESH, default=1m" help:"With BRIDGE_SHARDS above 1, how often the namespaces are listed to rebuild the apiserver shard selector (ShardedListAndWatch), so that other shards' namespaces created since are not sent to this one either; 0: built once, at start."`
	// ShardIndex is set from the pod's ordinal by Load when unset.
	ShardIndex string `env:"BRIDGE_SHARD" help:"This bridge's shard, 0 to BRIDGE_SHARDS-1. Unset: the ordinal of the pod's name (POD_NAME, else HOSTNAME: a StatefulSet's kubebridge-4) modulo BRIDGE_SHARDS, so a StatefulSet of BRIDGE_SHARDS x replicas pods gives each shard its replicas."`

	LeaderElection     bool          `env:"BRIDGE_LEADER_ELECTION, default=false" help:"Run as one of several replicas: only the holder of a coordination.k8s.io Lease publishes; the others keep their informers synced as hot standbys."`
	LeaseNamespace     string        `env:"BRIDGE_LEASE_NAMESPACE" help:"Namespace of the leader election Lease; default POD_NAMESPACE, else the pod's service account namespace, else default."`
	LeaseName          string        `env:"BRIDGE_LEASE_NAME" help:"Name of the leader election Lease; default kubebridge-<BRIDGE_CLUSTER_NAME>."`
	LeaseDuration      time.Duration `env:"BRIDGE_LEASE_DURATION, default=15s" help:"How long standbys wait after the leader's last renewal before taking the Lease over."`
	LeaseRenewDeadline time.Duration `env:"BRIDGE_LEASE_RENEW_DEADLINE, default=10s" help:"How long the leader keeps trying to renew before it stops publishing and exits; less than BRIDGE_LEASE_DURATION."`
	LeaseRetryPeriod   time.Duration `env:"BRIDGE_LEASE_RETRY_PERIOD, default=2s" help:"Wait between attempts to take or renew the Lease; less than BRIDGE_LEASE_RENEW_DEADLINE."`
}

// Error lists every problem found in the environment, one per line.
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "\n") }

// ErrInvalid is matched by every *Error.
var ErrInvalid = errors.New("invalid configuration")

// Is makes errors.Is(err, ErrInvalid) true for an *Error.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// LoadOption configures Load.
type LoadOption func(*loadOptions) error

type loadOptions struct {
	readFile func(path string) ([]byte, error)
}

// WithReadFile makes Load read the configuration file (BRIDGE_CONFIG)
// with read instead of os.ReadFile: for a test that has the file's
// content but not at its path, as a pod's mounted ConfigMap.
func WithReadFile(read func(path string) ([]byte, error)) LoadOption {
	return func(o *loadOptions) error {
		if read == nil {
			return errors.New("config: WithReadFile(nil)")
		}
		o.readFile = read
		return nil
	}
}

// Load reads the configuration through lookup (nil: the process
// environment), and the configuration file BRIDGE_CONFIG names, and checks
// them. All problems are returned together.
func Load(ctx context.Context, lookup envconfig.Lookuper, opts ...LoadOption) (*Config, error) {
	lo := loadOptions{readFile: os.ReadFile}
	for _, opt := range opts {
		if err := opt(&lo); err != nil {
			return nil, err
		}
	}
	if lookup == nil {
		lookup = envconfig.OsLookuper()
	}
	var c Config
	problems, bad := c.decode(ctx, lookup)
	problems = append(problems, c.readFile(lookup, lo.readFile, bad)...)
	problems = append(problems, c.validate(lookup, bad)...)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	if c.EmbeddedNATSStoreDir == "" {
		c.EmbeddedNATSStoreDir = filepath.Join(os.TempDir(), "kubebridge-jetstream")
	}
	return &c, nil
}
