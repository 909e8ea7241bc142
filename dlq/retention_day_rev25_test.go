package dlq_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention25DayPastEveryPeriodKeepsWhatADraftNames: a day past
// every retention period whose dead letters are all quarantined (a status
// retention removes after 90 days), one of them named by a draft, is the
// one case where only the day's own guard (migration 0048's
// quarantine_dead_letter_partition_busy check, SQLSTATE 55000) stands
// between the draft and a TRUNCATE: every status in it may go (mayGo), so
// purgeDay goes as far as emptying the day. The day must not be emptied;
// the undrafted dead letter goes as a row, the drafted one stays, and the
// draft still names a stored dead letter.
func TestRevRetention25DayPastEveryPeriodKeepsWhatADraftNames(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	old := r.daysAgo(120)
	ids := r.letters(t, 2, "acme", "search.index_update", old, dlq.StatusQuarantined)
	_, drafts := testfactory.Draft(t, r.replays, oncall, ids[0])
	require.Len(t, drafts, 1)

	pass := r.pass(t)
	for _, run := range pass.Runs {
		assert.Empty(t, run.Partition, "the day holds a dead letter a draft names: it is never emptied whole")
	}
	assert.Equal(t, ids[:1], r.remaining(t, ids), "the drafted dead letter stays; the other one went as a row")
	assert.Contains(t, partitionNames(t, r.db), dlq.PartitionName(old))
	r.verify(t)
}
