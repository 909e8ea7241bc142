package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// listIDs lists the ids of a page of f.
func listIDs(t *testing.T, b *replayBundle, f replay.ListFilter) ([]int64, bool) {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 50
	}
	page, more, err := b.replays.List(context.Background(), f)
	require.NoError(t, err)
	var ids []int64
	for _, l := range page {
		ids = append(ids, l.ID)
	}
	return ids, more
}

// listWorld is three acme requests (two of a colleague, one of oncall's
// waiting for an approver), a globex one, and a colleague's draft.
type listWorld struct {
	b                                   *replayBundle
	colleague                           quarantine.Actor
	index1, mail, index3, globex, draft int64
}

func newListWorld(t *testing.T) listWorld {
	t.Helper()
	b := setupReplay(t)
	w := listWorld{b: b, colleague: quarantine.Actor{Issuer: "https://idp.example", Subject: "colleague", Email: "Colleague@Example.com"}}
	// The worker re-checks the requester's rights when it runs a request.
	require.NoError(t, authz.NewDirectory(b.db.Pool).Remember(context.Background(), authz.User{Actor: w.colleague, Groups: []string{"quarantine:acme:oncall"}}))
	w.index1 = testfactory.Request(t, b.replays, w.colleague, []int64{b.seedItem(t, "search.index_update", "doc-1", nil, `{}`)}, replay.SubmitInput{}).ID
	w.mail = b.request(t, []int64{b.seedItem(t, "email.send", "mail-1", nats.Header{dlq.HeaderOperationID: {"op-1"}}, `{}`)}, replay.SubmitInput{}).ID
	w.index3 = testfactory.Request(t, b.replays, w.colleague, []int64{b.seedItem(t, "search.index_update", "doc-3", nil, `{}`)}, replay.SubmitInput{}).ID
	g := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "doc-g", Payload: []byte(`{}`)})
	w.globex = testfactory.Request(t, b.replays, quarantine.Actor{Issuer: "https://idp.example", Subject: "g", Email: "g@globex.example"},
		[]int64{g}, replay.SubmitInput{}).ID
	_, drafts := b.draft(t, w.colleague, b.seedItem(t, "search.index_update", "doc-draft", nil, `{}`))
	w.draft = drafts[0].ID
	return w
}

// TestReplayListFiltersOrderAndScope lists the replays page's requests:
// only the viewer's tenants and nobody else's draft; the viewer's own
// requests first (each part newest first) or everyone's newest first,
// paged without a gap or a repeat in both orders; and each filter
// (status, class, requester by the start of the email in any case, with
// LIKE's wildcards taken as text, submitted time).
func TestReplayListFiltersOrderAndScope(t *testing.T) {
	t.Parallel()
	w := newListWorld(t)
	b := w.b
	acme := replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, Limit: 50}

	t.Run("Scope", func(t *testing.T) {
		ids, _ := listIDs(t, b, acme)
		assert.ElementsMatch(t, []int64{w.index1, w.mail, w.index3}, ids, "acme's submitted requests: not globex's, not a colleague's draft")
		all := acme
		all.All = true
		ids, _ = listIDs(t, b, all)
		assert.Contains(t, ids, w.globex, "every tenant for someone who sees every tenant")
		theirs := acme
		theirs.Viewer = w.colleague
		ids, _ = listIDs(t, b, theirs)
		assert.Contains(t, ids, w.draft, "the drafter lists their draft")
	})

	t.Run("MineFirst", func(t *testing.T) {
		f := acme
		f.MineFirst = true
		ids, _ := listIDs(t, b, f)
		assert.Equal(t, []int64{w.mail, w.index3, w.index1}, ids, "oncall's request first, then the others newest first")
		page, _, err := b.replays.List(context.Background(), f)
		require.NoError(t, err)
		assert.True(t, page[0].OwnFirst)
		assert.False(t, page[1].OwnFirst)
	})

	t.Run("Newest", func(t *testing.T) {
		ids, _ := listIDs(t, b, acme)
		assert.Equal(t, []int64{w.index3, w.mail, w.index1}, ids)
	})

	t.Run("Paging", func(t *testing.T) {
		for _, mineFirst := range []bool{true, false} {
			f := acme
			f.MineFirst, f.Limit = mineFirst, 1
			var got []int64
			for range 5 {
				page, more, err := b.replays.List(context.Background(), f)
				require.NoError(t, err)
				require.Len(t, page, 1)
				got = append(got, page[0].ID)
				if !more {
					break
				}
				f.After = page[0].Cursor()
			}
			want := []int64{w.index3, w.mail, w.index1}
			if mineFirst {
				want = []int64{w.mail, w.index3, w.index1}
			}
			assert.Equal(t, want, got, "mine first: %v", mineFirst)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		old := time.Now().Add(-72 * time.Hour)
		_, err := b.db.Pool.Exec(context.Background(), `UPDATE replay_requests SET submitted_at = $2 WHERE id = $1`, w.index1, old)
		require.NoError(t, err)
		for name, tc := range map[string]struct {
			f    func(*replay.ListFilter)
			want []int64
		}{
			"Status":          {func(f *replay.ListFilter) { f.Status = replay.StatusPendingApproval }, []int64{w.mail}},
			"Class":           {func(f *replay.ListFilter) { f.Class = replaypolicy.Class("rebuildable") }, []int64{w.index3, w.index1}},
			"Mine":            {func(f *replay.ListFilter) { f.Mine = true }, []int64{w.mail}},
			"RequesterPrefix": {func(f *replay.ListFilter) { f.Requester = "COLLEAGUE@" }, []int64{w.index3, w.index1}},
			"RequesterWhole":  {func(f *replay.ListFilter) { f.Requester = "oncall@example.com" }, []int64{w.mail}},
			"RequesterLike":   {func(f *replay.ListFilter) { f.Requester = "%" }, nil},
			"RequesterUnder":  {func(f *replay.ListFilter) { f.Requester = "oncall_example" }, nil},
			"From":            {func(f *replay.ListFilter) { f.From = time.Now().Add(-24 * time.Hour) }, []int64{w.index3, w.mail}},
			"To":              {func(f *replay.ListFilter) { f.To = time.Now().Add(-24 * time.Hour) }, []int64{w.index1}},
			"FromTo":          {func(f *replay.ListFilter) { f.From, f.To = old.Add(-time.Hour), old.Add(time.Hour) }, []int64{w.index1}},
			"Tenant":          {func(f *replay.ListFilter) { f.All, f.Tenants, f.Tenant = true, nil, "globex" }, []int64{w.globex}},
		} {
			f := acme
			tc.f(&f)
			ids, _ := listIDs(t, b, f)
			assert.Equal(t, tc.want, ids, name)
		}
	})
}

// TestReplayListCounts counts what a filter selects, in SQL: requests by
// status and their items by outcome (jobs to go, replayed, left out), the
// same filters as the list (tenant scope included), and the bounds that
// keep a page view's cost fixed: at most so many requests, newest first,
// and of those as many as an item budget holds (the newest always).
func TestReplayListCounts(t *testing.T) {
	t.Parallel()
	w := newListWorld(t)
	b := w.b
	ctx := context.Background()
	acme := replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, Limit: 50}

	c, err := b.replays.Counts(ctx, acme)
	require.NoError(t, err)
	assert.Equal(t, 3, c.Matched)
	assert.False(t, c.MatchedMore)
	assert.Equal(t, 3, c.Counted)
	assert.Equal(t, map[replay.Status]int{replay.StatusApproved: 2, replay.StatusPendingApproval: 1}, c.ByStatus)
	assert.Equal(t, 2, c.Items.Pending, "the jobs of the two approved requests")
	assert.Equal(t, 2, c.Items.Total())

	mail, err := b.replays.Request(ctx, w.mail)
	require.NoError(t, err)
	require.NoError(t, b.replays.Reject(ctx, w.mail, approver1, replay.RejectInput{IntentHex: mail.IntentHex(), Version: mail.Version, Reason: "wrong template"}, quarantine.RequestMeta{}))
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, w.index1)
	b.waitFinished(t, w.index3)
	c, err = b.replays.Counts(ctx, acme)
	require.NoError(t, err)
	assert.Equal(t, map[replay.Status]int{replay.StatusDone: 2, replay.StatusRejected: 1}, c.ByStatus)
	assert.Equal(t, 2, c.Items.Replayed)
	assert.Equal(t, 2, c.Items.Total(), "a rejected request's item never ran")

	all := acme
	all.All = true
	c, err = b.replays.Counts(ctx, all)
	require.NoError(t, err)
	assert.Equal(t, 4, c.Matched, "globex's too")
	mine := acme
	mine.Mine = true
	c, err = b.replays.Counts(ctx, mine)
	require.NoError(t, err)
	assert.Equal(t, map[replay.Status]int{replay.StatusRejected: 1}, c.ByStatus, "the list's filters")

	c, err = b.replays.CountsWithin(ctx, acme, 2, 100)
	require.NoError(t, err)
	assert.True(t, c.MatchedMore, "more requests than the bound")
	assert.Equal(t, 2, c.Counted, "the newest two")
	assert.Equal(t, map[replay.Status]int{replay.StatusDone: 1, replay.StatusRejected: 1}, c.ByStatus)
	c, err = b.replays.CountsWithin(ctx, acme, 10, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, c.Matched)
	assert.Equal(t, 1, c.Counted, "one item of budget: the newest request alone")
	assert.Equal(t, map[replay.Status]int{replay.StatusDone: 1}, c.ByStatus)
	assert.Equal(t, 1, c.Items.Replayed)
}

// TestAwaitingCountsWhatWaitsForTheViewer counts, in one capped query,
// the requests that wait for an approver: not their own (nor one of
// someone with their mailbox), not one they approved, only in their
// tenants and classes, at most the number asked for.
func TestAwaitingCountsWhatWaitsForTheViewer(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var refunds []int64
	for _, id := range []string{"led-1", "led-2", "led-3"} {
		refunds = append(refunds, b.request(t, []int64{b.seedItem(t, "ledger.delete", id, nil, `{}`)}, replay.SubmitInput{}).ID)
	}
	awaiting := func(viewer quarantine.Actor, tenants []string, may func(string, replaypolicy.Class) bool, most int) int {
		t.Helper()
		n, err := b.replays.Awaiting(ctx, mayScopes(tenants, may), viewer, most)
		require.NoError(t, err)
		return n
	}
	acme := []string{"acme"}
	assert.Equal(t, 3, awaiting(approver1, acme, allowAll, 100))
	assert.Equal(t, 2, awaiting(approver1, acme, allowAll, 2), "capped")
	assert.Zero(t, awaiting(oncall, acme, allowAll, 100), "never one's own")
	alias := quarantine.Actor{Issuer: "https://other.example", Subject: "x", Email: "OnCall+ops@example.com"}
	assert.Zero(t, awaiting(alias, acme, allowAll, 100), "nor one of someone who may be the requester")
	assert.Zero(t, awaiting(approver1, []string{"globex"}, allowAll, 100), "only in the viewer's tenants")
	assert.Zero(t, awaiting(approver1, acme, func(string, replaypolicy.Class) bool { return false }, 100), "only classes they may approve")

	phrase, err := b.replays.ConfirmationFor(ctx, refunds[0])
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, refunds[0], approver1, replay.ApproveInput{IntentHex: hexIntent(t, b, refunds[0]), Confirmation: phrase}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 2, awaiting(approver1, acme, allowAll, 100), "not one they approved")
	assert.Equal(t, 3, awaiting(approver2, acme, allowAll, 100), "it still waits for a second approver")
	twin := quarantine.Actor{Issuer: "https://other.example", Subject: "a1-again", Email: "A1@example.com"}
	assert.Equal(t, 2, awaiting(twin, acme, allowAll, 100), "their second account does not count it either")
}

// hexIntent is the intent of request id as an approver reviewed it.
func hexIntent(t *testing.T, b *replayBundle, id int64) string {
	t.Helper()
	r, err := b.replays.Request(context.Background(), id)
	require.NoError(t, err)
	return r.IntentHex()
}
