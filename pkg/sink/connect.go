package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/klog/v2"
)

// Auth holds the credentials and TLS files of a NATS connection, named as
// the nats CLI names them. At most one of CredsFile, NKeyFile, Token and
// User is meant to be set.
type Auth struct {
	CredsFile string
	NKeyFile  string
	Token     string
	User      string
	Password  string
	CAFile    string
	CertFile  string
	KeyFile   string
	// ServerName is the name the server's certificate must hold, when it
	// is not the host of the URL dialled.
	ServerName string
}

// Options turns a into nats.Options.
func (a Auth) Options() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NKeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("sink: NKey seed %s: %w", a.NKeyFile, err)
		}
		opts = append(opts, opt)
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	// Secure before RootCAs and ClientCert: they keep a tls.Config that is
	// there already. Either of them turns TLS on, even for a nats:// URL,
	// so that nothing goes out in clear text to a server without TLS.
	if a.ServerName != "" {
		opts = append(opts, nats.Secure(&tls.Config{ServerName: a.ServerName, MinVersion: tls.VersionTLS12}))
	}
	// nats.go reads both files again at every connect and reconnect: a
	// certificate rotated on disk (cert-manager rewrites its Secret in
	// place) is the one presented at the next reconnect.
	if a.CAFile != "" {
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if a.CertFile != "" {
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	return opts, nil
}

// Connect dials url until it succeeds or ctx ends, then keeps the
// connection reconnecting forever. Publishes made while disconnected fail at
// once instead of filling a client-side buffer: the publisher retries them.
//
// url may carry credentials (nats://user:password@host, nats://token@host).
// Nothing Connect logs or returns shows them: URLs go through RedactURLs,
// and errors are masked too, since nats.go returns url.Parse's errors, which
// quote the whole URL.
func Connect(ctx context.Context, url string, extra ...nats.Option) (*nats.Conn, error) {
	logger := klog.FromContext(ctx)
	r := newRedactor(url)
	opts := append([]nats.Option{
		nats.Name("kubebridge"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			// A nil error is our own Close or Drain, not an outage.
			if err != nil {
				logger.Info("Disconnected from NATS; reconnecting", "err", r.err(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("Reconnected to NATS", "server", redact(nc.ConnectedUrl()))
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			logger.Error(r.err(err), "NATS error")
		}),
	}, extra...)
	wait := 500 * time.Millisecond
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			logger.Info("Connected to NATS", "server", redact(nc.ConnectedUrl()), "maxPayload", nc.MaxPayload())
			return nc, nil
		}
		if errors.Is(err, nats.ErrNoServers) {
			err = whyNoServer(url, opts, err)
		}
		err = r.err(err)
		logger.Info("Cannot connect to NATS yet; retrying", "url", RedactURLs(url), "err", err, "retryIn", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sink: connect to NATS %s: %w", RedactURLs(url), err)
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

// whyNoServer adds to err, nats.go's "no servers available", what it
// hides. nats.go tries every server it knows in turn: the URLs given, and
// those the first server it reached advertised for its cluster. A server
// that refuses the connection clears the reason an earlier one failed
// for, such as a certificate no configured CA signed, and the servers a
// cluster advertises may not even be reachable from here. So each URL
// given is tried once more, alone and without the servers it advertises,
// and the first reason other than a refusal is added.
func whyNoServer(url string, opts []nats.Option, err error) error {
	alone := append(opts[:len(opts):len(opts)], nats.IgnoreDiscoveredServers(), nats.NoReconnect())
	for _, u := range strings.Split(url, ",") {
		u = strings.TrimSpace(u)
		nc, cerr := nats.Connect(u, alone...)
		if cerr == nil {
			// Up by now: the next attempt connects.
			nc.Close()
			return err
		}
		if !errors.Is(cerr, nats.ErrNoServers) {
			return fmt.Errorf("%w (%s: %w)", err, RedactURLs(u), cerr)
		}
	}
	return err
}
