package netproxy

import (
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the dial to the target of a connection accepted.
const dialTimeout = 10 * time.Second

// Proxy forwards every TCP connection it accepts to its target, through
// a link of its own, until the test says otherwise.
type Proxy struct {
	ln   net.Listener
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu      sync.Mutex
	target  string
	resumed chan struct{} // closed while not paused
	cut     bool
	latency time.Duration
	closed  bool
	links   map[*link]struct{}
}

// New starts a proxy on 127.0.0.1 (a port of the kernel's choosing) that
// forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	resumed := make(chan struct{})
	close(resumed)
	p := &Proxy{ln: ln, done: make(chan struct{}), target: target, resumed: resumed, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the host:port clients connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pause holds every byte in both directions, of the connections open and
// of those accepted meanwhile (not yet dialed to the target), until
// Resume. Connections stay open, as they do while packets are lost, so a
// client's requests hang until its own timeouts fire. A chunk already
// being written when Pause is called may still arrive.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused() {
		return
	}
	p.resumed = make(chan struct{})
}

// Resume delivers what Pause held, in order, and lets bytes flow again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused() {
		close(p.resumed)
	}
}

// paused is called with mu held.
func (p *Proxy) paused() bool {
	select {
	case <-p.resumed:
		return false
	default:
		return true
	}
}

// Cut takes the link down: it closes every connection through the proxy,
// dropping the bytes in flight, and until Restore closes every new one as
// soon as it is accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for l := range p.links {
		p.dropLocked(l)
	}
}

// Restore brings the link up again after Cut: new connections are
// forwarded.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// SetLatency delivers every chunk read from then on d after it was read,
// in both directions, keeping the order of the bytes; reading goes on
// meanwhile, so the link's throughput stays what it was, only later. 0
// turns it off. Chunks read before keep the delay they were read with.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// Retarget forwards the connections accepted from then on to addr; those
// open stay with the old target.
func (p *Proxy) Retarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// Close stops accepting, closes every connection and waits until every
// goroutine of the proxy has ended.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	_ = p.ln.Close() // the accept loop ends on its error
	for l := range p.links {
		p.dropLocked(l)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // Close
		}
		l := p.admit(c)
		if l == nil {
			continue
		}
		p.wg.Add(1)
		go p.serve(l)
	}
}

// admit registers the link of a connection accepted, or closes it when
// the link is cut or the proxy closed.
func (p *Proxy) admit(c net.Conn) *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		_ = c.Close()
		return nil
	}
	l := newLink(c)
	p.links[l] = struct{}{}
	return l
}

// serve dials the target once the proxy is not paused, then forwards both
// ways until either side ends or the link is dropped.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer p.drop(l)
	if !p.waitResumed(l.done) {
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	upstream, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		return
	}
	if !p.attach(l, upstream) {
		return
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() { defer pipes.Done(); p.pipe(l, upstream, l.client) }()
	go func() { defer pipes.Done(); p.pipe(l, l.client, upstream) }()
	pipes.Wait()
}

// attach gives the link its upstream connection, or closes that when the
// link was dropped while it was being dialed.
func (p *Proxy) attach(l *link, upstream net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.links[l]; !ok {
		_ = upstream.Close()
		return false
	}
	l.upstream = upstream
	return true
}

// waitResumed waits while the proxy is paused; false if done closed
// first.
func (p *Proxy) waitResumed(done <-chan struct{}) bool {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	select {
	case <-resumed:
		return true
	case <-done:
		return false
	}
}

func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(l)
}

// dropLocked closes the link's connections, which ends its pipes; it is
// called with mu held.
func (p *Proxy) dropLocked(l *link) {
	if _, ok := p.links[l]; !ok {
		return
	}
	delete(p.links, l)
	close(l.done)
	_ = l.client.Close()
	if l.upstream != nil {
		_ = l.upstream.Close()
	}
}
