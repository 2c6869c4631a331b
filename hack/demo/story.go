package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// step prints a story line, runs act and waits for the event it causes.
func (d *demo) step(ctx context.Context, title, typ, kind, name string, act func() error) error {
	d.say("--- %s", title)
	if err := act(); err != nil {
		return err
	}
	if err := d.waitFor(ctx, eventWait, typ+" "+kind+" "+name, func(s seen) bool {
		return s.typ == typ && s.kind == kind && strings.HasSuffix(s.subject, "."+namespace+"."+contract.EscapeToken(name))
	}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d.pause):
		return nil
	}
}

// story changes objects while the bridge runs: one added, updated and
// deleted event per type.
func (d *demo) story(ctx context.Context) error {
	cms := d.cs.CoreV1().ConfigMaps(namespace)
	widgets := d.dyn.Resource(widgetGVR).Namespace(namespace)
	steps := []struct {
		title, typ, kind, name string
		act                    func() error
	}{
		{"creating configmap demo/cache-settings", "added", "ConfigMap", "cache-settings", func() error {
			_, err := cms.Create(ctx, configMap("cache-settings", map[string]string{"ttl": "30s"}), metav1.CreateOptions{})
			return err
		}},
		{"creating widget demo/gizmo (a custom resource: the same events, through the dynamic client)", "added", "Widget", "gizmo", func() error {
			_, err := widgets.Create(ctx, widget("gizmo", "blue", 3), metav1.CreateOptions{})
			return err
		}},
		{"updating configmap demo/app-config: LOG_LEVEL info -> debug (an update carries the new and the old object)", "updated", "ConfigMap", "app-config", func() error {
			cm, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data["LOG_LEVEL"] = "debug"
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
		{"updating widget demo/gizmo: size 3 -> 5", "updated", "Widget", "gizmo", func() error {
			w, err := widgets.Get(ctx, "gizmo", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(w.Object, int64(5), "spec", "size"); err != nil {
				return err
			}
			_, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
			return err
		}},
		{"deleting configmap demo/feature-flags (the event carries its last state)", "deleted", "ConfigMap", "feature-flags", func() error {
			return cms.Delete(ctx, "feature-flags", metav1.DeleteOptions{})
		}},
		{"deleting widget demo/gizmo", "deleted", "Widget", "gizmo", func() error {
			return widgets.Delete(ctx, "gizmo", metav1.DeleteOptions{})
		}},
	}
	for _, s := range steps {
		if err := d.step(ctx, s.title, s.typ, s.kind, s.name, s.act); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

// attachInfo tells how to look at the running demo from elsewhere.
func (d *demo) attachInfo() {
	d.say(`
--- up and running; leave this terminal open (Ctrl-C stops everything and removes the temp dirs)

Kubernetes (kube-apiserver %[1]s, admin token; no controllers run):
    export KUBECONFIG=%[2]s
    kubectl -n demo create configmap hello --from-literal=greeting=hi     # if you have kubectl

NATS (the bridge's embedded server, JetStream stream %[3]s):
    NATS URL: %[4]s
    nats --server %[4]s sub 'kubebridge.demo.>'     # live events
    nats --server %[4]s stream view %[3]s      # what is stored, from the start

The kubebridge CLI (make build puts it in bin/kubebridge):
    bin/kubebridge --server %[5]s --cluster demo get configmaps -A
    bin/kubebridge --server %[5]s --cluster demo watch configmaps -n demo --diff
    bin/kubebridge --server %[5]s --cluster demo verify
    (stream %[6]q, subjects %[7]q)

Go: pkg/consume (docs/consumers.md), a live client-go cache of the stream.

Bridge log: %[8]s (also shown here with "bridge|"). New events are printed below as they arrive:`,
		d.env.APIServerURL(), d.env.KubeconfigPath(), streamName, d.natsURL, d.natsURL, streamName, filter, d.bridgeLog.Name())
}

// cleanup stops the consumer, the bridge (SIGTERM, which must exit 0) and
// the control plane, and removes the temp dirs.
func (d *demo) cleanup(failed bool) error {
	var errs []error
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	if d.consume != nil {
		d.consume.Stop()
	}
	if d.nc != nil {
		d.nc.Close()
	}
	if d.bridge != nil {
		if err := d.stopBridge(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.env != nil {
		d.say("--- stopping kube-apiserver and etcd")
		if failed || len(errs) > 0 {
			d.env.KeepLogs()
			d.say("    kept their logs in %s", d.env.LogDir())
		}
		if err := d.env.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.bridgeLog != nil {
		if err := d.bridgeLog.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	failed = failed || len(errs) > 0
	switch {
	case d.tmp == "":
	case failed:
		d.say("    kept %s (bridge log, NATS store) for a look", d.tmp)
	default:
		errs = append(errs, os.RemoveAll(d.tmp))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if !failed && d.env != nil {
		d.say("--- done in %v: %d events received, temp dirs removed", time.Since(d.start).Round(100*time.Millisecond), d.received)
	}
	return nil
}

func (d *demo) stopBridge() error {
	select {
	case <-d.bridgeDone:
		if d.bridgeErr == nil { // stopped by a Ctrl-C of its own (not on Linux, see sysProcAttr)
			d.say("    bridge exited with status 0")
			return nil
		}
		return fmt.Errorf("the bridge had already exited (%v); log kept in %s", d.bridgeErr, d.bridgeLog.Name())
	default:
	}
	d.say("--- stopping the bridge with SIGTERM")
	_ = d.bridge.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.bridgeDone:
	case <-time.After(stopTimeout):
		_ = d.bridge.Process.Kill()
		<-d.bridgeDone
		return fmt.Errorf("the bridge did not exit within %v of SIGTERM; killed it; log kept in %s", stopTimeout, d.bridgeLog.Name())
	}
	if d.bridgeErr != nil {
		return fmt.Errorf("the bridge exited with %v after SIGTERM; log kept in %s", d.bridgeErr, d.bridgeLog.Name())
	}
	d.say("    bridge exited with status %d", d.bridge.ProcessState.ExitCode())
	return nil
}
