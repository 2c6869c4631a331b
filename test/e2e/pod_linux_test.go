package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// podTools are the host programs that build a pod's sandbox: util-linux
// (unshare, mount, setpriv), coreutils' chroot and iproute2's ip.
type podTools struct{ unshare, mount, setpriv, chroot, ip, sh string }

func lookPodTools() (podTools, error) {
	var tools podTools
	var missing []string
	for name, dst := range map[string]*string{"unshare": &tools.unshare, "mount": &tools.mount, "setpriv": &tools.setpriv, "chroot": &tools.chroot, "ip": &tools.ip, "sh": &tools.sh} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		*dst = p
	}
	if len(missing) > 0 {
		return tools, fmt.Errorf("not on PATH: %s", strings.Join(missing, ", "))
	}
	return tools, nil
}

// podSpec is one container of a pod, as the kubelet and the container
// runtime would run it.
type podSpec struct {
	name       string
	ip         string   // the pod IP, on the pod's own loopback
	image      string   // directory holding the image's files
	entrypoint []string // the image's entrypoint and the container's args
	env        []string // the container's whole environment
	uid, gid   int64
	groups     []int64 // supplementary groups (fsGroup)
	readOnly   bool    // readOnlyRootFilesystem
	mounts     []podMount
	services   map[string]func() string // Service "clusterIP:port" → where it is served here (an endpoint each time)
}

// podMount is a host file or directory mounted into the container.
type podMount struct {
	source, target string
	readOnly       bool
}

// pod is one running pod: a process in network and mount namespaces of its
// own, whose root is the image's files.
type pod struct {
	spec     podSpec
	cmd      *exec.Cmd
	net      *podNet
	logs     string // stdout and stderr, as kubectl logs shows them
	done     chan struct{}
	state    *os.ProcessState
	stopping bool
}

// startPod builds the sandbox under dir and starts the container in it:
// new network and mount namespaces; the loopback up with the pod IP and the
// Service IPs on it; the image's files bind-mounted as the root,
// read-only; /proc, /etc/hosts and the pod's volumes mounted; then, once
// the test forwards the Services into the pod's network, the entrypoint
// runs chrooted there as uid:gid with the pod's groups and no_new_privs
// (so no capabilities), with exactly spec.env as its environment.
func startPod(dir string, tools podTools, spec podSpec) (*pod, error) {
	root := filepath.Join(dir, "rootfs")
	if err := stageRoot(root, spec); err != nil {
		return nil, err
	}
	var s strings.Builder
	line := func(args ...string) {
		for i, a := range args {
			if i > 0 {
				s.WriteByte(' ')
			}
			s.WriteString(shQuote(a))
		}
		s.WriteByte('\n')
	}
	s.WriteString("set -eu\n")
	line(tools.ip, "link", "set", "lo", "up")
	for _, addr := range podAddresses(spec) {
		line(tools.ip, "addr", "add", addr+"/32", "dev", "lo")
	}
	line(tools.mount, "--bind", root, root)
	line(tools.mount, "-t", "proc", "proc", filepath.Join(root, "proc"))
	for _, m := range spec.mounts {
		args := []string{tools.mount, "--bind"}
		if m.readOnly {
			args = append(args, "-o", "ro")
		}
		line(append(args, m.source, filepath.Join(root, m.target))...)
	}
	if spec.readOnly {
		line(tools.mount, "-o", "remount,bind,ro", root)
	}
	// The shell exports PWD of its own; the container gets spec.env only.
	s.WriteString("echo ready >&3\nexec 3>&-\nread -r go\nexec </dev/null\nunset PWD OLDPWD\n")
	groups := make([]string, 0, len(spec.groups))
	for _, g := range spec.groups {
		groups = append(groups, strconv.FormatInt(g, 10))
	}
	if len(groups) == 0 {
		groups = []string{strconv.FormatInt(spec.gid, 10)}
	}
	s.WriteString("exec ")
	line(append([]string{tools.setpriv, "--no-new-privs", "--", tools.chroot,
		fmt.Sprintf("--userspec=%d:%d", spec.uid, spec.gid), "--groups=" + strings.Join(groups, ","), root}, spec.entrypoint...)...)

	p := &pod{spec: spec, logs: filepath.Join(dir, "container.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logs)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	defer goW.Close()
	p.cmd = exec.Command(tools.unshare, "--mount", "--net", "--propagation", "private", "--", tools.sh, "-c", s.String())
	p.cmd.Env = spec.env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = goR, logFile, logFile
	p.cmd.ExtraFiles = []*os.File{readyW}
	err = p.cmd.Start()
	readyW.Close()
	goR.Close()
	if err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	ready, _ := io.ReadAll(io.LimitReader(readyR, 64))
	if strings.TrimSpace(string(ready)) != "ready" {
		<-p.done
		return nil, fmt.Errorf("pod %s: the sandbox did not come up (%v):\n%s", spec.name, p.state, p.output())
	}
	if p.net, err = openPodNet(p.cmd.Process.Pid); err == nil {
		for addr, target := range spec.services {
			if err = p.net.forward(addr, target); err != nil {
				break
			}
		}
	}
	if err == nil {
		_, err = goW.Write([]byte("go\n"))
	}
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("pod %s: %w", spec.name, err)
	}
	return p, nil
}

// stageRoot makes the container's root: the image's files, hard-linked
// (the container gets no copy it could change), and the mount points.
func stageRoot(root string, spec podSpec) error {
	entries, err := os.ReadDir(spec.image)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Link(filepath.Join(spec.image, e.Name()), filepath.Join(root, e.Name())); err != nil {
			return err
		}
	}
	for _, m := range spec.mounts {
		target := filepath.Join(root, m.target)
		fi, err := os.Stat(m.source)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = os.MkdirAll(target, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
			err = os.WriteFile(target, nil, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// podAddresses are the addresses on the pod's loopback: the pod IP and
// every Service IP the pod connects to.
func podAddresses(spec podSpec) []string {
	addrs := []string{spec.ip}
	for addr := range spec.services {
		host, _, _ := strings.Cut(addr, ":")
		if !slices.Contains(addrs, host) {
			addrs = append(addrs, host)
		}
	}
	return addrs
}

func (p *pod) output() string {
	b, _ := os.ReadFile(p.logs)
	return string(b)
}

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// probe does what the kubelet's httpGet probe does: GET path on the pod
// IP and port; 200-399 is success.
func (p *pod) probe(path string, port int) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: p.net.dial, DisableKeepAlives: true}}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", p.spec.ip, port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), nil
}

// stop sends SIGTERM, as the kubelet does, and waits up to grace for the
// exit code.
func (p *pod) stop(grace time.Duration) (int, error) {
	p.stopping = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		p.net.close()
		return p.state.ExitCode(), nil
	case <-time.After(grace):
		p.kill()
		return -1, fmt.Errorf("pod %s did not exit within %v of SIGTERM; killed", p.spec.name, grace)
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *pod) kill() {
	p.stopping = true
	_ = p.cmd.Process.Kill()
	<-p.done
	if p.net != nil {
		p.net.close()
	}
}

// waitExec waits until the sandbox has become the entrypoint.
func (p *pod) waitExec(timeout time.Duration) error {
	want := filepath.Base(p.spec.entrypoint[0])
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("pod %s exited (%v):\n%s", p.spec.name, p.state, p.output())
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.cmd.Process.Pid))
		return strings.TrimSpace(string(comm)) == want, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("pod %s: %s did not start within %v", p.spec.name, want, timeout)
	}
	return err
}

// procStatus reads /proc/<pid>/status of the running container.
func (p *pod) procStatus() (map[string]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		out[k] = strings.Join(strings.Fields(v), " ")
	}
	return out, sc.Err()
}

// environ is the container's environment, as the process sees it.
func (p *pod) environ() ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// writableMounts lists the mount points, as the container sees them, that
// are mounted read-write.
func (p *pod) writableMounts() ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", p.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	var rw []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// id parent major:minor root mount-point options ...
		f := strings.Fields(l)
		if len(f) < 6 {
			return nil, errors.New("mountinfo: " + l)
		}
		if slices.Contains(strings.Split(f[5], ","), "rw") {
			rw = append(rw, f[4])
		}
	}
	return rw, nil
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
