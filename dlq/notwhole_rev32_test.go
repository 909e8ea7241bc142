package dlq

import (
	"encoding/base64"
	"testing"
	"time"

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
