package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestEmptyHeaderNameBlocksReplayInVerdict: NATS sends no header without
// a name (the client refuses the whole message), so a dead letter that
// holds one is not replayable as it is: the page's verdict, the verdict on
// every header and the draft all say so, with a reason that says which
// header (a header of an empty name), instead of "replayable" and a job
// the client then refuses at publish.
func TestEmptyHeaderNameBlocksReplayInVerdict(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "search.index_update", MsgID: "empty-name", Headers: map[string][]string{"": {"v"}, "X-A": {"a"}}},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "empty-name-line-break", Headers: map[string][]string{"": {"a\rb"}}},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "fine", Headers: map[string][]string{"X-A": {"a"}}},
	)
	page, every := judged(t, b.replays, b, ids...)
	assert.Equal(t, every, page)
	for i, v := range page[:2] {
		assert.Equal(t, replaypolicy.Block, v.Outcome, "dead letter %d", ids[i])
		assert.Equal(t, replaypolicy.CheckUnsendable, v.Check, v.Reason)
		assert.Contains(t, v.Reason, "a header with an empty name cannot be sent over NATS")
	}
	assert.Equal(t, replaypolicy.Go, page[2].Outcome, page[2].Reason)

	_, drafts := b.draft(t, oncall, ids...)
	require.Len(t, drafts, 1)
	items, err := b.replays.Items(context.Background(), drafts[0].ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 3)
	reasons := map[int64]string{}
	for _, it := range items {
		reasons[it.DeadLetterID] = it.SkipReason
	}
	assert.Contains(t, reasons[ids[0]], "a header with an empty name cannot be sent over NATS", "left out of the request when drafted")
	assert.Contains(t, reasons[ids[1]], "a header with an empty name cannot be sent over NATS")
	assert.Empty(t, reasons[ids[2]])
}

// TestHeaderNameVerdictAgreesWithPublish: for a header name of every ASCII
// byte (between two letters), an empty name, and names the NATS client
// refuses beyond the protocol's colon ('/', '@', '=', ...), the page's
// verdict (PostgreSQL's header facts), the verdict on every header (Go)
// and the NATS client publishing the replay's message agree: the rules
// refuse exactly the names the client refuses (nats.ErrBadHeaderMsg), so
// nothing judged replayable is refused at publish and nothing the client
// sends is refused by the rules.
func TestHeaderNameVerdictAgreesWithPublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	names := []string{"", "X-Plain", "x@example", "a/b", "k=v", "Ünï", "{json}"}
	for c := range 128 {
		names = append(names, "X"+string(rune(c))+"Y")
	}
	letters := make([]testfactory.Letter, len(names))
	for i, n := range names {
		letters[i] = testfactory.Letter{ItemType: "search.index_update", MsgID: fmt.Sprintf("name-%d", i), Headers: map[string][]string{n: {"v"}}}
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	page, every := judged(t, b.replays, b, ids...)
	refused := 0
	for i, id := range ids {
		assert.Equal(t, every[i], page[i], "header name %q", names[i])
		d, err := b.store.Get(context.Background(), id)
		require.NoError(t, err)
		var hs []dlq.HeaderValue
		require.NoError(t, json.Unmarshal(d.HeadersJSON, &hs))
		m, err := replay.Message(d.OriginalSubject, d.MsgID, d.OperationID, d.CorrelationID, id, 1, hs, []byte("p"), "")
		require.NoError(t, err)
		err = b.nc.PublishMsg(m)
		clientRefuses := errors.Is(err, nats.ErrBadHeaderMsg)
		if !clientRefuses {
			require.NoError(t, err, "header name %q", names[i])
		}
		judgedUnsendable := page[i].Check == replaypolicy.CheckUnsendable
		assert.Equal(t, clientRefuses, judgedUnsendable, "header name %q: the client refuses it: %v; the verdict: %s", names[i], clientRefuses, page[i].Reason)
		if clientRefuses {
			refused++
		}
	}
	assert.Greater(t, refused, 40, "names the client refuses were tried")
	assert.Less(t, refused, len(names)-60, "names the client sends were tried")
}
