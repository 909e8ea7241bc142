package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// metric reads one series of the console's /metrics (on its own
// listener), e.g.
// `quarantine_ingest_pending_messages{stream="DLQ"}`; -1 when it is not
// there.
func metric(t *testing.T, b *testfactory.Console, series string) float64 {
	t.Helper()
	resp, err := http.Get(b.MetricsURL())
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	return -1
}

// ready returns /readyz's status and the problems it names.
func ready(t *testing.T, b *testfactory.Console) (int, []string) {
	t.Helper()
	resp, err := http.Get(b.URL() + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Problems []string `json:"problems"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body.Problems
}

// stalled waits until the console calls ingest stalled (the dashboard's
// Ingest line) and returns why.
func stalled(t *testing.T, b *testfactory.Console) []string {
	t.Helper()
	var why []string
	wait.Until(t, "ingest to count as stalled", time.Minute, func() bool {
		why = b.IngestHealth().Stalled(time.Now())
		return len(why) > 0
	})
	return why
}

// TestIngestStallMakesNotReady: a dead letter PostgreSQL refuses, with
// nothing else arriving, is a stall after INGEST_STALL_AFTER: the
// dashboard says so and why. (Named for what it asserted until review
// rev-ops: /readyz no longer fails on a stall, which every replica sees at
// once, since they watch one consumer; it stays ready, and the alert
// DeadLetterIngestStalled and the dashboard report the stall.)
func TestIngestStallMakesNotReady(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.StallAfter = 2 * time.Second
		c.IngestTuning = func(ic *dlq.IngestConfig) {
			ic.HealthEvery, ic.RetryUnstorable = 100*time.Millisecond, 300*time.Millisecond
		}
	}})
	ctx := context.Background()
	c, _ := b.SignIn(t, "acme:oncall")
	const pending = `quarantine_ingest_pending_messages{stream="DLQ"}`
	wait.Until(t, "ready, with ingest checked", 30*time.Second, func() bool {
		code, _ := ready(t, b)
		return code == http.StatusOK && metric(t, b, pending) == 0
	})
	assert.Contains(t, text(byID(b.Do(t, c, "GET", "/", nil, nil).Doc(t), "ingest-lag")), "up to date")

	// PostgreSQL refuses one tenant's dead letters in every form: that
	// message stays unacked, the consumer's ack floor stands still.
	_, err := b.DB.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refuses_tenant CHECK (tenant <> 'stuck')`)
	require.NoError(t, err)
	_, err = b.JetStream.Publish(ctx, "dlq.stuck.orders.refund", []byte("cannot be stored"))
	require.NoError(t, err)
	for i := range 3 {
		_, err = b.JetStream.Publish(ctx, "dlq.acme.orders.refund", fmt.Appendf(nil, "after %d", i))
		require.NoError(t, err)
	}
	// The others are stored meanwhile. (Waited for first: on a busy machine
	// storing them can take longer than INGEST_STALL_AFTER, and the stall
	// would be reported before they are rows.)
	acme := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE tenant = 'acme'`).Scan(&n))
		return n
	}
	wait.Until(t, "the others stored", 30*time.Second, func() bool { return acme() == 3 })

	why := stalled(t, b)
	require.Len(t, why, 1, "%q", why)
	assert.Regexp(t, `^DLQ: no dead letter has been stored for \d+s while 1 dead letter waits`, why[0])
	code, problems := ready(t, b)
	assert.Equal(t, http.StatusOK, code, "a stall is every replica's, not this one's: %q", problems)
	assert.Equal(t, 3, acme(), "the others are stored, and no more")
	assert.GreaterOrEqual(t, metric(t, b, pending), 1.0)
	assert.Greater(t, metric(t, b, `quarantine_ingest_oldest_unacked_age_seconds{stream="DLQ"}`), 0.0)
	assert.Greater(t, metric(t, b, `quarantine_ingest_no_progress_seconds{stream="DLQ"}`), 2.0)
	assert.Positive(t, metric(t, b, "quarantine_ingest_unstorable_total"), "refused in every form, left for later")

	d := b.Do(t, c, "GET", "/", nil, nil).Doc(t)
	assert.Contains(t, byID(d, "ingest-lag").AttrOr("class", ""), "ingest-lag--stalled")
	assert.Contains(t, text(byID(d, "ingest-stalled")), "no dead letter has been stored")

	// The cause goes away: the message is stored on its next delivery and
	// the console is ready again.
	_, err = b.DB.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters DROP CONSTRAINT test_refuses_tenant`)
	require.NoError(t, err)
	wait.Until(t, "ingest moving again", 30*time.Second, func() bool { return len(b.IngestHealth().Stalled(time.Now())) == 0 })
	var rows int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE tenant = 'stuck'`).Scan(&rows))
	assert.Equal(t, 1, rows)
	wait.Until(t, "nothing pending", 30*time.Second, func() bool { return metric(t, b, pending) == 0 })
	assert.Contains(t, text(byID(b.Do(t, c, "GET", "/", nil, nil).Doc(t), "ingest-lag")), "up to date")
}

// TestIngestPinnedFloorStaysReady: one dead letter PostgreSQL refuses in
// every form stays unacked and holds the consumer's ack floor where it is,
// while others keep arriving and are stored. That is not a stall: ingest
// does not count as stalled (and the console stays ready) for well past
// INGEST_STALL_AFTER. When the others stop and the refused one still
// waits, it is; the console stays ready even then (a stall is not this
// replica's to answer for, see TestIngestStallMakesNotReady).
func TestIngestPinnedFloorStaysReady(t *testing.T) {
	t.Parallel()
	// Readiness holds only while dead letters are stored less than
	// stallAfter apart, counting from the refused one's arrival: on a busy
	// machine trying it, and storing each of the others, takes seconds.
	// A stall must be much longer than that for "holds all along" to be
	// the code's doing and not the machine's.
	const stallAfter = 10 * time.Second
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.StallAfter = stallAfter
		c.IngestTuning = func(ic *dlq.IngestConfig) {
			ic.HealthEvery, ic.RetryUnstorable = 100*time.Millisecond, 300*time.Millisecond
		}
	}})
	ctx := context.Background()
	wait.Until(t, "ready, with ingest checked", 30*time.Second, func() bool {
		code, _ := ready(t, b)
		return code == http.StatusOK && metric(t, b, `quarantine_ingest_pending_messages{stream="DLQ"}`) == 0
	})
	_, err := b.DB.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refuses_tenant CHECK (tenant <> 'stuck')`)
	require.NoError(t, err)
	ack, err := b.JetStream.Publish(ctx, "dlq.stuck.orders.refund", []byte("cannot be stored"))
	require.NoError(t, err)
	wait.Until(t, "the refused one to be tried", 30*time.Second, func() bool {
		return metric(t, b, "quarantine_ingest_unstorable_total") > 0
	})

	// Others arrive one after another, each stored before the next, for
	// three times INGEST_STALL_AFTER: readiness holds all along.
	stored := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE tenant = 'acme'`).Scan(&n))
		return n
	}
	sent := 0
	for start := time.Now(); time.Since(start) < 3*stallAfter; {
		_, err := b.JetStream.Publish(ctx, "dlq.acme.orders.refund", fmt.Appendf(nil, "after %d", sent))
		require.NoError(t, err)
		sent++
		wait.Until(t, fmt.Sprintf("dead letter %d stored", sent), 30*time.Second, func() bool { return stored() == sent })
		why := b.IngestHealth().Stalled(time.Now())
		require.Empty(t, why, "stalled after %s with %d stored behind the refused one", time.Since(start).Round(time.Millisecond), sent)
		code, problems := ready(t, b)
		require.Equal(t, http.StatusOK, code, "not ready after %s with %d stored behind the refused one: %q", time.Since(start).Round(time.Millisecond), sent, problems)
	}
	cons, err := b.JetStream.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	assert.Less(t, cons.CachedInfo().AckFloor.Stream, ack.Sequence, "the ack floor stood behind the refused one all along")
	var refused int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE tenant = 'stuck'`).Scan(&refused))
	require.Zero(t, refused)

	// Nothing else arrives: now the refused one is a stall.
	why := stalled(t, b)
	assert.Regexp(t, `^DLQ: no dead letter has been stored for \d+s`, why[0])
	code, problems := ready(t, b)
	assert.Equal(t, http.StatusOK, code, "%q", problems)
}

// TestStreamLimitsWarn gives the DLQ stream a size limit (DLQ_MAX_BYTES) and
// leaves dead letters unstored (PostgreSQL refuses their tenant) until they
// take more than half of it: the limit is applied to the stream, the risk
// is a metric (which docs/alerts.yml alerts on) and the dashboard warns,
// and shows the stream against its limits to whoever sees every tenant
// (the stream holds them all), not to a reader of one.
func TestStreamLimitsWarn(t *testing.T) {
	t.Parallel()
	// A server taking messages of 2 KiB at most: a 4 KiB size limit is the
	// least it allows (twice that, dlq.CheckStreamMaxBytes).
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{NATS: func(o *server.Options) { o.MaxPayload = 2048 }, Configure: func(c *app.Config) {
		c.StreamMaxBytes = 4096
		c.IngestTuning = func(ic *dlq.IngestConfig) { ic.HealthEvery, ic.RetryUnstorable = 100*time.Millisecond, time.Minute }
	}})
	ctx := context.Background()
	stream, err := b.JetStream.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, int64(4096), stream.CachedInfo().Config.MaxBytes, "the limit is the stream's")
	c, _ := b.SignIn(t, "acme:oncall")
	_, err = b.DB.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refuses_tenant CHECK (tenant <> 'stuck')`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.DB.OwnerPool.Exec(context.Background(), `ALTER TABLE dead_letters DROP CONSTRAINT test_refuses_tenant`)
	})
	for i := range 3 {
		_, err := b.JetStream.Publish(ctx, "dlq.stuck.orders.refund", []byte(strings.Repeat(fmt.Sprint(i), 900)))
		require.NoError(t, err)
	}
	const risk = `quarantine_dlq_stream_limit_risk_ratio{limit="bytes",stream="DLQ"}`
	wait.Until(t, "the unstored dead letters to take half the stream's size limit", 30*time.Second, func() bool {
		return metric(t, b, risk) >= dlq.LimitWarnAt
	})
	assert.Equal(t, 4096.0, metric(t, b, `quarantine_dlq_stream_max_bytes{stream="DLQ"}`))
	d := b.Do(t, c, "GET", "/", nil, nil).Doc(t)
	warning := text(byID(d, "stream-limits"))
	assert.Contains(t, warning, "near its limits")
	assert.Contains(t, warning, "size limit (4096 bytes)")
	assert.Zero(t, byID(d, "storage-stream").Length(), "every tenant's volume is not a reader of one tenant's to see")
	everyTenant, _ := b.SignIn(t, "*:oncall")
	d = b.Do(t, everyTenant, "GET", "/", nil, nil).Doc(t)
	assert.Contains(t, text(byID(d, "storage-stream")), "of 4.0 KB")
}
