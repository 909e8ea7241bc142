package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// rev27bOncall is the on-call engineer of review 27b's tests.
var rev27bOncall = quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}

// TestRevTriage27CloseRefusesAStaleVersion: a discard confirmed on a page
// that showed version 1 of a dead letter is refused once the dead letter
// moved on (here: a replay failed, so it is still open, at version 2), and
// the dead letter keeps its state: the operator decided on what they saw,
// not on what it is now. The close tests' stale version was a dead letter
// closed already, which the status guard refuses by itself.
func TestRevTriage27CloseRefusesAStaleVersion(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	id := l.insert(t, letter{msgID: "rev27b-stale"})[0]
	seen, err := l.store.Get(ctx, id)
	require.NoError(t, err)
	l.setStatus(t, StatusReplayFailed, id) // still open: only the version tells the change
	now, err := l.store.Get(ctx, id)
	require.NoError(t, err)
	require.Greater(t, now.Version, seen.Version)

	_, err = l.store.Close(ctx, CloseInput{IDs: []int64{id}, Version: seen.Version, To: StatusDiscarded, Reason: "poison",
		Tenants: []string{"acme"}}, rev27bOncall, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "a close of the version seen before the change: %v", err)
	after, err := l.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusReplayFailed, after.Status, "the dead letter is not discarded")
	assert.Equal(t, now.Version, after.Version)

	n, err := l.store.Close(ctx, CloseInput{IDs: []int64{id}, Version: now.Version, To: StatusDiscarded, Reason: "poison",
		Tenants: []string{"acme"}}, rev27bOncall, quarantine.RequestMeta{})
	require.NoError(t, err, "the version as it is now closes it")
	assert.Equal(t, 1, n)
}

// TestRevTriage27CloseLeavesOneBeingReplayedAlone: neither a discard nor a
// resolve takes a dead letter a replay request names or a worker is
// replaying: the bulk that names one changes nothing, and it stays where
// the replay has it.
func TestRevTriage27CloseLeavesOneBeingReplayedAlone(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{msgID: "rev27b-open"}, letter{msgID: "rev27b-requested"}, letter{msgID: "rev27b-replaying"})
	l.setStatus(t, StatusReplayRequested, ids[1])
	l.setStatus(t, StatusReplaying, ids[2])
	for _, to := range []Status{StatusDiscarded, StatusResolved} {
		for _, busy := range ids[1:] {
			_, err := l.store.Close(ctx, CloseInput{IDs: []int64{ids[0], busy}, To: to, Reason: "by hand", Tenants: []string{"acme"}},
				rev27bOncall, quarantine.RequestMeta{})
			assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%s with %d in a replay: %v", to, busy, err)
		}
	}
	for i, want := range []Status{StatusQuarantined, StatusReplayRequested, StatusReplaying} {
		dl, err := l.store.Get(ctx, ids[i])
		require.NoError(t, err)
		assert.Equal(t, want, dl.Status, "dead letter %d", ids[i])
	}
}

// TestRevTriage27CloseAuditsTheLeftOutWithTheClosing: a bulk discard that
// left out dead letters the actor may see but not discard (CloseInput.
// Refused) writes, with the discarded ones' rows, a denied row naming
// those left out: every denied attempt is in the audit log.
func TestRevTriage27CloseAuditsTheLeftOutWithTheClosing(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{msgID: "rev27b-mine"}, letter{tenant: "globex", msgID: "rev27b-theirs"})
	refused := RefusedIDs{}
	refused.Add(ids[1], "globex", "may not discard in globex")
	n, err := l.store.Close(ctx, CloseInput{IDs: []int64{ids[0]}, To: StatusDiscarded, Reason: "poison", Tenants: []string{"acme"},
		Refused: refused}, rev27bOncall, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	var ok, denied int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE outcome = 'ok' AND tenant = 'acme'),
            count(*) FILTER (WHERE outcome = 'denied' AND tenant = 'globex')
        FROM audit_log WHERE action = 'deadletter.discard'`).Scan(&ok, &denied))
	assert.Equal(t, 1, ok, "the discard")
	assert.Equal(t, 1, denied, "the dead letter left out, audited as denied with the discard")
}

// TestRevTriage27GroupFixNamesItsGroup: a fix recorded for an error
// group (FixGroup) is stored as that group's, not as a fix of the whole
// item type: the other groups of the item type are not made replayable
// by it.
func TestRevTriage27GroupFixNamesItsGroup(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	id := l.insert(t, letter{itemType: "orders", err: "schema v1", class: ClassSchemaInvalid})[0]
	dl, err := l.store.Get(ctx, id)
	require.NoError(t, err)
	f, err := l.store.RecordFix(ctx, id, FixInput{Scope: FixGroup, FixedAt: time.Now(), Ref: "v2"}, rev27bOncall,
		quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, dl.Fingerprint, f.Fingerprint, "the fix names the group it was recorded for")
	var stored string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT fingerprint FROM fix_markers WHERE id = $1`, f.ID).Scan(&stored))
	assert.Equal(t, dl.Fingerprint, stored)
}

// TestRevTriage27FixesShownAreTheDeadLettersOwn: a dead letter's page
// lists the fixes of its item type and of its own error group, not a
// fix recorded for another group of the item type.
func TestRevTriage27FixesShownAreTheDeadLettersOwn(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{itemType: "orders", err: "schema v1", class: ClassSchemaInvalid},
		letter{itemType: "orders", err: "other failure", class: ClassSchemaInvalid})
	fixed, other := ids[0], ids[1]
	_, err := l.store.RecordFix(ctx, fixed, FixInput{Scope: FixGroup, FixedAt: time.Now(), Ref: "v2"}, rev27bOncall,
		quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)
	fixesOf := func(id int64) []Fix {
		t.Helper()
		var fixes []Fix
		b := &pgx.Batch{}
		QueueFixesFor(b, id, time.Now().Add(-24*time.Hour), time.Now().Add(24*time.Hour), 100, &fixes)
		require.NoError(t, l.db.Pool.SendBatch(ctx, b).Close())
		return fixes
	}
	assert.Len(t, fixesOf(fixed), 1, "the group's dead letter shows its fix")
	assert.Empty(t, fixesOf(other), "another group of the item type is not fixed by it")
}

// TestRevTriage27FixCannotBeDatedAhead: a fix dated past the database's
// clock (and its few minutes of leeway) is refused: dated ahead, it would
// count as later than every dead letter until then, and let them replay.
func TestRevTriage27FixCannotBeDatedAhead(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	id := l.insert(t, letter{itemType: "orders", err: "schema v1", class: ClassSchemaInvalid})[0]
	now := time.Now()
	_, err := l.store.RecordFix(ctx, id, FixInput{Scope: FixItemType, FixedAt: now.Add(time.Hour), Ref: "v3"}, rev27bOncall,
		quarantine.RequestMeta{}, now)
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	var n int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM fix_markers`).Scan(&n))
	assert.Zero(t, n, "no fix recorded")
}

// TestRevTriage27KeptTimeOfAnEndedSnoozeIsNotRevived: a snooze "left as
// it is" with a count, saved once the group's snooze has ended (here by
// its count, its time still ahead), is a snooze by the count alone: the
// ended snooze's time limit does not come back with it.
func TestRevTriage27KeptTimeOfAnEndedSnoozeIsNotRevived(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	boom := letter{err: "rev27b boom", stack: "main.boom()"}
	l.insert(t, boom)
	fp := Fingerprint(ClassPermanent, "rev27b boom", "main.boom()")
	g := GroupRef{Tenant: "acme", Fingerprint: fp}
	require.NoError(t, l.store.SnoozeGroup(ctx, g, SnoozeInput{For: 4 * time.Hour, GrowBy: 1}, rev27bOncall, quarantine.RequestMeta{}))
	l.insert(t, boom) // the count is reached: the snooze ended, its time limit still ahead
	tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{fp})
	require.NoError(t, err)
	require.Len(t, tr, 1)
	require.False(t, tr[0].Snoozed, "ended by its count")
	require.False(t, tr[0].SnoozedUntil.IsZero())

	require.NoError(t, l.store.SnoozeGroup(ctx, g, SnoozeInput{GrowBy: 5, KeepUntil: true}, rev27bOncall, quarantine.RequestMeta{}))
	tr, err = l.store.GroupTriage(ctx, []string{"acme"}, []string{fp})
	require.NoError(t, err)
	require.Len(t, tr, 1)
	assert.True(t, tr[0].Snoozed)
	assert.True(t, tr[0].SnoozedUntil.IsZero(), "no time limit: the one kept was of a snooze that had ended (got %v)", tr[0].SnoozedUntil)
	assert.Equal(t, int64(5), tr[0].SnoozeGrowBy)
}

// TestRevTriage27TextSearchTakesUnderscoreAsItself: a search for "a_c"
// finds the error messages that hold "a_c", not every "a", one character,
// "c" (LIKE's wildcard): a filter narrows to what it says.
func TestRevTriage27TextSearchTakesUnderscoreAsItself(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{err: "field rev27b_key missing"}, letter{err: "field rev27bXkey missing"})
	page, err := l.store.ListDeadLetters(ctx, ListFilter{Tenants: []string{"acme"}, Text: "rev27b_key"})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[0]}, itemIDs(page.Items))
}

// TestRevTriage27GroupCountIsTheTenantsOwn: the list of one error group in
// one tenant counts that tenant's dead letters of the group, not those the
// group has in the other tenants.
func TestRevTriage27GroupCountIsTheTenantsOwn(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	boom := letter{err: "rev27b count", stack: "main.count()"}
	theirs := boom
	theirs.tenant = "globex"
	l.insert(t, boom, boom, theirs, theirs, theirs)
	fp := Fingerprint(ClassPermanent, "rev27b count", "main.count()")
	page, err := l.store.ListDeadLetters(ctx, ListFilter{Tenants: []string{"acme", "globex"}, Tenant: "acme", Fingerprint: fp})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.True(t, page.Counted)
	assert.Equal(t, int64(2), page.Count, "acme's two, as listed")
}

// TestRevTriage27TextSearchKeepsTheStatusFilter: a text search with a
// status lists only dead letters of that status.
func TestRevTriage27TextSearchKeepsTheStatusFilter(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{err: "rev27b timeout upstream"}, letter{err: "rev27b timeout upstream"})
	l.setStatus(t, StatusDiscarded, ids[1])
	for _, tc := range []struct {
		st   Status
		want []int64
	}{{StatusDiscarded, ids[1:]}, {StatusQuarantined, ids[:1]}} {
		page, err := l.store.ListDeadLetters(ctx, ListFilter{Tenants: []string{"acme"}, Text: "timeout", Statuses: []Status{tc.st}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, itemIDs(page.Items), "%s", tc.st)
	}
}

// TestRevTriage27GroupTenantsAreWhereItHasDeadLetters: the tenants a
// group is offered in (its triage panel) are those where it still has
// dead letters: once retention removed all of a tenant's, that tenant is
// not one of them.
func TestRevTriage27GroupTenantsAreWhereItHasDeadLetters(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	boom := letter{err: "rev27b gone", stack: "main.gone()"}
	theirs := boom
	theirs.tenant = "globex"
	ids := l.insert(t, boom, theirs)
	fp := Fingerprint(ClassPermanent, "rev27b gone", "main.gone()")
	both := []string{"acme", "globex"}
	tenants, err := l.store.GroupTenants(ctx, both, fp)
	require.NoError(t, err)
	require.Equal(t, both, tenants)

	l.remove(t, ids[0]) // acme's one leaves the table, as a retention run removes it
	tenants, err = l.store.GroupTenants(ctx, both, fp)
	require.NoError(t, err)
	assert.Equal(t, []string{"globex"}, tenants)
}

// TestRevTriage27GroupNamesOnlyTenantsWithDeadLetters: the groups page
// names, for a group, the tenants where it has dead letters: once
// retention removed all of one tenant's, the group is listed for the
// others only.
func TestRevTriage27GroupNamesOnlyTenantsWithDeadLetters(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	boom := letter{err: "rev27b purged", stack: "main.purged()"}
	theirs := boom
	theirs.tenant = "globex"
	ids := l.insert(t, boom, theirs, theirs)
	fp := Fingerprint(ClassPermanent, "rev27b purged", "main.purged()")
	l.remove(t, ids[0])
	page, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme", "globex"}, Fingerprint: fp})
	require.NoError(t, err)
	require.Len(t, page.Groups, 1)
	assert.Equal(t, []string{"globex"}, page.Groups[0].Tenants)
	assert.Equal(t, int64(2), page.Groups[0].N)
}
