package dlq

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34UpstreamHeaderValueDoesNotBlockAReplay: an original carrying
// an earlier hop's Dlq-* header with a trailing blank (nats.go trims only
// leading ones when it reads) got Dlq-Left-Out: header_value, so the
// console never replayed it; but that header is renamed Upstream-Dlq-*,
// which a replay never sends. Only values a replay sends count.
func TestRev34UpstreamHeaderValueDoesNotBlockAReplay(t *testing.T) {
	t.Parallel()
	orig := &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{"Nats-Msg-Id": {"refund-9"}, "Dlq-Trace": {"abc "}}, Data: []byte(`{}`)}
	dl, err := NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused")})
	require.NoError(t, err)
	assert.Equal(t, "abc ", dl.Header.Get(UpstreamPrefix+"Dlq-Trace"), "kept, renamed")
	assert.Empty(t, dl.Header.Values(HeaderLeftOut), "a header a replay never sends does not block it")

	orig.Header.Set("X-Trace", "abc ")
	dl, err = NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused")})
	require.NoError(t, err)
	require.Len(t, dl.Header.Values(HeaderLeftOut), 1, "one a replay sends does")
	assert.Contains(t, dl.Header.Values(HeaderLeftOut)[0], "X-Trace")
	assert.NotContains(t, dl.Header.Values(HeaderLeftOut)[0], "Dlq-Trace")
}

// TestRev34HeaderBlockNearTheLimitKeepsThePayload: an original whose
// headers bring the dead letter's header block within a retry's id of
// the 65,535 bytes JetStream stores kept its headers at the step that
// leaves them out (it counted the block without that room) and lost its
// payload instead, "over the server's max_payload of 0", a limit that was
// not known, let alone met: the dead letter was never replayable. The
// original's headers are left out, as for a block over the limit, and the
// payload kept.
func TestRev34HeaderBlockNearTheLimitKeepsThePayload(t *testing.T) {
	t.Parallel()
	base := &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{"Nats-Msg-Id": {"refund-9"}}, Data: []byte(`{"a":1}`)}
	// A fixed failure time: Dlq-Last-Failed-At of now would vary in
	// length (RFC 3339 drops trailing zeros of the nanoseconds), and the
	// block with it.
	fail := Failure{Err: errors.New("refused"), LastFailedAt: time.Date(2026, 12, 6, 12, 0, 0, 123456789, time.UTC)}
	probe, err := NewMessage("dlq", "acme", "orders.refund", base, Origin{}, fail)
	require.NoError(t, err)
	room := maxHeaderBlock - headerBlockLen(probe.Header)
	for _, under := range []int{1, retryIDRoom / 2, retryIDRoom - 1} {
		orig := &nats.Msg{Subject: base.Subject, Header: nats.Header{"Nats-Msg-Id": {"refund-9"}}, Data: base.Data}
		// "X-Big: <value>\r\n" brings the block to `under` bytes short of the limit.
		orig.Header.Set("X-Big", strings.Repeat("v", room-under-len("X-Big: \r\n")))
		dl, err := NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, fail)
		require.NoError(t, err)
		assert.Equal(t, base.Data, dl.Data, "%d bytes under the limit: the payload is kept", under)
		left := strings.Join(dl.Header.Values(HeaderLeftOut), "\n")
		assert.NotContains(t, left, "payload:", "%d under", under)
		assert.Contains(t, left, "headers:", "%d under: the original's headers are left out, as for a block over the limit", under)
		assert.LessOrEqual(t, headerBlockLen(dl.Header)+retryIDRoom, maxHeaderBlock)
	}
}

// TestRev34ProducerRefusesWhatTheConsoleWouldFlag: the helper sent a
// tenant the console stores under "unknown" (not UTF-8, NUL, U+FFFD, a
// blank other than a space), an item type it flags invalid (a no-break
// space), and an error class only the console assigns (terminated,
// max_deliveries, unreadable), each a dead letter flagged at once; it
// refuses them where the producer can fix them. The classes a producer
// sends, and unclassified, still go.
func TestRev34ProducerRefusesWhatTheConsoleWouldFlag(t *testing.T) {
	t.Parallel()
	orig := &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{"Nats-Msg-Id": {"refund-9"}}, Data: []byte(`{}`)}
	fail := Failure{Err: errors.New("refused")}
	for _, tenant := range []string{"acme\xff", "ac\uFFFDme", "a\x00b", "ac\tme", "ac\u00a0me"} {
		_, err := NewMessage("dlq", tenant, "orders.refund", orig, Origin{}, fail)
		assert.Error(t, err, "tenant %q", tenant)
	}
	for _, itemType := range []string{"orders.re\u00a0fund", "orders..refund", "orders.*"} {
		_, err := NewMessage("dlq", "acme", itemType, orig, Origin{}, fail)
		assert.Error(t, err, "item type %q", itemType)
	}
	for _, class := range []ErrorClass{ClassTerminated, ClassMaxDeliveries, ClassUnreadable, "Transient"} {
		_, err := NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused"), Class: class})
		assert.Error(t, err, "class %q", class)
	}
	for _, class := range append(append([]ErrorClass{}, ProducerClasses...), ClassUnclassified, "") {
		dl, err := NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused"), Class: class})
		require.NoError(t, err, "class %q", class)
		rec := ParseDLQ("dlq", Received{Subject: dl.Subject, Header: dl.Header, Data: dl.Data, Stream: "DLQ", Seq: 1})
		assert.Empty(t, rec.Flags, "class %q: the console takes it as sent", class)
	}
}
