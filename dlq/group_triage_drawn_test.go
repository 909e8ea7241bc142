package dlq

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestTriageGroupWritesOnlyOverWhatWasSeen: a part of a change whose *Was
// is not what the group holds (someone changed it meanwhile) is a
// TriageConflict naming it, with the group as it is and who changed it
// last; nothing of the change is written (the owner sent with it neither)
// and nothing is audited. A part not changed never conflicts; a *Was that
// differs only by line breaks (a browser sends CR LF) is what was seen;
// no *Was writes whatever the row holds.
func TestTriageGroupWritesOnlyOverWhatWasSeen(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	colleague := quarantine.Actor{Issuer: "https://idp.example", Subject: "colleague", Email: "colleague@example.com", EmailVerified: true}
	l.insert(t, letter{err: "boom 22", stack: "main.boom()"})
	g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 22", "main.boom()")}
	audited := func() int {
		var n int
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE object_id = $1`, g.Fingerprint).Scan(&n))
		return n
	}
	now := func() GroupTriage {
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		return tr[0]
	}
	require.NoError(t, l.store.NoteGroup(ctx, g, "shard 3\nflaps", "", oncall, quarantine.RequestMeta{}))
	require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Note: ptr("do not replay: INC-42"), NoteWas: ptr("shard 3\r\nflaps")},
		colleague, quarantine.RequestMeta{}), "line breaks as a browser sends them are what was seen")

	t.Run("Conflict", func(t *testing.T) {
		before := audited()
		err := l.store.TriageGroup(ctx, g, GroupChange{Owner: ptr("search-team"), OwnerWas: ptr(""),
			Note: ptr("shard 3 flaps; replaying"), NoteWas: ptr("shard 3\nflaps")}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		var moved *TriageConflict
		require.True(t, errors.As(err, &moved), "%v", err)
		assert.Equal(t, []string{"note"}, moved.Parts)
		assert.Equal(t, "do not replay: INC-42", moved.Now.Note)
		assert.Equal(t, colleague.Attribution(), moved.Now.UpdatedBy)
		assert.False(t, moved.Now.UpdatedAt.IsZero())
		tr := now()
		assert.Equal(t, "do not replay: INC-42", tr.Note)
		assert.Empty(t, tr.Owner, "nothing of the change is written")
		assert.Equal(t, before, audited(), "nothing audited")
	})
	t.Run("Success", func(t *testing.T) {
		require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Owner: ptr("search-team"), OwnerWas: ptr("")}, oncall, quarantine.RequestMeta{}),
			"the note, not changed, does not conflict")
		require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Ticket: ptr("https://t.example/42")}, oncall, quarantine.RequestMeta{}),
			"no *Was: written whatever the row holds")
		tr := now()
		assert.Equal(t, []string{"search-team", "do not replay: INC-42", "https://t.example/42"}, []string{tr.Owner, tr.Note, tr.TicketURL})
	})
}
