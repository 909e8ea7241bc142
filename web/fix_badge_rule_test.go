package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixBadgeSaysWhatTheRuleJudges: the dead letter page marks each fix
// recorded "after this dead letter" (data-covers) by the rule a replay of
// it is judged by (CheckNeedsFix): a fix counts as in place from the
// earlier of its time and when it was recorded, and a dead letter kept
// under the midnight of the day it arrived (its NATS server's clock reset)
// as stored when the console stored it. The badge compared the fix's own
// time with the row's dead_lettered_at, so it said "after" (a green badge)
// of fixes the rule does not count, and the replay was refused.
func TestFixBadgeSaysWhatTheRuleJudges(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	st := dlq.NewStore(b.Pool)
	now := time.Now()
	covers := func(id int64) (string, string) {
		t.Helper()
		doc := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t)
		fixes := doc.Find(`[data-testid="fix"]`)
		require.Equal(t, 1, fixes.Length())
		_, drafts := testfactory.Draft(t, b.Replays, oncallUser.Actor, id)
		items, err := b.Replays.Items(ctx, drafts[0].ID, 1)
		require.NoError(t, err)
		return fixes.AttrOr("data-covers", ""), items[0].Check
	}
	letter := func(itemType string, at time.Time) int64 {
		return testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: itemType, Class: "schema_invalid", At: at, Payload: []byte(`{}`)})
	}

	t.Run("FixDatedAhead", func(t *testing.T) {
		// Recorded now, dated four minutes ahead: in place from now, before
		// a dead letter stored a minute from now.
		id := letter("search.index_update", now.Add(time.Minute))
		_, err := st.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: now.Add(4 * time.Minute), Ref: "v2"}, oncallUser.Actor, quarantine.RequestMeta{}, now)
		require.NoError(t, err)
		badge, check := covers(id)
		assert.Equal(t, replaypolicy.CheckNeedsFix, check, "the rule: the fix was in place before it")
		assert.Equal(t, "false", badge, "the badge says what the rule judges")
	})

	t.Run("ResetClock", func(t *testing.T) {
		// Stored by a server whose clock was reset: kept under today's
		// midnight, arrived now; the fix was in place since the middle of
		// today, before it arrived.
		id := letter("catalog.sync", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
		// The factory dates received_at back to dead_lettered_at (Arrived);
		// this one arrived now.
		_, err := b.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = now() WHERE id = $1`, id)
		require.NoError(t, err)
		day := dlq.Day(now)
		_, err = st.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: day.Add(now.Sub(day) / 2), Ref: "v3"}, oncallUser.Actor, quarantine.RequestMeta{}, now)
		require.NoError(t, err)
		badge, check := covers(id)
		assert.Equal(t, replaypolicy.CheckNeedsFix, check, "the rule: the fix was in place before it arrived")
		assert.Equal(t, "false", badge, "the badge says what the rule judges")
	})
}
