package sink

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testpki"
)

// cert-manager rewrites a certificate's Secret in place and the kubelet
// updates the mounted files: a connection must present the new
// certificate from its next reconnect on, without a restart.
func TestTLSClientCertificateRotatedOnDiskIsUsedAtReconnect(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "ca")
	srv := startTLSServer(t, dir, ca, true)
	client := ca.Issue(t, dir, "client", testpki.Leaf{CommonName: "first"})
	opts, err := Auth{CAFile: ca.File, CertFile: client.CertFile, KeyFile: client.KeyFile}.Options()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reconnected := make(chan struct{}, 1)
	opts = append(opts, nats.ReconnectHandler(func(*nats.Conn) {
		select {
		case reconnected <- struct{}{}:
		default:
		}
	}))
	nc, err := Connect(ctx, srv.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := peerSubjects(t, srv); !slices.Equal(got, []string{"CN=first"}) {
		t.Fatalf("server sees client certificates %q, want [CN=first]", got)
	}

	// Same file names, a new certificate and key from the same CA.
	ca.Issue(t, dir, "client", testpki.Leaf{CommonName: "second"})
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect")
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(peerSubjects(t, srv), []string{"CN=second"}), nil
	})
	if err != nil {
		t.Fatalf("after the reconnect the server sees client certificates %q, want [CN=second]", peerSubjects(t, srv))
	}

	sub, err := nc.SubscribeSync("rotated")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("rotated", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if err != nil || string(msg.Data) != "hello" {
		t.Fatalf("after the rotation: message %v, err %v", msg, err)
	}
}
