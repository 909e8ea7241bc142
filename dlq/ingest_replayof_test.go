package dlq_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

var replayRequester = quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}

// published marks the jobs of request id as a worker does just before it
// publishes them (the publish gate: first_published_at and handed_at,
// committed before the publish).
func published(t *testing.T, pool *pgxpool.Pool, id int64, deadLetters ...int64) {
	t.Helper()
	tag, err := pool.Exec(context.Background(), `UPDATE replay_jobs SET first_attempt_at = now(), first_published_at = now(), handed_at = now()
        WHERE request_id = $1 AND dead_letter_id = ANY($2)`, id, deadLetters)
	require.NoError(t, err)
	require.EqualValues(t, len(deadLetters), tag.RowsAffected())
}

// TestReplayOfNeedsAReplayTheConsoleSent stores dead letters that say they
// came back from a replay (Dlq-Replay-Of) and checks which claims are
// linked: only one naming a dead letter of its tenant and message id whose
// replay the console published (or was about to: the publish gate marked
// it), with the generation one past the origin's. A claim naming a dead
// letter of the same tenant and message id that was never replayed, one
// whose request waits for its worker (nothing published yet), or one the
// console replayed for another tenant, is not linked and is flagged
// unlinked:replay_of, saying why.
func TestReplayOfNeedsAReplayTheConsoleSent(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	origin := func(tenant, msgID string) int64 {
		return testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: msgID, At: r.daysAgo(3)})
	}
	replayed, never, waiting := origin("acme", "doc-1"), origin("acme", "doc-1"), origin("acme", "doc-1")
	globex := origin("globex", "doc-1")
	sent := testfactory.Request(t, r.replays, replayRequester, []int64{replayed}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, sent.Status)
	published(t, r.db.Pool, sent.ID, replayed)
	pending := testfactory.Request(t, r.replays, replayRequester, []int64{waiting}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, pending.Status, "its job waits for a worker")
	other := testfactory.Request(t, r.replays, replayRequester, []int64{globex}, replay.SubmitInput{})
	published(t, r.db.Pool, other.ID, globex)

	returning := func(t *testing.T, msgID string, claim int64) dlq.DeadLetter {
		t.Helper()
		id := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID,
			Headers: map[string][]string{dlq.HeaderReplayOf: {fmt.Sprint(claim)}}})
		d, err := dlq.NewStore(r.db.Pool).Get(ctx, id)
		require.NoError(t, err)
		return d
	}
	t.Run("Linked", func(t *testing.T) {
		d := returning(t, "doc-1", replayed)
		require.NotNil(t, d.ReplayOf)
		assert.Equal(t, replayed, *d.ReplayOf)
		assert.Equal(t, int32(1), d.Generation)
		assert.Empty(t, d.Flags)
		next := returning(t, "doc-1", d.ID)
		assert.Nil(t, next.ReplayOf, "a dead letter that came back was not replayed itself (yet)")
	})
	for name, tc := range map[string]struct {
		msgID  string
		claim  int64
		reason string
	}{
		"NeverReplayed": {"doc-1", never, "which is not a dead letter of tenant \"acme\" that the console replayed"},
		"NotPublished":  {"doc-1", waiting, "which is not a dead letter of tenant \"acme\" that the console replayed"},
		"OtherTenant":   {"doc-1", globex, "which is not a dead letter of tenant \"acme\" that the console replayed"},
		"NoSuchLetter":  {"doc-1", 1 << 40, "which is not a dead letter of tenant \"acme\" that the console replayed"},
		"OtherMessage":  {"doc-2", replayed, "whose message id is not this one's"},
	} {
		t.Run(name, func(t *testing.T) {
			d := returning(t, tc.msgID, tc.claim)
			assert.Nil(t, d.ReplayOf)
			assert.Zero(t, d.Generation)
			assert.True(t, d.Malformed)
			assert.Contains(t, d.Flags, "unlinked:replay_of")
			require.NotEmpty(t, d.MalformedReasons)
			assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), fmt.Sprintf("names dead letter %d, %s", tc.claim, tc.reason))
		})
	}
}

// partitionsRead are the partitions of dead_letters an EXPLAIN ANALYZE
// plan read: the scans of them that ran (run-time pruning shows the
// others as never executed).
func partitionsRead(plan string) []string {
	part := regexp.MustCompile(`\bon (dead_letters_p\d{8})`)
	var read []string
	for _, line := range strings.Split(plan, "\n") {
		if m := part.FindStringSubmatch(line); m != nil && !strings.Contains(line, "never executed") && !slices.Contains(read, m[1]) {
			read = append(read, m[1])
		}
	}
	slices.Sort(read)
	return read
}

// explainAnalyze runs sql under EXPLAIN ANALYZE (no costs, no timing) in a
// transaction it rolls back, planned with its values ("values"), as a
// prepared statement ("prepared"), or as a prepared statement's generic
// plan ("generic"), and returns the plan.
func explainAnalyze(t *testing.T, pool *pgxpool.Pool, mode, sql, types string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	const opts = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	q := opts + sql
	if mode != "values" {
		_, err := tx.Exec(ctx, "PREPARE origins ("+types+") AS "+sql)
		require.NoError(t, err)
		if mode == "generic" {
			_, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan")
			require.NoError(t, err)
		}
		ps := make([]string, len(args))
		for i := range args {
			ps[i] = fmt.Sprintf("$%d", i+1)
		}
		q = opts + "EXECUTE origins(" + strings.Join(ps, ", ") + ")"
	}
	// EXPLAIN's parameters have no types: the values go in the statement's text.
	rows, err := tx.Query(ctx, q, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	if mode != "values" {
		_, err := tx.Exec(ctx, "DEALLOCATE origins") // a session's, whatever becomes of the transaction
		require.NoError(t, err)
	}
	return strings.Join(lines, "\n")
}

// TestReplayOriginsReadOnePartitionPerClaim checks the plan of the read
// that links Dlq-Replay-Of claims (linkReplays), on dead letters of twelve
// days and a replay of some of one day's: claims naming dead letters the
// console replayed read the partition of their day and no other; claims
// naming dead letters never replayed, or ids that name nothing (what a
// hostile producer sends), read no partition at all; the replay items are
// found by their dead letter's index. Right after the rows are written (no
// statistics) and after an analyse, with its values, prepared, and as a
// generic plan. The read it replaced (dead_letters WHERE id = ANY) probed
// every partition for every batch with a claim.
func TestReplayOriginsReadOnePartitionPerClaim(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	var days [][]int64
	for d := 1; d <= 12; d++ {
		days = append(days, r.letters(t, 150, "acme", "search.index_update", r.daysAgo(d), dlq.StatusQuarantined))
	}
	day3 := days[2]
	var requested []int64
	for _, ids := range days {
		requested = append(requested, ids[:100]...)
	}
	req := testfactory.Request(t, r.replays, replayRequester, requested, replay.SubmitInput{})
	published(t, r.db.Pool, req.ID, day3[:60]...)

	claims := slices.Clone(day3[:60]) // replayed
	for _, ids := range days {
		claims = append(claims, ids[60:70]...)   // requested, not published yet
		claims = append(claims, ids[120:130]...) // never replayed
	}
	for i := range 50 {
		claims = append(claims, int64(1<<40+i)) // no such dead letter
	}
	tenants := make([]string, len(claims))
	subjects := make([]string, len(claims))
	for i := range tenants {
		tenants[i], subjects[i] = "acme", "app.acme.search.index_update"
	}
	var found []int64
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT array_agg(c.id ORDER BY c.id) FROM (`+dlq.SelectReplayOrigins+`) c`, claims, tenants, subjects).Scan(&found))
	assert.Equal(t, day3[:60], found, "the claims of the replayed ones, and only those")
	want := []string{dlq.PartitionName(r.daysAgo(3))}
	readsOneDay := func(t *testing.T) {
		for _, mode := range []string{"values", "prepared", "generic"} {
			plan := explainAnalyze(t, r.db.Pool, mode, dlq.SelectReplayOrigins, "bigint[], text[], text[]", claims, tenants, subjects)
			assert.Equal(t, want, partitionsRead(plan), "%s:\n%s", mode, plan)
			assert.Contains(t, plan, "replay_items_dead_letter_idx", "%s:\n%s", mode, plan)
			assert.NotContains(t, plan, "Seq Scan on replay_items", "%s:\n%s", mode, plan)
			assert.NotContains(t, plan, "Seq Scan on replay_jobs", "%s:\n%s", mode, plan)
		}
	}
	t.Run("Fresh", readsOneDay)
	_, err := r.db.OwnerPool.Exec(ctx, "ANALYZE dead_letters, replay_items, replay_jobs")
	require.NoError(t, err)
	t.Run("Analyzed", readsOneDay)
}
