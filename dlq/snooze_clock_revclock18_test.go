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
// revclock18): a snooze "for 1 hour" (web: snoozeForm.Validate(time.Now()),
// group_snooze.go and group_save.go) is stored as an end time reckoned on
// the console's clock (SnoozeInput.Until = console now + 1 h), and the end
// is judged on the database's clock (snoozedNow: snoozed_until > now()).
// A snooze saved on a replica whose clock runs three hours ahead of the
// database's keeps the group off the groups page and the dashboard for
// four hours, past the 7-day choice too; one saved on a replica three
// hours behind hides nothing at all. The end of a snooze is a stamp a
// process writes: it must be reckoned from the database's clock
// (now() + the chosen span), never after it.
func TestRevClock18FastConsoleSnoozeHidesAGroupPastItsTime(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	boom := letter{err: "boom 18", stack: "main.boom18()"}
	l.insert(t, boom, boom)
	acme := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 18", "main.boom18()")}

	// "Snooze for 1 hour" on a replica whose clock runs 3 h ahead: the
	// form reckons its end as the handler does, from that clock.
	fast := time.Now().Add(3 * time.Hour)
	require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{Until: fast.Add(time.Hour)}, oncall, quarantine.RequestMeta{}))
	var hiddenFor time.Duration
	var snoozedAnHourOn bool
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT t.snoozed_until - now(), t.snoozed_until > now() + interval '61 minutes'
        FROM group_triage t WHERE t.tenant = $1 AND t.fingerprint = $2`, acme.Tenant, acme.Fingerprint).Scan(&hiddenFor, &snoozedAnHourOn))
	assert.False(t, snoozedAnHourOn,
		"a group snoozed for 1 hour on a replica 3 h ahead stays hidden from on-call for %s by the database's clock that ends it", hiddenFor.Round(time.Minute))

	// "Snooze for 1 hour" on a replica 3 h behind hides nothing.
	require.NoError(t, l.store.WakeGroup(ctx, acme, oncall, quarantine.RequestMeta{}))
	slow := time.Now().Add(-3 * time.Hour)
	require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{Until: slow.Add(time.Hour)}, oncall, quarantine.RequestMeta{}))
	tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{acme.Fingerprint})
	require.NoError(t, err)
	require.Len(t, tr, 1)
	assert.True(t, tr[0].Snoozed, "a group snoozed for 1 hour on a replica 3 h behind is not snoozed at all")
}
