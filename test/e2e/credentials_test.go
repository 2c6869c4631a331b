package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestTokenInNATSURLNeverLogged: a token in NATS_URL (nats://TOKEN@host),
// the form the nats CLI accepts, never appears in the bridge's output,
// neither at start-up nor in the disconnect and reconnect lines of a NATS
// restart. The server has no authentication, so it ignores the token and
// the bridge works as usual.
func TestTokenInNATSURLNeverLogged(t *testing.T) {
	const token = "s3cretTOKENvalue42"
	env := testenv.Get(t)
	h := newHarness(t)
	hostPort := strings.TrimPrefix(env.NATSURL(), "nats://")
	b := h.startBridge(map[string]string{
		"BRIDGE_RESOURCES": "configmaps",
		"NATS_URL":         "nats://" + token + "@" + hostPort,
		// Every retry and reconnect logged.
		"BRIDGE_LOG_VERBOSITY": "6",
	})
	if err := env.RestartNATS(); err != nil {
		t.Fatal(err)
	}
	b.waitLog("Reconnected to NATS", 60*time.Second)
	cm := h.createCM(h.ns, "after-reconnect", nil, map[string]string{"k": "v"})
	h.waitStream("the configmap created after the reconnect", convergeTimeout, func(m []replay.Message) string {
		for _, msg := range onSubject(m, h.cmSubject(h.ns, "after-reconnect")) {
			if msg.Event.Type() == contract.TypeAdded && msg.Ext(contract.ExtResourceVersion) == cm.ResourceVersion {
				return ""
			}
		}
		return "no added event yet"
	})
	b.stop()
	out := b.output()
	if n := strings.Count(out, token); n > 0 {
		for _, l := range lines(out) {
			if strings.Contains(l, token) {
				t.Errorf("token logged: %s", l)
			}
		}
	}
	if !strings.Contains(out, "Connected to NATS") || !strings.Contains(out, "xxxxx@") {
		t.Errorf("expected the connection lines with the token masked as xxxxx; output:\n%s", out)
	}
}
