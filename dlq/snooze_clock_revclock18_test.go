package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestRevClock18FastConsoleSnoozeHidesAGroupPastItsTime (review
// revclock18): a snooze "for 1 hour" was stored as an end the console
// reckoned on its own clock (web: snoozeForm.Validate(time.Now()),
// SnoozeInput.Until = console now + 1 h) and judged ended on the
// database's (snoozedNow: snoozed_until > now()): a snooze saved on a
// replica whose clock ran three hours ahead kept the group off the groups
// page and the dashboard for four hours, one saved on a replica three
// hours behind hid nothing. A snooze now carries its span (SnoozeInput.For,
// the form no clock), and its end is reckoned from the database's clock
// when it is stored: one hour by the clock that ends it, on any replica.
func TestRevClock18FastConsoleSnoozeHidesAGroupPastItsTime(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	boom := letter{err: "boom 18", stack: "main.boom18()"}
	l.insert(t, boom, boom)
	acme := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 18", "main.boom18()")}

	require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{For: time.Hour}, oncall, quarantine.RequestMeta{}))
	var hiddenFor time.Duration
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT t.snoozed_until - now() FROM group_triage t WHERE t.tenant = $1 AND t.fingerprint = $2`,
		acme.Tenant, acme.Fingerprint).Scan(&hiddenFor))
	assert.InDelta(t, time.Hour.Seconds(), hiddenFor.Seconds(), 60, "a snooze for 1 hour ends an hour from now by the database's clock, which ends it: %s", hiddenFor)
	tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{acme.Fingerprint})
	require.NoError(t, err)
	require.Len(t, tr, 1)
	assert.True(t, tr[0].Snoozed)

	err = l.store.SnoozeGroup(ctx, acme, SnoozeInput{For: -time.Hour}, oncall, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "a time limit behind: %v", err)
}
