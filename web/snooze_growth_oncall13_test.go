package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOncall13SnoozeUntilMoreArriveCountsRetention: the on-call snoozes
// an error group "until 2 more arrive" (no time limit: the panel's "with
// no time limit (give a count)"). The snooze counts growth as the group's
// STORED size (sum of dead_letter_groups.n, from which deletes subtract)
// against its size when snoozed. Retention then removes the group's old
// discarded dead letters (30 days): the stored size drops by 3. Two new
// dead letters of the group arrive — what the on-call asked to be woken
// for — and the group stays hidden from the groups page and the
// dashboard, its badge now saying "until 3 more arrive" (it would take 5
// arrivals; a partition drop of thousands hides it for thousands).
//
// Expected: "more arrive" counts arrivals since the snooze (e.g. dead
// letters of the group dead-lettered or received after it, or a counter
// that deletes do not lower), so the group wakes after 2 arrivals.
func TestRevOncall13SnoozeUntilMoreArriveCountsRetention(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	old := dlq.Day(time.Now()).AddDate(0, 0, -40).Add(12 * time.Hour)
	letter := func(i int, at time.Time) testfactory.Letter {
		return testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rvo13-grow-%d", i),
			Error: "index shard 8 unavailable", At: at}
	}
	var olds []testfactory.Letter
	for i := range 3 {
		olds = append(olds, letter(i, old.Add(time.Duration(i)*time.Second)))
	}
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, testfactory.DeadLetters(t, b.Pool, olds...)...)
	testfactory.DeadLetter(t, b.Pool, letter(3, time.Time{}))

	fp, ok := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok)
	resp := b.Do(t, oncall, "POST", "/groups/triage", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"none"}, "grows": {"2"},
		"return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Zero(t, b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).Length(), "snoozed")

	// Retention, as the console's keeper runs it, removes the old discarded ones.
	keeper := b.Keeper()
	wait.Until(t, "retention removed the old discarded dead letters", time.Minute, func() bool {
		_, err := keeper.Pass(context.Background())
		require.NoError(t, err)
		var left int
		require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE msg_id LIKE 'rvo13-grow-%'`).Scan(&left))
		return left == 1
	})
	_, err := dlq.FoldCounters(context.Background(), b.Pool)
	require.NoError(t, err)

	// Two more of the group arrive: what the snooze waits for.
	testfactory.DeadLetters(t, b.Pool, letter(4, time.Time{}), letter(5, time.Time{}))
	rows := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	snoozed := b.Do(t, oncall, "GET", "/groups?state=snoozed", nil, nil).Doc(t).Find(`[data-testid="group-snoozed"]`)
	assert.Equal(t, 1, rows.Length(), "2 more arrived after a snooze until 2 more arrive; the group is still snoozed: %q",
		strings.Join(strings.Fields(snoozed.Text()), " "))
}
