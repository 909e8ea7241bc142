package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

func ptr[T any](v T) *T { return &v }

// TestFixOncall13SnoozeCountsArrivals: a snooze "until 2 more arrive"
// counts arrivals (dead_letter_groups.arrived), which neither a removal
// (subtract: retention, purge) nor a status change lowers: after 2 of the
// group's 3 dead letters are removed, 2 arrivals still wake it.
func TestFixOncall13SnoozeCountsArrivals(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	boom := letter{err: "boom 13", stack: "main.boom()"}
	ids := l.insert(t, boom, boom, boom)
	fp := Fingerprint(ClassPermanent, "boom 13", "main.boom()")
	g := GroupRef{Tenant: "acme", Fingerprint: fp}
	require.NoError(t, l.store.SnoozeGroup(ctx, g, SnoozeInput{GrowBy: 2}, oncall, quarantine.RequestMeta{}))
	triage := func() GroupTriage {
		t.Helper()
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{fp})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		return tr[0]
	}
	require.True(t, triage().Snoozed)
	assert.Equal(t, int64(3), triage().SnoozeBase)

	l.remove(t, ids[:2]...) // two of them leave the table, as a retention run removes them
	var n, arrived int64
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT sum(n), sum(arrived) FROM dead_letter_groups WHERE tenant = 'acme' AND fingerprint = $1`,
		fp).Scan(&n, &arrived))
	require.Equal(t, []int64{1, 3}, []int64{n, arrived}, "a removal lowers what is stored, not what arrived")

	l.insert(t, boom)
	assert.True(t, triage().Snoozed, "one arrived")
	assert.Equal(t, int64(4), triage().Arrived)
	l.insert(t, boom)
	assert.False(t, triage().Snoozed, "two arrived since the snooze: it ended, whatever was removed meanwhile")
}

// TestFixOncall13NoteAndTicketApart: the note and the ticket link are
// parts of their own: a change of one keeps the other as it is now, and
// its audit entry names only what was written.
func TestFixOncall13NoteAndTicketApart(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	l.insert(t, letter{err: "boom 14", stack: "main.boom()"})
	g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 14", "main.boom()")}
	read := func() (string, string) {
		t.Helper()
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		return tr[0].Note, tr[0].TicketURL
	}
	require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Ticket: ptr("https://t.example/42")}, oncall, quarantine.RequestMeta{}))
	note, ticket := read()
	assert.Equal(t, []string{"", "https://t.example/42"}, []string{note, ticket}, "a ticket alone makes the row with no note")
	require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Note: ptr("do not replay")}, oncall, quarantine.RequestMeta{}))
	note, ticket = read()
	assert.Equal(t, []string{"do not replay", "https://t.example/42"}, []string{note, ticket})
	require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Ticket: ptr("")}, oncall, quarantine.RequestMeta{}))
	note, ticket = read()
	assert.Equal(t, []string{"do not replay", ""}, []string{note, ticket})

	var after string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT after::text FROM audit_log WHERE action = $1 AND object_id = $2 ORDER BY seq DESC LIMIT 1`,
		audit.ActionGroupNote, g.Fingerprint).Scan(&after))
	assert.JSONEq(t, `{"ticket_url": ""}`, after, "the entry names the part written")
}

// TestFixOncall13SnoozeKeepsItsTime: a count added with the snooze's time
// kept (KeepUntil) keeps the time limit of the snooze the group has now;
// for a group not snoozed, it snoozes until the count.
func TestFixOncall13SnoozeKeepsItsTime(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	l.insert(t, letter{err: "boom 15", stack: "main.boom()"})
	g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 15", "main.boom()")}
	read := func() GroupTriage {
		t.Helper()
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		return tr[0]
	}
	keep := GroupChange{Snooze: &SnoozeInput{GrowBy: 50, KeepUntil: true}}
	require.NoError(t, l.store.SnoozeGroup(ctx, g, SnoozeInput{For: 4 * time.Hour}, oncall, quarantine.RequestMeta{}))
	until := read().SnoozedUntil
	require.WithinDuration(t, time.Now().Add(4*time.Hour), until, time.Minute)
	require.NoError(t, l.store.TriageGroup(ctx, g, keep, oncall, quarantine.RequestMeta{}))
	tr := read()
	assert.True(t, tr.SnoozedUntil.Equal(until), "the 4 hours kept: %v", tr.SnoozedUntil)
	assert.Equal(t, int64(50), tr.SnoozeGrowBy)

	require.NoError(t, l.store.WakeGroup(ctx, g, oncall, quarantine.RequestMeta{}))
	require.NoError(t, l.store.TriageGroup(ctx, g, keep, oncall, quarantine.RequestMeta{}))
	tr = read()
	assert.True(t, tr.SnoozedUntil.IsZero(), "not snoozed: no time to keep")
	assert.True(t, tr.Snoozed)

	err := l.store.TriageGroup(ctx, g, GroupChange{Snooze: &SnoozeInput{KeepUntil: true}}, oncall, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "keeping the time takes a count: %v", err)
}
