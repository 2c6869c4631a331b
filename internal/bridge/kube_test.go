package bridge

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubebridge/kubebridge/internal/config"
)

// The API server's responses are gzipped only when BRIDGE_KUBE_COMPRESSION
// asks for it, and never where the kubeconfig turned compression off.
func TestApplyKubeSettingsCompression(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kubeconfig  bool // the kubeconfig's disable-compression
		compression bool // BRIDGE_KUBE_COMPRESSION
		wantOff     bool
	}{
		{"default", false, false, true},
		{"asked for", false, true, false},
		{"asked for, but the kubeconfig turns it off", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rest.Config{DisableCompression: tc.kubeconfig}
			cfg := &config.Config{KubeQPS: 7, KubeBurst: 9, KubeCompression: tc.compression}
			ApplyKubeSettings(rc, cfg)
			if rc.DisableCompression != tc.wantOff {
				t.Errorf("DisableCompression = %v, want %v", rc.DisableCompression, tc.wantOff)
			}
			if rc.QPS != 7 || rc.Burst != 9 {
				t.Errorf("QPS, Burst = %v, %v; want 7, 9", rc.QPS, rc.Burst)
			}
		})
	}
}
