package dlq_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// rowsWhere counts the dead letters where selects.
func rowsWhere(t *testing.T, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM dead_letters WHERE "+where).Scan(&n))
	return n
}

// countersExact fails the test when the folded counters differ from the
// rows: depth counts and groups (testfactory.CountersDrift), and what
// CountersDrift does not read: each group's first and last time and its
// sample (the highest id, at its time), and the arrivals per minute.
func countersExact(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	_, err := dlq.FoldCounters(ctx, pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, pool))
	var groups, minutes int
	require.NoError(t, pool.QueryRow(ctx, `
        WITH actual AS (
            SELECT tenant, fingerprint, item_type, min(dead_lettered_at) AS first_seen, max(dead_lettered_at) AS last_seen,
                   max(id) AS sample_id, (array_agg(dead_lettered_at ORDER BY id DESC))[1] AS sample_at
            FROM dead_letters GROUP BY 1, 2, 3
        )
        SELECT count(*) FROM actual a FULL JOIN dead_letter_groups g USING (tenant, fingerprint, item_type)
        WHERE (a.first_seen, a.last_seen, a.sample_id, a.sample_at) IS DISTINCT FROM (g.first_seen, g.last_seen, g.sample_id, g.sample_at)`).
		Scan(&groups))
	assert.Zero(t, groups, "every group's first and last time and sample are its rows'")
	require.NoError(t, pool.QueryRow(ctx, `
        WITH actual AS (
            SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS minute, count(*) AS n
            FROM dead_letters GROUP BY 1, 2
        )
        SELECT count(*) FROM actual a FULL JOIN dead_letter_arrivals_minute m USING (tenant, minute)
        WHERE a.n IS DISTINCT FROM m.n`).Scan(&minutes))
	assert.Zero(t, minutes, "the arrivals per minute are the rows'")
}

// TestInsertByCopyKeepsEveryRule: a batch stored by COPY that holds a
// redelivery, a record repeated, a record PostgreSQL refuses and good
// records across tenants and minutes stores each good record once with
// every value as given, the refused one in its raw form, and leaves the
// counters exact; ids come from the identity sequence, in the batch's
// order.
func TestInsertByCopyKeepsEveryRule(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	store := dlq.NewStore(db.Pool)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 59, 59, 999_999_500, time.UTC) // ns the microseconds cut off, a minute about to turn
	rec := func(seq uint64, tenant string) dlq.Record {
		return dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq." + tenant + ".orders.refund", Stream: "DLQ", Seq: seq,
			Header: map[string][]string{dlq.HeaderOriginalSubject: {"app." + tenant + ".orders.refund"}},
			Time:   at.Add(time.Duration(seq) * 300 * time.Microsecond), Data: fmt.Appendf(nil, `{"n":%d}`, seq)})
	}
	res, err := store.Insert(ctx, []dlq.Record{rec(1, "acme"), rec(2, "globex")})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)

	full := dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq.acme.orders.refund", Stream: "DLQ", Seq: 6, Time: at.Add(time.Minute),
		HeaderBlock: []byte("NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nDlq-Original-Msg-Id: m-6\r\n" +
			"Dlq-Operation-Id: op-6\r\nDlq-Error: boom\r\nDlq-Error-Class: permanent\r\nDlq-Attempts: 4\r\n" +
			"Dlq-First-Failed-At: 2026-11-30T10:00:00.123456Z\r\nDlq-Last-Failed-At: 2026-11-30T10:50:00Z\r\n" +
			"Dlq-Principal: alice\r\nDlq-Consumer: refunds\r\nDlq-Correlation-Id: c-6\r\nDlq-Stack: main.go:1\r\n" +
			"Dlq-Attempts: 5\r\nX-Other: kept, as is\r\n\r\n"),
		Data: []byte{0, 1, 2, 0xff}})
	require.True(t, full.Malformed(), "Dlq-Attempts twice is flagged")
	require.NotNil(t, full.Attempts)
	require.NotNil(t, full.FirstFailedAt)
	full.Advisory = []byte(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"ORDERS"}`)
	bad := rec(5, "acme")
	bad.Error = "NUL \x00 refused by PostgreSQL"
	batch := []dlq.Record{rec(2, "globex"), rec(3, "acme"), bad, rec(3, "acme"), rec(1, "acme"), full, rec(4, "globex")}
	res, err = store.Insert(ctx, batch)
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 4, "3, 4, 6 and the raw form of 5; 1 and 2 were stored before, 3 is there once")
	require.Len(t, res.Raw, 1)
	assert.Equal(t, 2, res.Raw[0].Index)
	assert.Empty(t, res.Unstorable)
	assert.Equal(t, 6, rowsWhere(t, db.Pool, "true"), "one row per source position")
	assert.Equal(t, 1, rowsWhere(t, db.Pool, "source_seq = 5 AND 'raw_form' = ANY(flags) AND error LIKE 'stored in raw form%'"))

	// Every value as given.
	d, err := store.BySource(ctx, "DLQ", 6, "")
	require.NoError(t, err)
	assert.Equal(t, "acme", d.Tenant)
	assert.Equal(t, "orders.refund", d.ItemType)
	assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject)
	assert.Equal(t, "m-6", d.MsgID)
	assert.False(t, d.MsgIDDerived)
	assert.Equal(t, "op-6", d.OperationID)
	assert.Equal(t, "c-6", d.CorrelationID)
	assert.Equal(t, "alice", d.Principal)
	assert.Equal(t, "refunds", d.Consumer)
	assert.Equal(t, full.Error, d.Error)
	assert.Equal(t, full.ErrorClass, d.ErrorClass)
	assert.Equal(t, full.Stack, d.Stack)
	assert.Equal(t, *full.Attempts, *d.Attempts)
	assert.True(t, full.FirstFailedAt.Truncate(time.Microsecond).Equal(*d.FirstFailedAt))
	assert.True(t, full.LastFailedAt.Equal(*d.LastFailedAt))
	assert.True(t, full.DeadLetteredAt.Truncate(time.Microsecond).Equal(d.DeadLetteredAt))
	hs, err := d.Headers()
	require.NoError(t, err)
	assert.Equal(t, full.Headers, hs)
	assert.Equal(t, full.HeaderBlock, d.HeaderBlock)
	assert.Equal(t, []byte{0, 1, 2, 0xff}, d.Payload)
	sum := sha256.Sum256(d.Payload)
	assert.Equal(t, sum[:], d.PayloadSHA256)
	assert.Equal(t, int32(4), d.PayloadSize)
	assert.Equal(t, full.Fingerprint, d.Fingerprint)
	assert.True(t, d.Malformed)
	assert.Equal(t, full.MalformedReasons, d.MalformedReasons)
	assert.Equal(t, full.Flags, d.Flags)
	assert.Equal(t, dlq.StatusQuarantined, d.Status)
	assert.Equal(t, "DLQ", d.SourceStream)
	assert.Equal(t, int64(6), *d.SourceSeq)
	assert.JSONEq(t, string(full.Advisory), string(d.Advisory))
	assert.Equal(t, full.Delivery, d.Delivery)
	assert.Nil(t, d.ReplayOf)
	plain, err := store.BySource(ctx, "DLQ", 4, "")
	require.NoError(t, err)
	assert.Empty(t, plain.MalformedReasons)
	assert.NotNil(t, plain.MalformedReasons, "no reasons: an empty array, not NULL")
	assert.Empty(t, plain.Flags)
	assert.Nil(t, plain.Advisory)
	assert.Nil(t, plain.Attempts)

	three, err := store.BySource(ctx, "DLQ", 3, "")
	require.NoError(t, err)
	assert.Less(t, three.ID, d.ID, "ids follow the batch's order")
	assert.Less(t, d.ID, plain.ID, "ids follow the batch's order, not the rows' times")

	var maxID, last int64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT (SELECT max(id) FROM dead_letters), last_value FROM dead_letters_id_seq`).Scan(&maxID, &last))
	assert.LessOrEqual(t, maxID, last, "ids come from the identity sequence")
	countersExact(t, db.Pool)
}

// TestInsertConcurrentRedeliveries: two ingesters store the same dead
// letters at once, in batches that overlap in any way (each redelivers
// what the other stores meanwhile). Each is stored once, reported stored
// by one of them, and counted once.
func TestInsertConcurrentRedeliveries(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	store := dlq.NewStore(db.Pool)
	ctx := context.Background()
	const n = 300
	at := time.Now().UTC()
	recs := make([]dlq.Record, n)
	for i := range recs {
		recs[i] = dlq.ParseDLQ("dlq", dlq.Received{Subject: fmt.Sprintf("dlq.t%d.orders.refund", i%3), Stream: "DLQ", Seq: uint64(i + 1),
			Time: at.Add(time.Duration(i) * time.Second), Data: []byte("p")})
	}
	var mu sync.Mutex
	inserted := 0
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 8 {
				batch := make([]dlq.Record, 0, n/2)
				for _, i := range rng.Perm(n)[:n/2] {
					batch = append(batch, recs[i])
				}
				res, err := store.Insert(ctx, batch)
				assert.NoError(t, err)
				assert.Empty(t, res.Raw, "a redelivery is never refused")
				mu.Lock()
				inserted += len(res.Inserted)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rest, err := store.Insert(ctx, recs)
	require.NoError(t, err)
	assert.Equal(t, n, inserted+len(rest.Inserted), "each stored once, by one of them")
	assert.Equal(t, n, rowsWhere(t, db.Pool, "true"))
	assert.Zero(t, rowsWhere(t, db.Pool, "'raw_form' = ANY(flags)"))
	countersExact(t, db.Pool)
}
