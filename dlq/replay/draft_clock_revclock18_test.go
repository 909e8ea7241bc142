package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevClock18SlowConsoleSubmitsAnExpiredDraft (review revclock18): a
// draft is dated by the database's clock (insertRequest names no
// created_at: replay_requests.created_at DEFAULT now()), yet Submit, the
// submitRequest guard (created_at > $8) and ExpireDrafts judge its age on
// the console's clock alone (Config.Now: "drafts age by the console's
// clock, as they were dated", which they are not). On a replica whose clock
// runs three hours behind the database's, a draft made two hours ago by the
// database's clock (REPLAY_DRAFT_TTL 1 h: it expired an hour ago) is
// submitted, and that replica's sweeper never voids it: skew extends the
// draft's life by the skew.
func TestRevClock18SlowConsoleSubmitsAnExpiredDraft(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	behind := func() time.Time { return time.Now().Add(-3 * time.Hour) }
	svc := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), DraftTTL: time.Hour, Now: behind})
	id := b.seedItem(t, "search.index_update", "revclock18-expired-draft", nil, "{}")
	batch, drafts := testfactory.Draft(t, svc, oncall, id)
	require.Len(t, drafts, 1)
	// Made two hours ago by the database's clock, which dated it.
	_, err := b.db.OwnerPool.Exec(ctx, `UPDATE replay_requests SET created_at = now() - interval '2 hours' WHERE id = $1`, drafts[0].ID)
	require.NoError(t, err)

	n, err := svc.ExpireDrafts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the sweeper of a replica 3 h behind does not void a draft that expired an hour ago by the database's clock")

	_, err = svc.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "too late"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err),
		"a draft made 2 h ago by the database's clock (time to live 1 h) was submitted on a replica whose clock runs 3 h behind: %v", err)
	r := mustRequest(t, b, drafts[0].ID)
	assert.NotEqual(t, replay.StatusPendingApproval, r.Status, "the expired draft waits for approval")
}

// TestRevClock18FastSweeperVoidsFreshDrafts (review revclock18): the
// mirror: the sweeper (ExpireDrafts) of a replica whose clock runs three
// hours ahead of the database's voids every draft the moment it is made
// (a minute old by the database's clock that dated it), and Submit on that
// replica refuses every draft as expired: nobody it serves can submit a
// replay. The draft's age is a span of the database's clock alone, and is
// judged on it.
func TestRevClock18FastSweeperVoidsFreshDrafts(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	right := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), DraftTTL: time.Hour})
	ahead := func() time.Time { return time.Now().Add(3 * time.Hour) }
	fast := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), DraftTTL: time.Hour, Now: ahead})
	id := b.seedItem(t, "search.index_update", "revclock18-fresh-draft", nil, "{}")
	_, drafts := testfactory.Draft(t, right, oncall, id)
	require.Len(t, drafts, 1)

	n, err := fast.ExpireDrafts(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a replica 3 h ahead voided a draft made a moment ago by the database's clock (time to live 1 h)")
	assert.Equal(t, replay.StatusDraft, mustRequest(t, b, drafts[0].ID).Status)
}
