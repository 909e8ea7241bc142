package natstest

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
)

// StallProxy stands between NATS clients and a server as a network path
// that can stall one way: while held, what clients write is kept, as a
// stalled path leaves it in the sender's kernel to be sent again, and
// delivered in order when released. As TCP does with that data, a client
// that closes its connection gracefully (FIN) still has it delivered
// when released; one that resets it (RST, SO_LINGER 0) has it dropped,
// and its server connection closed.
type StallProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	cond *sync.Cond
	held bool
	// queued, dropped and late count bytes: kept for a server now,
	// dropped by a client's reset, delivered after their client closed.
	queued, dropped, late int
}

// Stall starts a proxy to s on a loopback port, closed at cleanup.
func (s *Server) Stall(t testing.TB) *StallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("stall proxy: %v", err)
	}
	p := &StallProxy{ln: ln}
	p.cond = sync.NewCond(&p.mu)
	target := s.Addr().String()
	go p.serve(target)
	t.Cleanup(func() {
		ln.Close()
		p.Release()
	})
	return p
}

// URL is the address clients connect to.
func (p *StallProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Hold stalls what clients write from now on; Release delivers it.
func (p *StallProxy) Hold() { p.mu.Lock(); p.held = true; p.mu.Unlock() }

func (p *StallProxy) Release() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Dropped is how many bytes held for a server were dropped by a client's
// reset.
func (p *StallProxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Late is how many bytes reached a server after the client that wrote
// them closed its connection: what a stalled path delivered when it
// healed, which the client no longer waited for.
func (p *StallProxy) Late() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.late
}

// Settled reports whether nothing is kept for a server: everything
// written has been delivered or dropped.
func (p *StallProxy) Settled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queued == 0
}

func (p *StallProxy) serve(target string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		go func() { _, _ = io.Copy(c, s); c.Close() }()
		go p.forward(c, s)
	}
}

// forward reads what client c writes as it comes, so that its close is
// seen while held, and hands it to server s in order when not held.
func (p *StallProxy) forward(c, s net.Conn) {
	var queue [][]byte
	ended, reset := false, false
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			p.mu.Lock()
			if n > 0 {
				queue = append(queue, append([]byte(nil), buf[:n]...))
				p.queued += n
			}
			if err != nil {
				ended, reset = true, errors.Is(err, syscall.ECONNRESET)
			}
			p.cond.Broadcast()
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for !reset && (p.held || len(queue) == 0) && !(ended && len(queue) == 0) {
			p.cond.Wait()
		}
		if reset {
			for _, b := range queue {
				p.dropped += len(b)
				p.queued -= len(b)
			}
			queue = nil
			s.Close()
			return
		}
		if len(queue) == 0 { // ended, all delivered
			s.Close()
			return
		}
		b := queue[0]
		queue = queue[1:]
		p.mu.Unlock()
		_, err := s.Write(b)
		p.mu.Lock()
		p.queued -= len(b)
		if ended && err == nil {
			p.late += len(b)
		}
		if err != nil {
			for _, b := range queue {
				p.queued -= len(b)
			}
			s.Close()
			return
		}
	}
}
