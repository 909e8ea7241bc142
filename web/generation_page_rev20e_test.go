package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall20DeadLetterPageClassIgnoresLedgerGeneration: the sibling
// of TestGenerationLimitCountsReplaysWithoutTheLink that its fix (00856be,
// judgedGenerationOfD) left out. A consumer that drops Dlq-Replay-Of sent
// message "rev20e-loop" back three times; each dead letter was replayed
// (the ledger holds the three replays). The fourth comes back unlinked
// (generation 0). Every rule now judges it at generation 3: manual. Its
// page still classes it by the stored generation (deadLetterShow and
// replayPanel: Generation: d.Generation): "Replay policy: rebuildable"
// with rebuildable's text, and the panel's Replay button offered as to
// one operator alone, while the draft it starts comes out manual and
// blocked. The page and the rules disagree about the class.
func TestRevOncall20DeadLetterPageClassIgnoresLedgerGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, u := b.SignIn(t, "acme:oncall")
	letter := testfactory.Letter{ItemType: "search.index_update", MsgID: "rev20e-loop", Error: "index shard 20e unavailable", Payload: []byte(`{"doc":"loop"}`)}
	for i := 0; i < 3; i++ {
		id := testfactory.DeadLetter(t, b.Pool, letter)
		req := testfactory.Request(t, b.Replays, u.Actor, []int64{id}, replay.SubmitInput{})
		// The broker stored each replay (as the worker records it).
		_, err := b.DB.OwnerPool.Exec(ctx, `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id, subject, stream, seq, duplicate)
            SELECT id, request_id, dead_letter_id, 'acme', 'rebuildable', 'rev20e-loop', 'app.acme.search.index_update', 'APP', $2, false
            FROM replay_jobs WHERE request_id = $1 ON CONFLICT DO NOTHING`, req.ID, 100+i)
		require.NoError(t, err)
	}
	var replays int
	require.NoError(t, b.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE msg_id = 'rev20e-loop'`).Scan(&replays))
	require.Equal(t, 3, replays)

	back := testfactory.DeadLetter(t, b.Pool, letter) // unlinked: generation 0
	_, drafts := testfactory.Draft(t, b.Replays, quarantine.Actor{Subject: "another-oncall"}, back)
	require.Len(t, drafts, 1)
	require.Equal(t, "manual", string(drafts[0].Class), "the rules judge it at generation 3: manual")

	page := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", back), nil, nil)
	require.Equal(t, 200, page.Status)
	class := text(byID(page.Doc(t), "dl-policy-class"))
	assert.Equal(t, "manual", class,
		"the rules class this dead letter manual (its message came back from 3 replays), yet its page says %q", class)
}
