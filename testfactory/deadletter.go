package testfactory

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// Letter is a dead letter as a producer sends it. Zero fields get defaults:
// tenant acme, item type orders.refund, error class transient (the error
// class that lets the replay class decide), error "refund failed", 3
// attempts, original subject app.<tenant>.<item type>, the payload
// {"order_id":"ord-1","amount_cents":1200}, dead-lettered now (each later
// letter of one call a second earlier) after a first failure ten minutes
// before (Dlq-First-Failed-At: the original was stored before it, so a
// replay is not held back by a duplicate window of a few minutes). No
// message id means the one derived at ingest. Headers are added as they
// are (and win). A letter dead-lettered in the past arrived then: the
// console stored it at At (received_at), as retention judges its age by
// both (see DeadLetters).
type Letter struct {
	Tenant, ItemType                  string
	MsgID, OperationID, CorrelationID string
	Principal                         string
	Error, Class, Stack               string
	Subject                           string // the original subject
	Payload                           []byte
	At                                time.Time
	Headers                           map[string][]string
}

// FirstFailedBefore is how long before it was dead-lettered a letter's
// consumer first failed on it (Dlq-First-Failed-At).
const FirstFailedBefore = 10 * time.Minute

// Stream is the stream the factory's dead letters say they came from: not
// the console's DLQ, so that they never collide with what a test publishes.
const Stream = "FACTORY"

// seq numbers the factory's dead letters across the test binary, so that
// their source keys never collide.
var seq atomic.Uint64

// received is l as the DLQ stream would deliver it.
func (l Letter) received(i int) dlq.Received {
	if l.Tenant == "" {
		l.Tenant = "acme"
	}
	if l.ItemType == "" {
		l.ItemType = "orders.refund"
	}
	if l.Class == "" {
		l.Class = string(dlq.ClassTransient)
	}
	if l.Error == "" {
		l.Error = "refund failed"
	}
	if l.Subject == "" {
		l.Subject = "app." + l.Tenant + "." + l.ItemType
	}
	if l.At.IsZero() {
		l.At = time.Now().Add(-time.Duration(i) * time.Second)
	}
	if l.Payload == nil {
		l.Payload = []byte(`{"order_id":"ord-1","amount_cents":1200}`)
	}
	h := map[string][]string{
		dlq.HeaderOriginalSubject: {l.Subject}, dlq.HeaderError: {dlq.EscapeLines(l.Error)}, dlq.HeaderErrorClass: {l.Class},
		dlq.HeaderAttempts: {"3"}, dlq.HeaderFirstFailedAt: {l.At.Add(-FirstFailedBefore).UTC().Format(time.RFC3339Nano)},
	}
	for name, v := range map[string]string{
		dlq.HeaderOriginalMsgID: l.MsgID, dlq.HeaderOperationID: l.OperationID, dlq.HeaderCorrelationID: l.CorrelationID,
		dlq.HeaderPrincipal: l.Principal, dlq.HeaderStack: dlq.EscapeLines(l.Stack),
	} {
		if v != "" {
			h[name] = []string{v}
		}
	}
	for k, v := range l.Headers {
		h[k] = v
	}
	return dlq.Received{Subject: "dlq." + l.Tenant + "." + l.ItemType, Header: h, Data: l.Payload, Stream: Stream, Seq: seq.Add(1), Time: l.At}
}

// DeadLetters ingests letters the way the ingester does (dlq.ParseDLQ, then
// Store.Insert, a thousand at a time), folds them into the counters, and
// returns their ids, in order. Each dead-lettered in the past is stored as
// if it arrived then (Arrived): a test's dead letter of 40 days ago is
// one the console has held for 40 days.
func DeadLetters(t testing.TB, pool *pgxpool.Pool, letters ...Letter) []int64 {
	t.Helper()
	ctx := context.Background()
	st := dlq.NewStore(pool)
	recs := make([]dlq.Record, len(letters))
	for i, l := range letters {
		recs[i] = dlq.ParseDLQ(dlq.DefaultSubjectPrefix, l.received(i))
	}
	for start := 0; start < len(recs); start += 1000 {
		_, err := st.Insert(ctx, recs[start:min(start+1000, len(recs))])
		require.NoError(t, err)
	}
	_, err := dlq.FoldCounters(ctx, pool) // counted now, not at the console's next fold
	require.NoError(t, err)
	ids := make([]int64, len(recs))
	for i, r := range recs {
		d, err := st.BySource(ctx, r.SourceStream, r.SourceSeq, "")
		require.NoError(t, err)
		ids[i] = d.ID
	}
	Arrived(t, pool, ids...)
	return ids
}

// Arrived sets when the console stored dead letters ids (received_at) to
// when JetStream stored them (dead_lettered_at), where that is earlier:
// as if they arrived as they were dead-lettered. Store.Insert stores a row
// at the database's now(), and retention judges a dead letter's age by the
// later of the two (a dead letter that just arrived is never removed at
// once, whatever time its NATS server gave it).
func Arrived(t testing.TB, pool *pgxpool.Pool, ids ...int64) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `UPDATE dead_letters SET received_at = dead_lettered_at
        WHERE id = ANY($1) AND dead_lettered_at < received_at`, ids)
	require.NoError(t, err)
}

// DeadLetter is DeadLetters for one letter.
func DeadLetter(t testing.TB, pool *pgxpool.Pool, l Letter) int64 {
	t.Helper()
	return DeadLetters(t, pool, l)[0]
}

// SetStatus gives dead letters ids status, behind the back of whatever
// the test is about (as a person on another console would), through the
// statement every status change goes through, so the counters stay exact
// (dlq.StatusMove).
func SetStatus(t testing.TB, pool *pgxpool.Pool, status dlq.Status, ids ...int64) {
	t.Helper()
	_, err := pool.Exec(context.Background(), dlq.StatusMove(`SELECT d.id, d.dead_lettered_at, d.status FROM dead_letters d
        WHERE d.id = ANY($2) FOR UPDATE OF d`, "$1", "id"), string(status), ids)
	require.NoError(t, err)
}

// CountersDrift lists every counter row (depth counters and error groups'
// n and unresolved) that is not what counting the dead letters gives; none
// when the counters are exact.
func CountersDrift(t testing.TB, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
        WITH actual AS (
            SELECT tenant, item_type, error_class, status, count(*) AS n FROM dead_letters GROUP BY 1, 2, 3, 4
        ), groups AS (
            SELECT tenant, fingerprint, item_type, count(*) AS n, count(*) FILTER (WHERE dead_letter_unresolved(status)) AS u
            FROM dead_letters GROUP BY 1, 2, 3
        )
        SELECT format('counts %s/%s/%s/%s: counter %s, rows %s', coalesce(a.tenant, c.tenant), coalesce(a.item_type, c.item_type),
                      coalesce(a.error_class, c.error_class), coalesce(a.status, c.status), coalesce(c.n, 0), coalesce(a.n, 0))
        FROM actual a FULL JOIN dead_letter_counts c USING (tenant, item_type, error_class, status)
        WHERE coalesce(a.n, 0) <> coalesce(c.n, 0)
        UNION ALL
        SELECT format('group %s/%s/%s: counter %s (%s unresolved), rows %s (%s unresolved)', coalesce(a.tenant, g.tenant),
                      coalesce(a.fingerprint, g.fingerprint), coalesce(a.item_type, g.item_type), coalesce(g.n, 0), coalesce(g.unresolved, 0),
                      coalesce(a.n, 0), coalesce(a.u, 0))
        FROM groups a FULL JOIN dead_letter_groups g USING (tenant, fingerprint, item_type)
        WHERE coalesce(a.n, 0) <> coalesce(g.n, 0) OR coalesce(a.u, 0) <> coalesce(g.unresolved, 0)`)
	require.NoError(t, err)
	drift, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return drift
}

// RecordsArrived is Arrived for the dead letters stored from recs (by
// their source keys): for a test that stores records with Store.Insert.
func RecordsArrived(t testing.TB, pool *pgxpool.Pool, recs ...dlq.Record) {
	t.Helper()
	keys := make([][]byte, len(recs))
	for i := range recs {
		keys[i] = recs[i].SourceKey[:]
	}
	_, err := pool.Exec(context.Background(), `UPDATE dead_letters SET received_at = dead_lettered_at
        WHERE source_key = ANY($1) AND dead_lettered_at < received_at`, keys)
	require.NoError(t, err)
}
