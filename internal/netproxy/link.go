package netproxy

import (
	"net"
	"time"
)

const (
	// readSize is the most a pipe reads at once.
	readSize = 32 << 10
	// queueLen is how many chunks a pipe holds between reading and
	// writing them. A full queue stops the reading, and the bytes wait
	// in the kernel's buffers, so the next read takes them in one large
	// chunk: the queue holds up to queueLen*readSize bytes, enough for
	// tens of MB/s through a delay of 100ms.
	queueLen = 256
)

// link is one connection accepted and the one dialed to the target for
// it. The proxy's mutex guards upstream and the closing of done.
type link struct {
	client   net.Conn
	upstream net.Conn
	done     chan struct{} // closed when the link is dropped
}

func newLink(client net.Conn) *link {
	return &link{client: client, done: make(chan struct{})}
}

// chunk is what one read returned, and when it is due at the other side.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk once it is due and the proxy is not
// paused. It ends when src ends (after delivering what it read), when a
// write fails, or when the link is dropped; it drops the link, which ends
// the other direction too.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer p.drop(l)
	queue := make(chan chunk, queueLen)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		p.read(l, src, queue)
	}()
	defer func() { <-readerDone }() // after drop, which ends its read
	var timer *time.Timer
	for c := range queue {
		if wait := time.Until(c.due); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-l.done:
				return
			}
		}
		if !p.waitResumed(l.done) {
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

// read reads src into queue, stamping each chunk with the latency of the
// moment it was read, until src ends or the link is dropped.
func (p *Proxy) read(l *link, src net.Conn, queue chan<- chunk) {
	defer close(queue)
	buf := make([]byte, readSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c := chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.currentLatency())}
			select {
			case queue <- c:
			case <-l.done:
				return
			}
		}
		if err != nil {
			return // EOF, or a closed connection
		}
	}
}
