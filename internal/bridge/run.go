package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/natsembed"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// Main runs the bridge process until ctx ends: it serves the operational
// endpoints, connects to Kubernetes and NATS (starting an embedded NATS
// server without NATS_URL), builds the bridge and runs it.
func Main(ctx context.Context, cfg *config.Config, version string) error {
	logger := klog.FromContext(ctx)
	kube, rc, err := KubeFromConfig(cfg, "kubebridge/"+version)
	if err != nil {
		return err
	}
	logger.Info("Kubernetes API server", "host", rc.Host, "qps", rc.QPS, "burst", rc.Burst, "gzip", !rc.DisableCompression)

	// The endpoints come up before NATS is reached, so probes see a live
	// process that is not ready yet instead of a refused connection.
	h := newHealth()
	if err := serveEndpoints(ctx, cfg, h, nil); err != nil {
		return err
	}

	url := cfg.NATSURL
	var natsOpts []nats.Option
	if url == "" {
		srv, err := natsembed.Start(cfg.EmbeddedNATSListen, cfg.EmbeddedNATSStoreDir)
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
		natsOpts = append(natsOpts, nats.InProcessServer(srv))
		logger.Info("NATS_URL is unset: started an embedded NATS server with JetStream", "url", url, "storeDir", cfg.EmbeddedNATSStoreDir)
	} else {
		if natsOpts, err = natsAuth(cfg).Options(); err != nil {
			return err
		}
	}
	nc, err := sink.Connect(ctx, url, natsOpts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	b, err := New(ctx, cfg, kube, nc, withHealth(h))
	if err != nil {
		return err
	}
	if err := b.Run(ctx); err != nil {
		return err
	}
	if err := drainConn(nc, 5*time.Second); err != nil {
		logger.Info("NATS drain did not finish cleanly", "err", err)
	}
	return nil
}

// natsAuth is how cfg says to authenticate to NATS and verify it.
func natsAuth(cfg *config.Config) sink.Auth {
	return sink.Auth{CredsFile: cfg.NATSCreds, NKeyFile: cfg.NATSNKey, Token: cfg.NATSToken, User: cfg.NATSUser, Password: cfg.NATSPassword,
		CAFile: cfg.NATSCA, CertFile: cfg.NATSCert, KeyFile: cfg.NATSKey, ServerName: cfg.NATSTLSServerName}
}

func drainConn(nc *nats.Conn, timeout time.Duration) error {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		return err
	}
	select {
	case <-closed:
		return nil
	case <-time.After(timeout):
		return errors.New("timed out")
	}
}
