package natstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RawConn is a client connection that speaks the NATS protocol by hand, so
// a test can publish what no well-behaved client sends: header blocks that
// are not well formed, lines without a colon, any bytes at all. It plays the
// hostile producer; the server it talks to is real.
type RawConn struct {
	conn  net.Conn
	r     *bufio.Reader
	inbox string
}

// PubAck is JetStream's answer to a publish on a stream's subject.
type PubAck struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Error     *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// DialRaw connects to the server at its client port and subscribes to a
// private inbox for JetStream acks; the connection closes at cleanup.
func (s *Server) DialRaw(t testing.TB) *RawConn {
	t.Helper()
	addr := s.Addr().String()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	rc := &RawConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), inbox: fmt.Sprintf("_INBOX.raw.%d", time.Now().UnixNano())}
	if _, err := rc.line(); err != nil { // INFO
		t.Fatalf("read INFO: %v", err)
	}
	hello := `CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}` + "\r\nSUB " + rc.inbox + " 1\r\nPING\r\n"
	if _, err := io.WriteString(conn, hello); err != nil {
		t.Fatalf("connect: %v", err)
	}
	for {
		l, err := rc.line()
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if l == "PONG" {
			return rc
		}
		if strings.HasPrefix(l, "-ERR") {
			t.Fatalf("connect: %s", l)
		}
	}
}

// Publish sends data to subject with hdr as its header block, byte for byte
// (nil sends a message without one), and returns JetStream's ack.
func (rc *RawConn) Publish(subject string, hdr, data []byte) (PubAck, error) {
	var ack PubAck
	_ = rc.conn.SetDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = rc.conn.SetDeadline(time.Time{}) }()
	var head string
	if hdr == nil {
		head = fmt.Sprintf("PUB %s %s %d\r\n", subject, rc.inbox, len(data))
	} else {
		head = fmt.Sprintf("HPUB %s %s %d %d\r\n", subject, rc.inbox, len(hdr), len(hdr)+len(data))
	}
	msg := make([]byte, 0, len(head)+len(hdr)+len(data)+2)
	msg = append(append(append(append(msg, head...), hdr...), data...), "\r\n"...)
	if _, err := rc.conn.Write(msg); err != nil {
		return ack, fmt.Errorf("publish to %q: %w", subject, err)
	}
	for {
		l, err := rc.line()
		if err != nil {
			return ack, fmt.Errorf("publish to %q: %w", subject, err)
		}
		switch {
		case l == "PING":
			if _, err := io.WriteString(rc.conn, "PONG\r\n"); err != nil {
				return ack, err
			}
		case l == "PONG", l == "+OK":
		case strings.HasPrefix(l, "-ERR"):
			return ack, fmt.Errorf("publish to %q: server said %s", subject, l)
		case strings.HasPrefix(l, "MSG "), strings.HasPrefix(l, "HMSG "):
			body, hdrLen, err := rc.payload(l)
			if err != nil {
				return ack, err
			}
			if hdrLen > 0 { // a status: no responders, or the like
				return ack, fmt.Errorf("publish to %q: %q", subject, strings.TrimSpace(string(body[:hdrLen])))
			}
			if err := json.Unmarshal(body, &ack); err != nil {
				return ack, fmt.Errorf("publish to %q: ack %q: %w", subject, body, err)
			}
			if ack.Error != nil {
				return ack, fmt.Errorf("publish to %q: %d %s", subject, ack.Error.Code, ack.Error.Description)
			}
			return ack, nil
		}
	}
}

func (rc *RawConn) line() (string, error) {
	l, err := rc.r.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

// payload reads the body announced by a MSG or HMSG line; hdrLen is the
// size of its header block (0 for MSG).
func (rc *RawConn) payload(l string) ([]byte, int, error) {
	f := strings.Fields(l)
	total, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		return nil, 0, fmt.Errorf("bad line %q", l)
	}
	hdrLen := 0
	if f[0] == "HMSG" {
		if hdrLen, err = strconv.Atoi(f[len(f)-2]); err != nil {
			return nil, 0, fmt.Errorf("bad line %q", l)
		}
	}
	buf := make([]byte, total+2)
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		return nil, 0, err
	}
	return buf[:total], hdrLen, nil
}
