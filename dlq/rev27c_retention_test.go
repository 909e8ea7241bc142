package dlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// editedCopies counts the edited payloads the replay items naming ids
// still hold.
func (r *retention) editedCopies(t *testing.T, ids []int64) int {
	t.Helper()
	var n int
	require.NoError(t, r.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM replay_items WHERE dead_letter_id = ANY($1) AND payload IS NOT NULL`, ids).Scan(&n))
	return n
}

// runKinds counts the runs of pass that emptied day whole (emptied) and
// those that removed rows in batches (batches).
func runKinds(pass dlq.KeeperPass, day time.Time) (emptied, batches int) {
	for _, run := range pass.Runs {
		if run.Partition == dlq.PartitionName(day) {
			emptied++
		} else if run.Partition == "" {
			batches++
		}
	}
	return emptied, batches
}

// TestRevRetention27PurgeTakesTheEditedCopiesAlong edits the payloads of
// two dead letters in a draft that is then cancelled, one of a day that
// goes whole and one of a day emptied in batches of rows (an open draft
// names another dead letter of it), and checks that once retention has
// removed the dead letters, no replay item still holds an edited copy of
// their data: the copies go with what they copy, on both paths, while the
// closed request still reads.
func TestRevRetention27PurgeTakesTheEditedCopiesAlong(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	wholeDay, rowsDay := r.daysAgo(120), r.daysAgo(130)
	whole := r.letters(t, 1, "acme", "search.index_update", wholeDay, dlq.StatusQuarantined)
	rows := r.letters(t, 1, "acme", "search.index_update", rowsDay, dlq.StatusQuarantined)
	named := r.letters(t, 1, "acme", "search.index_update", rowsDay, dlq.StatusQuarantined)

	_, drafts := testfactory.Draft(t, r.replays, oncall, whole[0], rows[0])
	require.Len(t, drafts, 1)
	for _, id := range []int64{whole[0], rows[0]} {
		require.NoError(t, r.replays.EditPayload(ctx, drafts[0].ID, id, oncall,
			replay.PayloadEdit{Payload: []byte(`{"doc":"edited"}`), Reason: "fix"}, quarantine.RequestMeta{}))
	}
	require.NoError(t, r.replays.Cancel(ctx, drafts[0].ID, oncall, "not needed", quarantine.RequestMeta{}))
	gone := slices.Concat(whole, rows)
	require.Equal(t, 2, r.editedCopies(t, gone), "the cancelled draft's items hold their edited copies")
	testfactory.Draft(t, r.replays, oncall, named...) // open: the older day goes in rows

	pass := r.pass(t)
	emptied, batches := runKinds(pass, wholeDay)
	require.Equal(t, 1, emptied, "the younger day is emptied whole: %+v", pass.Runs)
	require.Equal(t, 1, batches, "the older day's dead letter goes in a batch of rows: %+v", pass.Runs)
	require.Empty(t, r.remaining(t, gone), "both edited dead letters are past their retention")
	assert.Equal(t, named, r.remaining(t, named), "what the open draft names stays")

	assert.Zero(t, r.editedCopies(t, gone), "no replay item keeps an edited copy of a dead letter retention removed")
	_, err := r.replays.View(ctx, drafts[0].ID, oncall, replay.ViewOptions{Items: 10})
	assert.NoError(t, err, "the closed request still reads")
}

// TestRevRetention27AuditRowsSpanFromTheOldestRemoved empties a past day
// holding dead letters of two statuses dead-lettered hours apart, and
// checks the time range the run's audit row, and the tenant's own row,
// give: from the oldest dead letter removed to the newest, whichever
// group the run counted first.
func TestRevRetention27AuditRowsSpanFromTheOldestRemoved(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	day := r.daysAgo(120)
	early, late := day.Add(-10*time.Hour), day.Add(6*time.Hour)
	r.letters(t, 2, "acme", "orders.refund", early, dlq.StatusQuarantined)
	r.letters(t, 2, "acme", "orders.refund", late, dlq.StatusDiscarded)
	r.letters(t, 2, "acme", "orders.charge", day, dlq.StatusReplayFailed)
	oldest, newest := early, late.Add(time.Second)

	pass := r.pass(t)
	require.Len(t, pass.Runs, 1, "the day goes whole: %+v", pass.Runs)
	run := pass.Runs[0]
	require.Equal(t, dlq.PartitionName(day), run.Partition)
	assert.True(t, run.From.Equal(oldest) && run.To.Equal(newest), "the run's range: %s to %s, want %s to %s", run.From, run.To, oldest, newest)

	var span struct {
		From time.Time `json:"from"`
		To   time.Time `json:"to"`
	}
	entries := r.purgeRows(t)
	require.Len(t, entries, 1)
	require.NoError(t, json.Unmarshal(entries[0].After, &span))
	assert.True(t, span.From.Equal(oldest) && span.To.Equal(newest), "the audit row's range: %s to %s, want %s to %s", span.From, span.To, oldest, newest)
	assert.Contains(t, entries[0].Reason, oldest.UTC().Format(time.RFC3339), "the row's sentence names the oldest")

	tenantRows := r.tenantPurgeRows(t)
	require.Len(t, tenantRows, 1)
	require.NoError(t, json.Unmarshal(tenantRows[0].After, &span))
	assert.Equal(t, "acme", tenantRows[0].Tenant)
	assert.True(t, span.From.Equal(oldest) && span.To.Equal(newest), "acme's row's range: %s to %s, want %s to %s", span.From, span.To, oldest, newest)
}

// tenantPurgeRows are the retention runs' audit entries in tenants
// (ActionPurgeTenant), oldest first.
func (r *retention) tenantPurgeRows(t *testing.T) []audit.Entry {
	t.Helper()
	page, err := audit.List(context.Background(), r.db.Pool, audit.Filter{Action: dlq.ActionPurgeTenant, Limit: audit.MaxLimit,
		Tenants: []string{audit.AllTenants}})
	require.NoError(t, err)
	slices.Reverse(page.Entries)
	return page.Entries
}

// shortTerms keep every dead letter for one period, which may be shorter
// than any policy file allows.
type shortTerms struct{ keep time.Duration }

func (p shortTerms) Keep(string, string, dlq.Status) (time.Duration, bool) { return p.keep, true }
func (p shortTerms) Longest() (time.Duration, bool)                        { return p.keep, true }

// TestRevRetention27KeepsEveryDeadLetterAnHourWhateverTheTerms runs a
// keeper whose terms keep dead letters one minute over a past day holding
// two dead letters of one kind: one the console stored two hours ago, one
// it stored half an hour ago (a stream restored from an old backup). The
// first goes; the second stays, on the whole-day path as on the rows
// path: no dead letter goes before it has been in the console an hour,
// whatever a policy says (ingest trusts that).
func TestRevRetention27KeepsEveryDeadLetterAnHourWhateverTheTerms(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	ids := r.letters(t, 2, "acme", "orders.refund", r.daysAgo(3), dlq.StatusDiscarded)
	older, fresh := ids[0], ids[1]
	for id, ago := range map[int64]time.Duration{older: 2 * time.Hour, fresh: 30 * time.Minute} {
		_, err := r.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = now() - $2::interval WHERE id = $1`, id, ago.String())
		require.NoError(t, err)
	}
	keeper := r.keeperWith(shortTerms{keep: time.Minute}, dlq.KeeperConfig{})

	pass, err := keeper.Pass(ctx)
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	assert.Equal(t, []int64{fresh}, r.remaining(t, ids), "stored an hour ago or more goes; stored half an hour ago stays")
	assert.Equal(t, int64(1), pass.Removed())
}

// TestRevRetention27PassTakesAtMostMaxRuns runs a keeper bounded to two
// runs of two rows a pass over seven dead letters due in rows, and checks
// that a pass removes four, in two runs (and two audit rows), and leaves
// the rest to the next passes.
func TestRevRetention27PassTakesAtMostMaxRuns(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	ids := r.letters(t, 7, "acme", "orders.refund", r.daysAgo(50), dlq.StatusDiscarded)
	r.letters(t, 1, "acme", "orders.refund", r.daysAgo(50), dlq.StatusQuarantined) // kept: the day goes in rows
	table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
	require.NoError(t, err)
	keeper := r.keeperWith(app.RetentionOf(table.Retention()), dlq.KeeperConfig{MaxRuns: 2, BatchRows: 2})

	pass, err := keeper.Pass(ctx)
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	assert.Len(t, pass.Runs, 2, "at most MaxRuns runs a pass")
	assert.Equal(t, int64(4), pass.Removed())
	assert.Len(t, r.remaining(t, ids), 3, "the rest waits for the next pass")
	assert.Len(t, r.purgeRows(t), 2, "one audit row per run")

	pass, err = keeper.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), pass.Removed(), "the next pass goes on")
	assert.Empty(t, r.remaining(t, ids))
}

// TestRevRetention27WholeDayKeepsWhatAReturnedReplayNeeds: a dead letter
// of a day past every retention period was replayed (its request done),
// and the day goes whole. The replayed message then fails again and comes
// back naming it (Dlq-Replay-Of): the console did send that replay, so
// the new dead letter is linked and continues the chain's generation, as
// when its origin goes in a batch of rows (TestRevIngest6...); the loop
// guard (the generation limit) must not restart at 0 because the day went
// whole.
func TestRevRetention27WholeDayKeepsWhatAReturnedReplayNeeds(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	day := r.daysAgo(120)
	origin := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "doc-27", At: day})
	_, err := r.db.Pool.Exec(ctx, `UPDATE dead_letters SET generation = 2 WHERE id = $1`, origin)
	require.NoError(t, err)
	sent := testfactory.Request(t, r.replays, replayRequester, []int64{origin}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, sent.Status)
	published(t, r.db.Pool, sent.ID, origin)
	// The worker replayed it and the request is done.
	for _, sql := range []string{
		`UPDATE replay_jobs SET state = 'replayed' WHERE request_id = $1`,
		`UPDATE replay_items SET held = false WHERE request_id = $1`, // as releaseEnded does
		`UPDATE replay_requests SET status = 'done' WHERE id = $1`,
	} {
		_, err = r.db.Pool.Exec(ctx, sql, sent.ID)
		require.NoError(t, err)
	}
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusReplayed, origin)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)

	pass := r.pass(t)
	require.Len(t, pass.Runs, 1)
	require.Equal(t, dlq.PartitionName(day), pass.Runs[0].Partition, "the day goes whole")
	require.Empty(t, r.remaining(t, []int64{origin}))

	back := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "doc-27",
		Headers: map[string][]string{dlq.HeaderReplayOf: {fmt.Sprint(origin)}}})
	d, err := dlq.NewStore(r.db.Pool).Get(ctx, back)
	require.NoError(t, err)
	assert.NotContains(t, d.Flags, "unlinked:replay_of", "%v", d.MalformedReasons)
	require.NotNil(t, d.ReplayOf, "linked to the replay the console sent")
	assert.Equal(t, origin, *d.ReplayOf)
	assert.Equal(t, int32(3), d.Generation, "the chain goes on past the whole day's purge")
}

// TestRevRetention27EveryRunRowNamesWhatWentOfWhom: a day past every
// retention period holds one dead letter of each of 250 tenants with long
// names (128 bytes). The runs that remove them write rows whose breakdown
// names every tenant and status they removed, each row whole (none cut
// for its size, as the audit log cuts a detail over 32 KiB), and together
// they account for all 250: the day goes in runs of at most 100 tenant
// and status pairs, not whole in one run whose row would be cut.
func TestRevRetention27EveryRunRowNamesWhatWentOfWhom(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	day := r.daysAgo(120)
	const tenants = 250
	ls := make([]testfactory.Letter, tenants)
	for i := range ls {
		name := fmt.Sprintf("t%03d-%s", i, strings.Repeat("x", 123))
		ls[i] = testfactory.Letter{Tenant: name, ItemType: "orders.refund", At: day.Add(time.Duration(i) * time.Second),
			OperationID: fmt.Sprintf("op-wide-%d", i)}
	}
	ids := testfactory.DeadLetters(t, r.db.Pool, ls...)

	r.pass(t)
	require.Empty(t, r.remaining(t, ids), "all of them are past their retention")
	named := map[string]int64{}
	for _, e := range r.purgeRows(t) {
		var after struct {
			Cut bool `json:"cut"`
			By  []struct {
				Tenant string `json:"tenant"`
				N      int64  `json:"n"`
			} `json:"by"`
		}
		require.NoError(t, json.Unmarshal(e.After, &after))
		require.False(t, after.Cut, "run row %d is whole (%d bytes)", e.Seq, len(e.After))
		assert.LessOrEqual(t, len(after.By), 100, "a run names at most 100 tenant and status pairs")
		for _, b := range after.By {
			named[b.Tenant] += b.N
		}
	}
	assert.Len(t, named, tenants, "the runs' rows name every tenant whose dead letters went")
	for _, l := range ls {
		assert.Equal(t, int64(1), named[l.Tenant], l.Tenant)
	}
}
