package dlq

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest27FingerprintGroupsByTheFramesBelowTheGoroutineLine
// (review 27a): the fingerprint takes the top StackFramesInFingerprint
// lines of a stack trace, skipping Go's "goroutine N [state]:" line, which
// says nothing of where it failed. The same failure reported with and
// without that line (a producer that trims it, another goroutine number,
// other arguments, line numbers and offsets) is one group; a stack whose
// caller differs (its third line) is another problem, in another group.
// Counting the goroutine line as a frame split the first pair, and taking
// fewer lines merged the second; no test saw either.
func TestRevIngest27FingerprintGroupsByTheFramesBelowTheGoroutineLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)
	stack := func(goroutine, n, caller string) string {
		s := "main.charge(0xc000" + n + ")\n\t/app/charge.go:4" + n + " +0x1d\n" +
			"main." + caller + "(0x" + n + ")\n\t/app/" + caller + ".go:1" + n + " +0x2f\n" +
			"main.main()\n\t/app/main.go:" + n + " +0x3d\n"
		if goroutine != "" {
			s = "goroutine " + goroutine + " [running]:\n" + s
		}
		return s
	}
	send := func(payload, st string) {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte(payload), Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.orders.refund"}, HeaderErrorClass: {"transient"},
			HeaderError: {"card declined"}, HeaderStack: {EscapeLines(st)}}})
	}
	send("http", stack("7", "123", "fromHTTP"))
	send("http trimmed", stack("", "999", "fromHTTP"))
	send("queue", stack("7", "123", "fromQueue"))
	b.waitRows(t, 3)

	fp := func(payload string) string {
		var f string
		require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT fingerprint FROM dead_letters WHERE payload = $1`, []byte(payload)).Scan(&f))
		return f
	}
	assert.Equal(t, fp("http"), fp("http trimmed"), "the goroutine line, numbers, arguments, lines and offsets do not split a group")
	assert.NotEqual(t, fp("http"), fp("queue"), "a stack whose caller differs is another problem")
}

// TestRevIngest27SaysWhyADeadLetterOutsideThePrefixHasNoTenant (review
// 27a): a dead letter whose subject does not start with the prefix and a
// tenant is filed under UnknownTenant, and the operator is told why
// (missing:tenant); with the flag gone it sat in "unknown" unexplained.
func TestRevIngest27SaysWhyADeadLetterOutsideThePrefixHasNoTenant(t *testing.T) {
	t.Parallel()
	r := ParseDLQ("dlq", received("deadletters.acme.orders", map[string][]string{
		HeaderOriginalSubject: {"app.acme.orders"}, HeaderItemType: {"orders"}}, "x"))
	assert.Equal(t, UnknownTenant, r.Tenant)
	assert.Contains(t, r.Flags, "missing:tenant")
	assert.Contains(t, strings.Join(r.MalformedReasons, "\n"), `does not start with "dlq." followed by a tenant`)
}
