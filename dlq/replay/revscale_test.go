package replay_test

// Review (rev-scale): what one action costs the others when data is large.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// auditAppendLockKey is audit.appendLockKey ("QAUDIT" then 0001).
const auditAppendLockKey int64 = 0x5141554449540001

// TestIngestNeverWaitsForASubmitsTransaction: invariant 10 says no single
// dead letter (and so no console action) can stall ingest for others. A
// submit moves its items' status with dlq.StatusMove, which UPDATEs the
// tenant's counter row (tenant, item type, class, 'quarantined'); the row
// stays locked until the submit commits, after its jobs, audit rows and
// every other statement. The ingester's statement makes sure each
// combination of its batch has a counter row with INSERT ... ON CONFLICT
// DO NOTHING, and a unique check that meets a row updated by a transaction
// still open waits for that transaction. So while any submit (or cancel,
// or retention subtract) of that combination is open, a new dead letter of
// the same tenant, item type and class cannot be stored — nor anything else
// in the same ingest batch, which is one statement over every tenant.
//
// The submit is kept open here by the audit chain's lock, held by another
// audited action (a global lock every audited transaction takes); a big
// submit holds it open by itself for as long as it takes (see the report:
// 20,000 items).
func TestIngestNeverWaitsForASubmitsTransaction(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	letters := make([]testfactory.Letter, 20)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("idx-stall-%d", i)}
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	batch, _ := testfactory.Draft(t, b.replays, oncall, ids...)

	// Another audited action, still in its transaction.
	holder, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, auditAppendLockKey)
	require.NoError(t, err)

	submitted := make(chan error, 1)
	go func() {
		_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex after the fix"}, quarantine.RequestMeta{})
		submitted <- err
	}()
	var submitPID int32
	wait.For(t, "the submit to wait for the audit lock", 30*time.Second, func() error {
		err := b.db.Pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'
            AND datname = current_database() LIMIT 1`).Scan(&submitPID)
		if err != nil {
			return wait.ErrNotYet
		}
		return nil
	})

	// A new dead letter of the same tenant, item type and class arrives.
	rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{
		Subject: "dlq.acme.search.index_update",
		Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {"idx-new-1"},
			dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"index down"}},
		Data: []byte(`{}`), Stream: "REVSCALE", Seq: 1, Time: time.Now(),
	})
	stored := make(chan error, 1)
	go func() {
		_, err := b.store.Insert(ctx, []dlq.Record{rec})
		stored <- err
	}()
	var blocked bool
	err = wait.Poll(30*time.Second, wait.Interval, func() error {
		select {
		case err := <-stored:
			require.NoError(t, err)
			return nil
		default:
		}
		var n int
		if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE $1 = ANY(pg_blocking_pids(pid)) AND query ILIKE '%dead_letter_counts%' AND datname = current_database()`, submitPID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			blocked = true
			return nil
		}
		return wait.ErrNotYet
	})
	require.NoError(t, err)
	assert.False(t, blocked, "the ingester's insert of a new dead letter waits for the submit's transaction (pid %d) to commit: "+
		"its INSERT ... ON CONFLICT DO NOTHING into dead_letter_counts meets the counter row the submit's StatusMove updated", submitPID)

	require.NoError(t, holder.Rollback(ctx))
	require.NoError(t, <-submitted)
	if blocked {
		require.NoError(t, <-stored)
	}
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE msg_id = 'idx-new-1'`).Scan(&n))
	assert.Equal(t, 1, n)
}

// TestRevScaleMeasure (REVSCALE_N=20000 to run) times a submit of N
// rebuildable items (approved at once: jobs written in the same
// transaction) and measures what a request page's View of them allocates,
// with each dead letter carrying REVSCALE_HDR bytes of other headers
// (default 2 KiB), which the page never shows.
func TestRevScaleMeasure(t *testing.T) {
	n := envN("REVSCALE_N", 0)
	if n == 0 {
		t.Skip("REVSCALE_N not set")
	}
	hdr := envN("REVSCALE_HDR", 2048)
	b := setupReplay(t)
	ctx := context.Background()
	pad := strings.Repeat("h", hdr)
	subject := func(int) string { return "app.acme.search.index_update" }
	if os.Getenv("REVSCALE_DISTINCT") != "" {
		subject = func(i int) string { return fmt.Sprintf("app.acme.search.idx%d", i) }
	}
	start := time.Now()
	st := dlq.NewStore(b.db.Pool)
	for lo := 0; lo < n; lo += 1000 {
		var recs []dlq.Record
		for i := lo; i < min(lo+1000, n); i++ {
			at := time.Now().Add(-time.Duration(i) * time.Millisecond)
			recs = append(recs, dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{Subject: "dlq.acme.search.index_update",
				Header: map[string][]string{dlq.HeaderOriginalSubject: {subject(i)}, dlq.HeaderOriginalMsgID: {fmt.Sprintf("idx-m-%d", i)},
					dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"index down"},
					dlq.HeaderFirstFailedAt: {at.Add(-10 * time.Minute).UTC().Format(time.RFC3339Nano)}, "X-Trace-Baggage": {pad}},
				Data: []byte(`{"doc":1}`), Stream: "REVSCALEM", Seq: uint64(i + 1), Time: at}))
		}
		_, err := st.Insert(ctx, recs)
		require.NoError(t, err)
	}
	_, err := dlq.FoldCounters(ctx, b.db.Pool)
	require.NoError(t, err)
	rows, err := b.db.Pool.Query(ctx, `SELECT id FROM dead_letters WHERE source_stream = 'REVSCALEM' ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, ids, n)
	t.Logf("ingest %d: %s", n, time.Since(start))
	start = time.Now()
	batch, _ := testfactory.Draft(t, b.replays, oncall, ids...)
	t.Logf("draft %d: %s", n, time.Since(start))
	start = time.Now()
	_, err = b.replays.Selection(ctx, batch, oncall, 20, quarantine.RequestMeta{})
	require.NoError(t, err)
	t.Logf("selection (confirm page) %d: %s", n, time.Since(start))
	start = time.Now()
	stop := probeIngest(t, st, "submit")
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	t.Logf("submit %d (status %s): %s", n, reqs[0].Status, time.Since(start))
	stop()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start = time.Now()
	v, err := b.replays.View(ctx, reqs[0].ID, approver1, replay.ViewOptions{Items: replaypolicy.MaxApprovableItems, Payloads: 20, Edits: 20, Shown: 20, ShownBytes: 16 << 10})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	hb := 0
	for _, it := range v.Items {
		for _, h := range it.Headers {
			hb += len(h.Name) + len(h.Value)
		}
	}
	t.Logf("view %d items: %s, allocated %d MB, heap in use after %d MB; headers held %d MB (never shown)",
		len(v.Items), time.Since(start), (after.TotalAlloc-before.TotalAlloc)>>20, after.HeapInuse>>20, hb>>20)
	runtime.KeepAlive(v)

	stop = probeIngest(t, st, "cancel")
	start = time.Now()
	require.NoError(t, b.replays.Cancel(ctx, reqs[0].ID, oncall, "changed my mind", quarantine.RequestMeta{}))
	t.Logf("cancel %d: %s", n, time.Since(start))
	stop()
}

// probeIngest stores one new dead letter of acme/search.index_update at a
// time until the returned func is called, which logs the slowest store.
func probeIngest(t *testing.T, st *dlq.Store, during string) func() {
	done, finished := make(chan struct{}), make(chan struct{})
	var worst time.Duration
	var count int
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{Subject: "dlq.acme.search.index_update",
				Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {fmt.Sprintf("probe-%s-%d", during, i)},
					dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"index down"}},
				Data: []byte(`{}`), Stream: "PROBE" + during, Seq: uint64(i + 1), Time: time.Now()})
			start := time.Now()
			if _, err := st.Insert(context.Background(), []dlq.Record{rec}); err != nil {
				t.Errorf("probe insert: %v", err)
				return
			}
			worst = max(worst, time.Since(start))
			count++
		}
	}()
	return func() {
		close(done)
		<-finished
		t.Logf("ingest during %s: %d single-message stores, slowest %s", during, count, worst)
	}
}

func envN(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err == nil {
			return n
		}
	}
	return def
}
