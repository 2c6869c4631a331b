package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// connFlags are the connection flags every subcommand takes, named as the
// nats CLI names them, plus where the bridge writes (stream, prefix,
// cluster).
type connFlags struct {
	server, context                    string
	creds, nkey, user, password, token string
	tlsCert, tlsKey, tlsCA, jsDomain   string
	tlsServerName                      string
	stream, prefix, cluster            string
	verbosity                          int
}

func (c *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&c.server, "server", "s", "", "NATS server URL(s), comma-separated (default $NATS_URL, else the context's, else "+nats.DefaultURL+")")
	fs.StringVar(&c.context, "context", "", "nats CLI context to connect with (default $NATS_CONTEXT, else the one 'nats context select' chose); verify's kubeconfig context is --kube-context")
	fs.StringVar(&c.creds, "creds", "", "user credentials file (default $NATS_CREDS)")
	fs.StringVar(&c.nkey, "nkey", "", "NKey seed file (default $NATS_NKEY)")
	fs.StringVar(&c.user, "user", "", "user name (default $NATS_USER)")
	fs.StringVar(&c.password, "password", "", "password (default $NATS_PASSWORD)")
	fs.StringVar(&c.token, "token", "", "authentication token (default $NATS_TOKEN)")
	fs.StringVar(&c.tlsCert, "tlscert", "", "TLS client certificate (default $NATS_CERT or $NATS_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tlskey", "", "TLS client key (default $NATS_KEY or $NATS_TLS_KEY)")
	fs.StringVar(&c.tlsCA, "tlsca", "", "TLS CA to verify the server (default $NATS_CA or $NATS_TLS_CA)")
	fs.StringVar(&c.tlsServerName, "tlsservername", "", "name the server's TLS certificate must hold, when not the URL's host (default $NATS_TLS_SERVER_NAME)")
	fs.StringVar(&c.jsDomain, "js-domain", "", "JetStream domain")
	fs.StringVar(&c.stream, "stream", "", "stream the bridge writes (default $BRIDGE_STREAM_NAME, else "+consume.DefaultStream+")")
	fs.StringVar(&c.prefix, "prefix", "", "subject prefix (default $BRIDGE_SUBJECT_PREFIX, else "+consume.DefaultSubjectPrefix+")")
	fs.StringVar(&c.cluster, "cluster", "", "cluster name in subjects (default $BRIDGE_CLUSTER_NAME, else "+consume.DefaultCluster+")")
	fs.IntVarP(&c.verbosity, "v", "v", 0, "log verbosity (2: bootstrap details)")
}

// first returns the first non-empty value.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// settings are the connection settings after flags, environment and
// context are merged: a flag wins over its variable, which wins over the
// context, as with the nats CLI.
type settings struct {
	url      string
	auth     sink.Auth
	jsDomain string
	subjects contract.Subjects
	stream   string
}

func (c *connFlags) settings(getenv func(string) string) (settings, error) {
	ctxName := first(c.context, getenv("NATS_CONTEXT"))
	nc, err := loadNATSContext(ctxName, getenv)
	if err != nil {
		return settings{}, err
	}
	tlsEnv, err := tlsVariables(getenv)
	if err != nil {
		return settings{}, err
	}
	s := settings{
		url: first(c.server, getenv("NATS_URL"), nc.URL, nats.DefaultURL),
		auth: sink.Auth{
			CredsFile:  first(c.creds, getenv("NATS_CREDS"), nc.Creds),
			NKeyFile:   first(c.nkey, getenv("NATS_NKEY"), nc.NKey),
			Token:      first(c.token, getenv("NATS_TOKEN"), nc.Token),
			User:       first(c.user, getenv("NATS_USER"), nc.User),
			Password:   first(c.password, getenv("NATS_PASSWORD"), nc.Password),
			CAFile:     first(c.tlsCA, tlsEnv["NATS_CA"], nc.CA),
			CertFile:   first(c.tlsCert, tlsEnv["NATS_CERT"], nc.Cert),
			KeyFile:    first(c.tlsKey, tlsEnv["NATS_KEY"], nc.Key),
			ServerName: first(c.tlsServerName, getenv("NATS_TLS_SERVER_NAME")),
		},
		jsDomain: first(c.jsDomain, getenv("NATS_JS_DOMAIN"), nc.JSDomain),
		stream:   first(c.stream, getenv("BRIDGE_STREAM_NAME"), consume.DefaultStream),
		subjects: contract.Subjects{
			Prefix:  first(c.prefix, getenv("BRIDGE_SUBJECT_PREFIX"), consume.DefaultSubjectPrefix),
			Cluster: first(c.cluster, getenv("BRIDGE_CLUSTER_NAME"), consume.DefaultCluster),
		},
	}
	return s, nil
}

// tlsVariables reads the TLS files' variables under the nats CLI's names
// or the bridge's NATS_TLS_ ones, keyed by the former; two names for one
// file that name different files are an error, as for the bridge.
func tlsVariables(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range []string{"NATS_CA", "NATS_CERT", "NATS_KEY"} {
		alias := strings.Replace(k, "NATS_", "NATS_TLS_", 1)
		v, a := getenv(k), getenv(alias)
		if v != "" && a != "" && v != a {
			return nil, fmt.Errorf("%s=%q and %s=%q name different files: set one of them", k, v, alias, a)
		}
		out[k] = first(v, a)
	}
	return out, nil
}

// conn is an open connection and a consume.Client on it.
type conn struct {
	settings
	nc     *nats.Conn
	js     jetstream.JetStream
	client *consume.Client
}

func (c *conn) Close() { c.nc.Close() }

// connect opens the connection the flags describe. It fails at once when
// the server cannot be reached: a person is waiting.
func (c *connFlags) connect(ctx context.Context, getenv func(string) string) (*conn, error) {
	s, err := c.settings(getenv)
	if err != nil {
		return nil, err
	}
	opts, err := s.auth.Options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name("kubebridge-cli"), nats.Timeout(5*time.Second), nats.MaxReconnects(-1))
	nc, err := nats.Connect(s.url, opts...)
	if err != nil {
		// nats.go quotes the URL in some errors; it may hold credentials.
		return nil, fmt.Errorf("connect to NATS %s: %s", sink.RedactURLs(s.url), redactURLsIn(err.Error(), s.url))
	}
	var js jetstream.JetStream
	if s.jsDomain != "" {
		js, err = jetstream.NewWithDomain(nc, s.jsDomain)
	} else {
		js, err = jetstream.New(nc)
	}
	var client *consume.Client
	if err == nil {
		client, err = consume.New(js, consume.WithStream(s.stream), consume.WithSubjectPrefix(s.subjects.Prefix), consume.WithCluster(s.subjects.Cluster))
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := js.Stream(ctx, s.stream); err != nil {
		nc.Close()
		return nil, fmt.Errorf("stream %s on %s: %w", s.stream, sink.RedactURLs(s.url), err)
	}
	return &conn{settings: s, nc: nc, js: js, client: client}, nil
}

// redactURLsIn replaces the URLs of list quoted in text (nats.go quotes
// them in some errors) by their redacted form.
func redactURLsIn(text, list string) string {
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			text = strings.ReplaceAll(text, u, sink.RedactURLs(u))
		}
	}
	return text
}
