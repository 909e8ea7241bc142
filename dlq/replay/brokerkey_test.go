package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestBrokerKeyTextJudgesTheProducersMsgIDOnly: a message id holding
// "Nats-" blocks its replay when the producer gave it, and not when it is
// the console's own (derived from the stream a message without one was
// stored in, a name the operator chose: a stream may be called Nats-Events),
// on the page's verdict and on the verdict of every header alike.
func TestBrokerKeyTextJudgesTheProducersMsgIDOnly(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "search.index_update", MsgID: "Nats-Events:1@2026-12-05T00:00:00Z"},
		testfactory.Letter{ItemType: "search.index_update"})
	tag, err := b.db.Pool.Exec(context.Background(), `UPDATE dead_letters SET msg_id = 'Nats-Events:2@2026-12-05T00:00:00Z' WHERE id = $1 AND msg_id_derived`, ids[1])
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the second dead letter's message id is derived")
	page, every := judged(t, b.replays, b, ids...)
	assert.Equal(t, every, page)
	assert.Equal(t, replaypolicy.CheckBrokerKeyText, page[0].Check, page[0].Reason)
	assert.Contains(t, page[0].Reason, `the message id (header "Nats-Msg-Id") holds the text "Nats-"`)
	assert.Equal(t, replaypolicy.Go, page[1].Outcome, page[1].Reason)
}
