package web_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
	"github.com/quarantine-console/quarantine/views"
)

// hostileProducer makes dead letters a careless or hostile producer would
// send, from a seeded generator: any size up to the server's max payload,
// any bytes in headers (lines without a colon, empty names, no end),
// duplicate and missing contract headers, subjects with long or binary
// tokens, values built to break out of HTML.
type hostileProducer struct {
	r          *rand.Rand
	maxPayload int
}

var hostileValues = []string{scriptTag, attrBreak, jsURL, hostileAll, badUTF8, "{{.}}", "${jndi:ldap://x}", "'; DROP TABLE dead_letters; --", "\u202eevil"}

// token is one subject token: never empty, no white space, no dot, not a
// wildcard.
func (g *hostileProducer) token() string {
	switch g.r.IntN(8) {
	case 0:
		return "acme"
	case 1:
		return "globex"
	case 2:
		return strings.NewReplacer(" ", "_", ".", "_").Replace(hostileValues[g.r.IntN(5)])
	case 3:
		return strings.Repeat("t", 200+g.r.IntN(1300)) // longer than any bound
	case 4:
		b := make([]byte, 1+g.r.IntN(30))
		for i := range b {
			for b[i] = byte(0x21 + g.r.IntN(0xff-0x21+1)); b[i] == '.'; b[i] = byte(0x21 + g.r.IntN(0xff-0x21+1)) {
			}
		}
		if s := string(b); s != "*" && s != ">" {
			return s
		}
		return "x"
	}
	return "t" + strconv.Itoa(g.r.IntN(50))
}

func (g *hostileProducer) subject() string {
	s := "dlq." + g.token()
	for n := g.r.IntN(4); n > 0 && len(s) < 2500; n-- {
		s += "." + g.token()
	}
	return s
}

// value is a header value: no CR or LF (those break lines; badLine does
// that on purpose), anything else goes.
func (g *hostileProducer) value() string {
	switch g.r.IntN(10) {
	case 0, 1:
		return hostileValues[g.r.IntN(len(hostileValues))]
	case 2:
		return strings.Repeat("v", g.r.IntN(8<<10))
	case 3:
		b := make([]byte, g.r.IntN(200))
		for i := range b {
			for b[i] = byte(g.r.IntN(256)); b[i] == '\r' || b[i] == '\n'; b[i] = byte(g.r.IntN(256)) {
			}
		}
		return string(b)
	case 4:
		return []string{"0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-29T09:00:00.5Z", "yesterday", "1e309"}[g.r.IntN(5)]
	case 5:
		return []string{"-3", "99999999999999999999", "3", "0", "many", "500000"}[g.r.IntN(6)]
	case 6:
		return []string{"transient", "permanent", "policy", "kaboom", ""}[g.r.IntN(5)]
	case 7:
		return "app.acme." + []string{"orders.refund", "*", ">", "a..b", "x y"}[g.r.IntN(5)]
	}
	return fmt.Sprintf("v-%d", g.r.IntN(1000))
}

var contractHeaders = []string{
	dlq.HeaderOriginalSubject, dlq.HeaderOriginalMsgID, dlq.HeaderOperationID, dlq.HeaderTenant, dlq.HeaderItemType,
	dlq.HeaderError, dlq.HeaderErrorClass, dlq.HeaderStack, dlq.HeaderAttempts, dlq.HeaderFirstFailedAt,
	dlq.HeaderLastFailedAt, dlq.HeaderConsumer, dlq.HeaderCorrelationID, dlq.HeaderPrincipal,
}

// headerBlock returns the header block of one dead letter; nil sends none.
func (g *hostileProducer) headerBlock() []byte {
	switch g.r.IntN(10) {
	case 0:
		return nil
	case 1:
		b := make([]byte, g.r.IntN(2000))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	}
	var b bytes.Buffer
	b.WriteString("NATS/1.0\r\n")
	line := func(name, value string) { b.WriteString(name + ": " + value + "\r\n") }
	for _, h := range contractHeaders {
		if g.r.IntN(10) < 3 {
			continue // missing
		}
		n := 1
		if g.r.IntN(5) == 0 {
			n += 1 + g.r.IntN(2) // sent twice or three times
		}
		for range n {
			line(h, g.value())
		}
	}
	for n := g.r.IntN(5); n > 0; n-- {
		name := make([]byte, 1+g.r.IntN(20))
		for i := range name {
			name[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"[g.r.IntN(64)]
		}
		line("X-"+string(name), g.value())
	}
	if g.r.IntN(20) == 0 {
		line(dlq.HeaderNatsMsgID, fmt.Sprintf("dup-%d", g.r.IntN(20))) // JetStream drops repeats
	}
	if g.r.IntN(6) == 0 {
		b.WriteString([]string{"no colon on this line", ": empty name", "\xff\xfe\x00", "X-Split: a\rb", "  : x"}[g.r.IntN(5)] + "\r\n")
	}
	if g.r.IntN(10) != 0 {
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// payload returns data of a size that, with hdr, is at most the server's
// max payload: mostly small, some large, a few exactly at the limit.
func (g *hostileProducer) payload(hdr []byte) []byte {
	room := g.maxPayload - len(hdr)
	var n int
	switch k := g.r.IntN(100); {
	case k < 2:
		n = room
	case k < 5:
		n = 64<<10 + g.r.IntN(max(room-64<<10, 1))
	default:
		n = int(math.Exp(g.r.Float64() * math.Log(64<<10)))
	}
	n = max(0, min(n, room))
	switch g.r.IntN(3) {
	case 0:
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	case 1:
		s := fmt.Sprintf(`{"note":%q,"pad":"`, hostileValues[g.r.IntN(len(hostileValues))])
		body := []byte(s + strings.Repeat("y", max(n-len(s)-2, 0)) + `"}`)
		return body[:min(n, len(body))]
	}
	unit := []byte(hostileValues[g.r.IntN(len(hostileValues))] + "\n")
	return bytes.Repeat(unit, n/len(unit)+1)[:n]
}

func TestIngestRandomHostileMessages(t *testing.T) {
	t.Parallel()
	seed := uint64(20261129)
	if s := os.Getenv("HOSTILE_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	const count = 2000
	t.Logf("seed %d (HOSTILE_SEED=%d reproduces this run), %d dead letters", seed, seed, count)
	const maxPayload = 1 << 20 // NATS's default
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{NATS: func(o *server.Options) { o.MaxPayload = maxPayload }})
	ctx := context.Background()
	g := &hostileProducer{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), maxPayload: maxPayload}

	raw := b.NATS.DialRaw(t)
	var accepted, rejected, duplicates, atLimit int
	for range count {
		subject, hdr := g.subject(), g.headerBlock()
		data := g.payload(hdr)
		if len(hdr)+len(data) == g.maxPayload {
			atLimit++
		}
		ack, err := raw.Publish(subject, hdr, data)
		switch {
		case err != nil:
			rejected++ // JetStream refused it (e.g. headers over 64 KB): not a dead letter the console got
			if strings.Contains(err.Error(), "server said") {
				raw = b.NATS.DialRaw(t) // the server closed the connection
			}
		case ack.Duplicate:
			duplicates++
		default:
			accepted++
		}
	}
	t.Logf("published %d: %d accepted, %d refused by JetStream, %d duplicates dropped by it, %d at the max payload",
		count, accepted, rejected, duplicates, atLimit)
	require.Greater(t, accepted, count*9/10, "the generator makes mostly messages JetStream accepts")
	require.Positive(t, atLimit)

	// Every accepted message is one row, and ingest drained the stream.
	wait.Until(t, fmt.Sprintf("%d rows", accepted), 3*time.Minute, func() bool {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
		return n >= accepted
	})
	cons, err := b.JetStream.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "the consumer to have nothing pending", time.Minute, func() bool {
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		return info.NumPending == 0 && info.NumAckPending == 0
	})
	var rows, raws int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE 'raw_form' = ANY(flags)) FROM dead_letters`).Scan(&rows, &raws))
	assert.Equal(t, accepted, rows, "rows equal messages accepted")
	assert.Zero(t, metric(t, b, "quarantine_ingest_unstorable_total"), "every dead letter stored")
	assert.Zero(t, metric(t, b, "quarantine_ingest_store_errors_total"))
	wait.Until(t, "the health check to see the stream drained", time.Minute, func() bool {
		h := b.IngestHealth()
		return len(h.Streams) == 1 && h.Streams[0].Waiting() == 0 && h.Streams[0].CheckErr == ""
	})
	assert.Empty(t, b.IngestHealth().Stalled(time.Now().Add(time.Hour)), "nothing waits, so nothing can be stalled")
	t.Logf("%d rows, %d in raw form", rows, raws)

	// Every detail page renders, and renders what came from the message as
	// text: nothing executable, valid UTF-8, the tenant and id as stored.
	c, _ := b.SignIn(t, "*:oncall")
	type row struct {
		id            int64
		tenant, msgID string
	}
	dbRows, err := b.Pool.Query(ctx, `SELECT id, tenant, msg_id FROM dead_letters ORDER BY id`)
	require.NoError(t, err)
	var all []row
	for dbRows.Next() {
		var r row
		require.NoError(t, dbRows.Scan(&r.id, &r.tenant, &r.msgID))
		all = append(all, r)
	}
	require.NoError(t, dbRows.Err())
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(all); i = int(next.Add(1) - 1) {
				r := all[i]
				resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", r.id), nil, nil)
				if !assert.Equal(t, http.StatusOK, resp.Status, "dead letter %d", r.id) {
					continue
				}
				assert.True(t, utf8.ValidString(resp.Body), "dead letter %d: page is not UTF-8", r.id)
				d := resp.Doc(t)
				assertNothingExecutable(t, d, resp.Body)
				// Values read as they are: hidden and direction-changing
				// characters (a carriage return too) as their markers
				// (views.Shown). An id longer than views.IDShownMax is shown
				// as its first IDShownMax bytes, whole characters, and the
				// page says it was cut.
				assert.Equal(t, views.Shown(r.tenant), byID(d, "dl-tenant").Text(), "dead letter %d", r.id)
				got := byID(d, "dl-msgid").Text()
				if len(r.msgID) <= views.IDShownMax {
					assert.Equal(t, views.Shown(r.msgID), got, "dead letter %d", r.id)
				} else {
					shown := false
					for n := views.IDShownMax - utf8.UTFMax + 1; n <= views.IDShownMax; n++ {
						shown = shown || utf8.ValidString(r.msgID[:n]) && views.Shown(r.msgID[:n]) == got
					}
					assert.True(t, shown, "dead letter %d: the page shows %.80q of an id of %d bytes", r.id, got, len(r.msgID))
					assert.Equal(t, "dl-id-cut", byID(d, "dl-msgid").Next().AttrOr("data-testid", ""), "dead letter %d", r.id)
				}
				assertNoHiddenText(t, d)
			}
		})
	}
	wg.Wait()
	t.Logf("%d detail pages checked", len(all))

	// The list and the dashboard over all of them.
	for _, path := range []string{"/deadletters", "/", "/groups"} {
		resp := b.Do(t, c, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, path)
		assertNothingExecutable(t, resp.Doc(t), resp.Body)
	}
}
