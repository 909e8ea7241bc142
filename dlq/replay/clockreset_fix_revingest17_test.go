package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevIngest17FixBeforeAResetClockDeadLetterArrivedDoesNotCover: a
// NATS server whose clock was reset stores a dead letter in 2001; ingest
// keeps it under the UTC day it arrived, at that day's midnight
// (checkStoredAt, flag implausible:dead_lettered_at). A schema_invalid
// dead letter replays only after a fix in place later than the dead
// letter (CheckNeedsFix), and the rule took that midnight for when it
// failed: a fix recorded at any time of the day counted as later than a
// dead letter that arrived hours after it, i.e. one the fix did not
// prevent, and it went to replay as fixed. One that arrived before the fix
// is covered by it.
func TestRevIngest17FixBeforeAResetClockDeadLetterArrivedDoesNotCover(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	st := dlq.NewStore(b.db.Pool)

	now := time.Now().UTC()
	day := dlq.Day(now)
	fixedAt := day.Add(now.Sub(day) / 2)      // the fix was in place from the middle of today until now
	earlyArrival := day.Add(now.Sub(day) / 4) // before the fix
	reset := time.Date(2001, 1, 1, 3, 0, 0, 0, time.UTC)

	letter := func(seq uint64, msgID string) int64 {
		t.Helper()
		rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{
			Subject: "dlq.acme.search.index_update",
			Header: map[string][]string{
				dlq.HeaderOriginalSubject: {"app.acme.search.index_update"},
				dlq.HeaderOriginalMsgID:   {msgID},
				dlq.HeaderErrorClass:      {"schema_invalid"},
				dlq.HeaderError:           {"document schema v2 refused"},
			},
			Data: []byte(`{"doc":"` + msgID + `"}`), Stream: "CLOCKRESET", Seq: seq, Time: reset.Add(time.Duration(seq) * time.Second),
		})
		require.Contains(t, rec.Flags, "implausible:dead_lettered_at", "precondition: the reset clock's time is not taken")
		require.True(t, rec.DeadLetteredAt.Equal(day), "precondition: kept under the midnight of the day it arrived")
		_, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		d, err := st.BySource(ctx, "CLOCKRESET", seq, "")
		require.NoError(t, err)
		return d.ID
	}
	late := letter(1, "reset-late") // arrives now, after the fix
	early := letter(2, "reset-early")
	_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = $2 WHERE id = $1`, early, earlyArrival)
	require.NoError(t, err)
	_, err = dlq.FoldCounters(ctx, b.db.Pool)
	require.NoError(t, err)

	_, err = b.store.RecordFix(ctx, late, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: fixedAt, Ref: "v2.4.1"},
		approver1, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	_, drafts := b.draft(t, oncall, late, early)
	verdicts := b.itemsOf(t, drafts)
	require.Len(t, verdicts, 2)
	assert.Equal(t, replaypolicy.CheckNeedsFix, verdicts[late].Check,
		"a schema_invalid dead letter that arrived after the fix was in place replays as fixed: the rule took the midnight it was kept under for when it failed")
	assert.Contains(t, verdicts[late].SkipReason, "replays only after a fix")
	assert.Equal(t, replay.VerdictGo, verdicts[early].Verdict, "one that arrived before the fix is covered by it")
}
