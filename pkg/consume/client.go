package consume

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The bridge's defaults: BRIDGE_STREAM_NAME, BRIDGE_SUBJECT_PREFIX and
// BRIDGE_CLUSTER_NAME.
const (
	DefaultStream        = "KUBEBRIDGE"
	DefaultSubjectPrefix = "kubebridge"
	DefaultCluster       = "default"
)

// ErrBadOption is wrapped by every error about an option.
var ErrBadOption = errors.New("consume: bad option")

// ErrUnsupportedContract is returned when the stream's term markers say
// it was written under a major version of the event contract this reader
// does not know (docs/contract.md). A newer minor version is read.
var ErrUnsupportedContract = errors.New("consume: the stream was written under a contract version this reader does not know; upgrade the reader")

// contractMajor is the major version of the contract this package reads.
const contractMajor = 1

// checkContract refuses a term marker (its headers) of an unknown major
// contract version.
func checkContract(seq uint64, h nats.Header) error {
	v := h.Get(contract.Header(contract.ExtContractVersion))
	major, err := contract.ContractMajor(v)
	if err != nil {
		return fmt.Errorf("%w: the term marker at sequence %d: %v", ErrUnsupportedContract, seq, err)
	}
	if major != contractMajor {
		return fmt.Errorf("%w: the term marker at sequence %d says %s; this reader knows %d.x", ErrUnsupportedContract, seq, v, contractMajor)
	}
	return nil
}

// Client reads the events of one cluster from a kubebridge stream.
type Client struct {
	js       jetstream.JetStream
	stream   string
	subjects contract.Subjects
	dec      *decoder
}

// Option configures a Client.
type Option func(*options) error

type options struct {
	stream  string
	prefix  string
	cluster string
	scheme  *runtime.Scheme
}

// WithStream names the stream (BRIDGE_STREAM_NAME); default KUBEBRIDGE.
func WithStream(name string) Option {
	return func(o *options) error {
		if !streamNameRE.MatchString(name) {
			return fmt.Errorf("%w: stream name %q", ErrBadOption, name)
		}
		o.stream = name
		return nil
	}
}

// WithSubjectPrefix sets the first subject token(s)
// (BRIDGE_SUBJECT_PREFIX); default kubebridge.
func WithSubjectPrefix(prefix string) Option {
	return func(o *options) error {
		if !prefixRE.MatchString(prefix) {
			return fmt.Errorf("%w: subject prefix %q", ErrBadOption, prefix)
		}
		o.prefix = prefix
		return nil
	}
}

// WithCluster names the cluster (BRIDGE_CLUSTER_NAME); default "default".
func WithCluster(name string) Option {
	return func(o *options) error {
		if !clusterRE.MatchString(name) {
			return fmt.Errorf("%w: cluster name %q is not a DNS label", ErrBadOption, name)
		}
		o.cluster = name
		return nil
	}
}

// WithScheme sets the scheme whose kinds are decoded into their Go types;
// default client-go's kubernetes/scheme (every built-in kind). Objects of
// kinds it does not know are decoded into *unstructured.Unstructured. Add
// your custom resources' types to a scheme to get them typed.
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("%w: nil scheme", ErrBadOption)
		}
		o.scheme = s
		return nil
	}
}

var (
	prefixRE     = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	streamNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	clusterRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// New returns a Client reading through js. It does not contact the server.
func New(js jetstream.JetStream, opts ...Option) (*Client, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrBadOption)
	}
	o := options{stream: DefaultStream, prefix: DefaultSubjectPrefix, cluster: DefaultCluster, scheme: scheme.Scheme}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	subjects := contract.Subjects{Prefix: o.prefix, Cluster: o.cluster}
	return &Client{js: js, stream: o.stream, subjects: subjects, dec: newDecoder(subjects, o.scheme)}, nil
}

// Decode decodes one message of the stream stored at sequence seq, e.g.
// one read with jetstream.Stream.GetMsg. It returns a *DecodeError for a
// message that is not an event of the contract.
func (c *Client) Decode(seq uint64, msg *nats.Msg) (*Event, error) {
	return c.dec.decode(seq, msg)
}
