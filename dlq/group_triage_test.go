package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestGroupTriage snoozes, wakes, assigns and notes an error group that
// lives in two tenants: a snooze hides the group's counters only in the
// tenant it was made in, until the group grows there by the given number
// (or its time comes); each change is one audit row in that tenant.
func TestGroupTriage(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	both := []string{"acme", "globex"}
	boom := letter{err: "boom 7", stack: "main.boom()"}
	l.insert(t, boom, boom, boom, letter{tenant: "globex", err: "boom 7", stack: "main.boom()"}, letter{err: "other"})
	fp := Fingerprint(ClassPermanent, "boom 7", "main.boom()")
	acme := GroupRef{Tenant: "acme", Fingerprint: fp}
	listed := func(f GroupFilter) map[string]Group {
		t.Helper()
		f.Tenants = both
		page, err := l.store.Groups(ctx, f)
		require.NoError(t, err)
		out := map[string]Group{}
		for _, g := range page.Groups {
			out[g.Fingerprint] = g
		}
		return out
	}
	audited := func(action string) int {
		var n int
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND tenant = 'acme' AND object_id = $2`,
			action, fp).Scan(&n))
		return n
	}

	t.Run("SnoozeUntilItGrows", func(t *testing.T) {
		require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{GrowBy: 2}, oncall, quarantine.RequestMeta{}))
		assert.Equal(t, 1, audited(audit.ActionGroupSnooze))
		g := listed(GroupFilter{Unresolved: true})[fp]
		assert.Equal(t, []string{"globex"}, g.Tenants, "snoozed in acme only")
		assert.Equal(t, int64(1), g.N)
		assert.Equal(t, int64(3), listed(GroupFilter{Snoozed: SnoozedOnly})[fp].N, "acme's counters, snoozed")
		assert.Equal(t, int64(4), listed(GroupFilter{Snoozed: SnoozedToo})[fp].N)
		tr, err := l.store.GroupTriage(ctx, both, []string{fp})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		assert.True(t, tr[0].Snoozed)
		assert.Equal(t, int64(3), tr[0].SnoozeBase)

		l.insert(t, boom, letter{tenant: "globex", err: "boom 7", stack: "main.boom()"})
		assert.Equal(t, []string{"globex"}, listed(GroupFilter{})[fp].Tenants, "grew by one in acme: still snoozed")
		l.insert(t, boom)
		g = listed(GroupFilter{})[fp]
		assert.Equal(t, both, g.Tenants, "grew by two in acme: awake")
		assert.Equal(t, int64(7), g.N)
		tr, err = l.store.GroupTriage(ctx, both, []string{fp})
		require.NoError(t, err)
		assert.False(t, tr[0].Snoozed)
	})
	t.Run("SnoozeUntilATimeAndWake", func(t *testing.T) {
		require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{For: time.Hour}, oncall, quarantine.RequestMeta{}))
		assert.Equal(t, []string{"globex"}, listed(GroupFilter{})[fp].Tenants)
		require.NoError(t, l.store.WakeGroup(ctx, acme, oncall, quarantine.RequestMeta{}))
		assert.Equal(t, both, listed(GroupFilter{})[fp].Tenants)
		err := l.store.WakeGroup(ctx, acme, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "not snoozed: %v", err)
		assert.Equal(t, 1, audited(audit.ActionGroupWake))
		require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{For: time.Hour}, oncall, quarantine.RequestMeta{}))
		_, err = l.db.OwnerPool.Exec(ctx, `UPDATE group_triage SET snoozed_until = now() - interval '1 minute' WHERE tenant = 'acme' AND fingerprint = $1`, fp)
		require.NoError(t, err)
		assert.Equal(t, both, listed(GroupFilter{})[fp].Tenants, "a snooze whose time has passed hides nothing")
	})
	t.Run("AssignAndNote", func(t *testing.T) {
		require.NoError(t, l.store.AssignGroup(ctx, acme, "payments-team", oncall, quarantine.RequestMeta{}))
		require.NoError(t, l.store.NoteGroup(ctx, acme, "gateway returns 503 under load", "https://tickets.example/PAY-12", oncall, quarantine.RequestMeta{}))
		tr, err := l.store.GroupTriage(ctx, []string{"globex"}, []string{fp})
		require.NoError(t, err)
		assert.Empty(t, tr, "globex sees nothing of acme's triage")
		tr, err = l.store.GroupTriage(ctx, both, []string{fp})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		assert.Equal(t, "payments-team", tr[0].Owner)
		assert.Equal(t, "https://tickets.example/PAY-12", tr[0].TicketURL)
		assert.Equal(t, oncall.Email, tr[0].UpdatedBy)
		assert.Equal(t, 1, audited(audit.ActionGroupAssign))
		assert.Equal(t, 1, audited(audit.ActionGroupNote))
	})
	t.Run("NotFound", func(t *testing.T) {
		err := l.store.AssignGroup(ctx, GroupRef{Tenant: "initech", Fingerprint: fp}, "x", oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "no such group in that tenant: %v", err)
		err = l.store.SnoozeGroup(ctx, acme, SnoozeInput{}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "a snooze without an end: %v", err)
	})
}

// TestGroupsPaging walks the groups page by page: every group once, in
// order, with the total on each page.
func TestGroupsPaging(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	var xs []letter
	for i := range 23 {
		for range i%3 + 1 {
			xs = append(xs, letter{err: "failure in " + strings.Repeat("x", i+1)}) // numbers would normalise away
		}
	}
	l.insert(t, xs...)
	seen := map[string]bool{}
	var last int64 = 1 << 62
	for offset := 0; ; offset += 10 {
		page, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Sort: GroupsByCount, Limit: 10, Offset: offset})
		require.NoError(t, err)
		if len(page.Groups) == 0 {
			break
		}
		assert.Equal(t, 23, page.Total)
		for _, g := range page.Groups {
			assert.False(t, seen[g.Fingerprint], "once")
			seen[g.Fingerprint] = true
			assert.LessOrEqual(t, g.N, last, "by count across pages")
			last = g.N
		}
	}
	assert.Len(t, seen, 23)
	_, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Offset: -1})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))
}
