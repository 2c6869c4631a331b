package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// startBridge runs bin/bridge with a minimal environment: no NATS_URL, so it
// starts its embedded NATS server on a free port.
func (d *demo) startBridge() error {
	listen, err := natsListen()
	if err != nil {
		return err
	}
	d.natsURL = "nats://" + listen
	env := []string{
		"KUBECONFIG=" + d.env.KubeconfigPath(),
		"BRIDGE_RESOURCES=" + resources,
		"BRIDGE_NAMESPACES=" + namespace,
		"BRIDGE_CLUSTER_NAME=" + cluster,
		"BRIDGE_EMBEDDED_NATS_LISTEN=" + listen,
		"BRIDGE_EMBEDDED_NATS_STORE_DIR=" + filepath.Join(d.tmp, "jetstream"),
	}
	d.say("--- starting the bridge (NATS_URL unset: it starts an embedded NATS server with JetStream on %s):", listen)
	var shown []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(v, " ;") {
			v = "'" + v + "'"
		}
		shown = append(shown, "      "+k+"="+v)
	}
	d.say("    env -i \\\n%s \\\n      %s", strings.Join(shown, " \\\n"), d.bridgeBin)

	if d.bridgeLog, err = os.Create(filepath.Join(d.tmp, "bridge.log")); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(d.bridgeBin)
	cmd.Env = env
	cmd.Stdout = w
	cmd.Stderr = w
	// Its own process group: a Ctrl-C in the terminal reaches the demo,
	// which then stops the bridge with SIGTERM like an orchestrator would.
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy; only the pipe's read end matters here
	if err != nil {
		_ = r.Close()
		return fmt.Errorf("start %s: %w", d.bridgeBin, err)
	}
	d.bridge = cmd
	d.bridgeDone = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(d.bridgeLog, line)
			d.say("    bridge| %s", klogMessage(line))
		}
		_ = r.Close() // read to the end: nothing is lost by a failed close
		d.bridgeErr = cmd.Wait()
		close(d.bridgeDone)
	}()
	return nil
}

// natsListen returns 127.0.0.1:4222 if that port is free, else another free
// port.
func natsListen() (string, error) {
	for _, addr := range []string{"127.0.0.1:4222", "127.0.0.1:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		addr = l.Addr().String()
		_ = l.Close() // only its address was wanted
		return addr, nil
	}
	return "", errors.New("no free port for the embedded NATS server")
}

// klogMessage drops klog's header ("I0102 15:04:05.000000   123 file.go:12] ")
// from a log line, keeping the severity when it is not I(nfo).
func klogMessage(line string) string {
	if len(line) > 1 && strings.ContainsRune("IWEF", rune(line[0])) && line[1] >= '0' && line[1] <= '9' {
		if i := strings.Index(line, "] "); i > 0 {
			msg := strings.Replace(line[i+2:], ` logger="kubebridge"`, "", 1)
			if line[0] == 'I' {
				return msg
			}
			return line[:1] + " " + msg
		}
	}
	return line
}

// bridgeExited reports whether the bridge has exited, for waits.
func (d *demo) bridgeExited() error {
	select {
	case <-d.bridgeDone:
		return fmt.Errorf("the bridge exited early (%v); its log: %s", d.bridgeErr, d.bridgeLog.Name())
	default:
		return nil
	}
}
