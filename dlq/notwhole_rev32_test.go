package dlq

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest32ForgedUnsendableHeadersAreNotRead: Dlq-Unsendable-Headers
// is read back into a dead letter's headers; a producer that is not the
// helper must not use it to slip in a header of a name NATS sends (a
// Dlq-Principal, say, around the rename of upstream Dlq-* headers). Such a
// value, or one that is not base64 of a header block, is kept as it came,
// flagged invalid:unsendable_headers, and nothing of it is read.
func TestRevIngest32ForgedUnsendableHeadersAreNotRead(t *testing.T) {
	block := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for name, v := range map[string]string{
		"SendableName": block("NATS/1.0\r\nDlq-Principal: root\r\nX Trace: 1\r\n\r\n"),
		"NotBase64":    "!!",
		"NotABlock":    block("X Trace 1"),
	} {
		t.Run(name, func(t *testing.T) {
			r := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 1, Time: time.Now(),
				Header: map[string][]string{HeaderUnsendable: {v}, HeaderOriginalSubject: {"app.acme.orders"}}})
			assert.Contains(t, r.Flags, "invalid:unsendable_headers")
			assert.NotContains(t, r.Flags, FlagUnsendableNames)
			assert.Empty(t, r.Principal)
			h, err := DecodeHeaders(r.Headers)
			require.NoError(t, err)
			assert.Equal(t, []string{v}, h[HeaderUnsendable], "kept as it came")
			assert.NotContains(t, h, "X Trace")
		})
	}
}

// TestRevIngest32UnreadMarkersStillBlock: a Dlq-Unsendable-Headers the
// ingester does not read (a block of an empty name beside unsendable ones,
// which the helper writes; the header in another case, as a gateway that
// lower-cases names sends it) left the dead letter replayable without the
// headers it carries (a replay drops every Dlq-* header); and a forged
// Dlq-Left-Out "payload" beside a payload that came made that payload
// "gone from its stream", its download refused. Both now block a replay
// (NotWholeOf), and the payload that came is kept and shown.
func TestRevIngest32UnreadMarkersStillBlock(t *testing.T) {
	parse := func(h map[string][]string, payload string) Record {
		h[HeaderOriginalSubject] = []string{"app.acme.orders"}
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 1, Time: time.Now(), Header: h, Data: []byte(payload)})
	}
	m, err := NewMessage("dlq", "acme", "orders", &nats.Msg{Subject: "app.acme.orders", Header: nats.Header{"": {"x"}, "X Trace": {"1"}}, Data: []byte("{}")},
		Origin{}, Failure{Err: errors.New("boom")})
	require.NoError(t, err)
	require.NotEmpty(t, m.Header.Get(HeaderUnsendable))
	t.Run("EmptyNameBesideUnsendable", func(t *testing.T) {
		r := parse(map[string][]string{HeaderUnsendable: m.Header[HeaderUnsendable]}, "{}")
		assert.NotEmpty(t, NotWholeOf(r.Flags), "flags %v", r.Flags)
	})
	t.Run("LowerCase", func(t *testing.T) {
		r := parse(map[string][]string{strings.ToLower(HeaderUnsendable): m.Header[HeaderUnsendable]}, "{}")
		assert.NotEmpty(t, NotWholeOf(r.Flags), "flags %v", r.Flags)
	})
	t.Run("ForgedPayloadLeftOut", func(t *testing.T) {
		r := parse(map[string][]string{HeaderLeftOut: {"payload: x"}}, `{"order":1}`)
		assert.False(t, r.PayloadUnavailable, "the payload came: it is kept and shown")
		assert.Equal(t, `{"order":1}`, string(r.Payload))
		assert.Contains(t, r.Flags, "invalid:left_out")
		assert.NotEmpty(t, NotWholeOf(r.Flags))
	})
	t.Run("PayloadLeftOut", func(t *testing.T) {
		r := parse(map[string][]string{HeaderLeftOut: {"payload: 9000000 bytes, over max_payload"}}, "")
		assert.True(t, r.PayloadUnavailable)
		assert.Equal(t, "left_out:payload", NotWholeOf(r.Flags))
	})
}
