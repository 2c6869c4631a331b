package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// pausableProxy forwards TCP connections to a target and can hold every
// byte in both directions: a network partition between one client and the
// target, while the client's other connections (NATS) keep working.
// Connections stay open while paused, as they do when packets are lost,
// so the client's requests hang until its own timeouts fire. Or it can cut
// the link: close every connection and refuse new ones.
type pausableProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	cutOff bool // connections are closed and refused, as by a link that is down
	resume *sync.Cond
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *pausableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausableProxy{ln: ln, target: target}
	p.resume = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *pausableProxy) addr() string { return p.ln.Addr().String() }

func (p *pausableProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *pausableProxy) serve(client net.Conn) {
	p.waitResumed()
	p.mu.Lock()
	refused := p.cutOff
	p.mu.Unlock()
	if refused {
		client.Close()
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, upstream)
	p.mu.Unlock()
	go p.pipe(upstream, client)
	p.pipe(client, upstream)
}

// pipe copies src to dst, holding each chunk while the proxy is paused.
func (p *pausableProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitResumed()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the other pipe ends too
		}
	}
}

func (p *pausableProxy) waitResumed() {
	p.mu.Lock()
	for p.paused {
		p.resume.Wait()
	}
	p.mu.Unlock()
}

func (p *pausableProxy) pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

func (p *pausableProxy) unpause() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	p.resume.Broadcast()
}

// cut closes every connection through the proxy and refuses new ones
// until restore: a link that went down.
func (p *pausableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *pausableProxy) restore() {
	p.mu.Lock()
	p.cutOff = false
	p.mu.Unlock()
}

func (p *pausableProxy) close() {
	p.ln.Close()
	p.unpause()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// kubeconfigVia writes a copy of the test kubeconfig whose server is the
// proxy, and returns its path.
func (h *harness) kubeconfigVia(p *pausableProxy) string {
	h.t.Helper()
	b, err := os.ReadFile(h.env.KubeconfigPath())
	if err != nil {
		h.t.Fatal(err)
	}
	direct := strings.TrimPrefix(h.env.APIServerURL(), "https://")
	if !strings.Contains(string(b), direct) {
		h.t.Fatalf("kubeconfig %s does not name %s", h.env.KubeconfigPath(), direct)
	}
	path := filepath.Join(h.t.TempDir(), "kubeconfig-via-proxy")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), direct, p.addr())), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path
}
