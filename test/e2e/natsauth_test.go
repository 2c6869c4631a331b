package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestNATSLeastPrivilege runs a NATS server with the configuration of
// overlays/with-nats (nats.conf parsed by nats-server, its users'
// passwords as hack/nats-secrets.sh would make them, its certificates
// those of hack/nats-certs.sh) and checks, every client over TLS (the
// bridge with the files its Deployment names, the reader with the
// reader's certificate), both of its users:
//   - the bridge, with the kubebridge user's credentials, does all its
//     duties: it creates its stream, stores its term, publishes snapshots
//     and changes, scans the stream for deletes missed while it was down,
//     and reads a subject's last message when a second bridge fences it;
//     it cannot purge or delete the stream, nor publish elsewhere;
//   - the reader bootstraps with pkg/consume and passes kubebridge verify,
//     and its publish into the bridge's subjects, its purge and its
//     delete of the stream are refused;
//   - an anonymous connection, and a wrong password, are refused, and so
//     is a client that speaks clear text.
func TestNATSLeastPrivilege(t *testing.T) {
	// Its own NATS, namespaces and names: it runs beside the others
	// that do (testenv's shared NATS is not touched).
	t.Parallel()
	env := testenv.Get(t)
	users := map[string]map[string]string{
		"kubebridge-nats":        {"user": "kubebridge", "password": randomPassword(t)},
		"kubebridge-nats-reader": {"user": "reader", "password": randomPassword(t)},
	}
	srv := startOverlayNATSAlone(t, users)
	url := srv.url
	bridgeUser, reader := users["kubebridge-nats"], users["kubebridge-nats-reader"]
	bridgeOpts := append(srv.bridgeOpts(), nats.UserInfo(bridgeUser["user"], bridgeUser["password"]))
	readerOpts := append(srv.readerOpts(), nats.UserInfo(reader["user"], reader["password"]))

	h := newHarnessOn(t, env, url, readerOpts...)
	// The names the configuration grants: the bridge's defaults.
	h.prefix, h.stream = "kubebridge", "KUBEBRIDGE"
	vars := map[string]string{
		"NATS_USER": bridgeUser["user"], "NATS_PASSWORD": bridgeUser["password"],
		"BRIDGE_SUBJECT_PREFIX": h.prefix, "BRIDGE_STREAM_NAME": h.stream, "BRIDGE_RESOURCES": "configmaps",
	}
	maps.Copy(vars, srv.bridgeTLS)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.createCM(h.ns, name, nil, map[string]string{"k": name})
	}
	// Creates the stream, stores its term, publishes a start-up snapshot
	// and a change.
	first := h.startBridge(vars)
	h.createCM(h.ns, "f", nil, map[string]string{"k": "f"})
	cm := h.touchCM(h.ns, "f")
	h.waitEvent(h.cmSubject(h.ns, "f"), contract.TypeUpdated, cm.ResourceVersion)
	first.stop()

	// Deletes made while no bridge runs: the next one finds them by
	// scanning the stream.
	h.deleteCM(h.ns, "a")
	h.deleteCM(h.ns, "b")
	second := h.startBridge(vars)
	for _, name := range []string{"a", "b"} {
		h.waitEvent(h.cmSubject(h.ns, name), contract.TypeDeleted, "")
	}
	if n := second.scrape().sum("kubebridge_missed_deletes_total"); n != 2 {
		t.Errorf("kubebridge_missed_deletes_total %v, want 2", n)
	}

	// A second bridge starts without leader election: the first one's next
	// refused publish reads the subject's last message and finds the newer
	// term.
	third := h.startBridge(vars)
	second.stopped.Store(true)
	// Changes for the second bridge to publish, until one is refused and
	// it exits (waitExitNonZero fails if it does not).
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if second.exited() {
			return true, nil
		}
		h.touchCM(h.ns, "c")
		return false, nil
	})
	code := waitExitNonZero(t, second, "fenced bridge")
	if second.countLog(fencedLine) == 0 {
		t.Errorf("the fenced bridge (exit %d) did not log why", code)
	}
	checkRefusedFor(t, "the bridge", url, bridgeOpts...)

	// The reader: a state from the stream, verify, and nothing else.
	checkReaderState(t, h, url, readerOpts...)
	var out, errOut bytes.Buffer
	args := []string{"verify", "-s", url, "--user", reader["user"], "--password", reader["password"],
		"--tlsca", srv.certs.File(readerSecret, "ca.crt"), "--tlscert", srv.certs.File(readerSecret, "tls.crt"), "--tlskey", srv.certs.File(readerSecret, "tls.key"),
		"--cluster", cluster, "--against-cluster", "--kubeconfig", env.KubeconfigPath(), "-n", h.ns, "configmaps"}
	if code := cli.Run(context.Background(), args, &out, &errOut); code != 0 {
		t.Errorf("kubebridge verify as the reader: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	checkRefusedFor(t, "the reader", url, readerOpts...)

	// Over TLS, with the reader's certificate: refused for the
	// credentials alone.
	for what, opts := range map[string][]nats.Option{
		"anonymous":          srv.readerOpts(),
		"a wrong password":   append(srv.readerOpts(), nats.UserInfo(reader["user"], "wrong")),
		"an unknown account": append(srv.readerOpts(), nats.UserInfo("admin", reader["password"])),
	} {
		if nc, err := nats.Connect(url, opts...); err == nil {
			nc.Close()
			t.Errorf("%s connection is let in", what)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s connection: %v, want an authorization violation", what, err)
		}
	}
	natstest.CheckRefusesPlainText(t, srv.addr, bridgeUser["user"], bridgeUser["password"])
	third.stop()
}

// checkRefusedFor: who may neither purge nor delete the stream, nor
// publish outside what its role needs (the reader: anywhere on the
// bridge's subjects; the bridge: outside them). Each attempt must fail,
// and the server must say it refused that very subject: a request the
// server refuses gets no answer, so a failure alone (a timeout) proves
// nothing.
func checkRefusedFor(t *testing.T, who, url string, opts ...nats.Option) {
	t.Helper()
	var mu sync.Mutex
	var violations []string
	nc, err := nats.Connect(url, append(slices.Clip(opts), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	}))...)
	if err != nil {
		t.Fatalf("%s cannot connect: %v", who, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	must(t, err)
	// refused waits for the server's permissions violation for subject.
	refused := func(subject string) bool {
		want := fmt.Sprintf("permissions violation for publish to %q", subject)
		return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(violations, func(v string) bool { return strings.Contains(strings.ToLower(v), strings.ToLower(want)) }), nil
		}) == nil
	}
	attempt := func(what, subject string, do func(context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := do(ctx); err == nil {
			t.Errorf("%s could %s", who, what)
		} else if !refused(subject) {
			t.Errorf("%s could not %s (%v), but the server did not refuse %s", who, what, err, subject)
		}
	}
	before := streamMsgs(t, js)
	attempt("delete the stream", "$JS.API.STREAM.DELETE.KUBEBRIDGE", func(ctx context.Context) error { return js.DeleteStream(ctx, "KUBEBRIDGE") })
	attempt("purge the stream", "$JS.API.STREAM.PURGE.KUBEBRIDGE", func(ctx context.Context) error {
		s, err := js.Stream(ctx, "KUBEBRIDGE")
		if err != nil {
			return err
		}
		return s.Purge(ctx)
	})
	subject := "kubebridge." + cluster + ".core.v1.configmaps.forged.x"
	if who == "the bridge" {
		subject = "elsewhere.forged"
	}
	attempt("publish on "+subject, subject, func(ctx context.Context) error {
		_, err := js.Publish(ctx, subject, []byte("forged"))
		return err
	})
	if after := streamMsgs(t, js); after < before {
		t.Errorf("the stream lost messages (%d, then %d) while %s tried", before, after, who)
	}
}

// checkReaderState bootstraps a pkg/consume State as the reader (who
// connects with opts), both ways, and compares it with the apiserver's
// list.
func checkReaderState(t *testing.T, h *harness, url string, opts ...nats.Option) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	must(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	must(t, err)
	client, err := consume.New(js, consume.WithCluster(cluster))
	must(t, err)
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	for _, mode := range []consume.BootstrapMode{consume.LastPerSubject, consume.FullReplay} {
		st, err := client.NewState([]consume.Filter{{Resource: "configmaps", Namespace: h.ns}}, consume.Bootstrap(mode))
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() { _ = st.Run(ctx) }()
		if err := st.WaitForSync(ctx); err != nil {
			t.Fatalf("the reader's %v state: %v", mode, err)
		}
		got := map[string]string{}
		for _, o := range st.Indexer("configmaps").List() {
			m := o.(metav1.Object)
			got[h.cmSubject(m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
		}
		cancel()
		if d := diffState(got, want); d != "" {
			t.Errorf("the reader's %v state differs from the apiserver:\n%s", mode, d)
		}
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KUBEBRIDGE")
	must(t, err)
	info, err := s.Info(ctx)
	must(t, err)
	return info.State.Msgs
}

func randomPassword(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

// touchCM changes a ConfigMap's data, so that it gets a new
// resourceVersion and an updated event.
func (h *harness) touchCM(ns, name string) *corev1.ConfigMap {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := h.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["touched"] = time.Now().Format(time.RFC3339Nano)
	return h.updateCM(cm)
}
