package replay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestGiveUpOfAServiceDeadLetterIsNeverReplayed (fix 21b): a service
// that dead-letters a message (dlq.Publish, class permanent) and then
// terminates it on a watched stream leaves two dead letters of one
// failure: its own, and the one captured from MSG_TERMINATED (class
// terminated, which replays by its item class). Whichever is stored first
// (the DLQ stream and the advisory stream are read apart), a draft judges
// the advisory's blocked, naming the service's, and the service's by its
// own class; a replay that failed again is another failure, and its
// give-up is judged as itself.
func TestGiveUpOfAServiceDeadLetterIsNeverReplayed(t *testing.T) {
	t.Parallel()
	for _, advisoryFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "ServiceFirst", true: "AdvisoryFirst"}[advisoryFirst], func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := t.Context()
			now := time.Now().UTC().Add(-time.Minute)
			data := []byte(`{"doc":41,"mapping":"v1"}`)
			own := dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq.acme.search.index_update", Data: data, Stream: "DLQ", Seq: 41, Time: now,
				Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {"doc-41"},
					dlq.HeaderErrorClass: {"permanent"}, dlq.HeaderError: {"index mapping v1 rejected"}, dlq.HeaderConsumer: {"indexer"}}})
			ws, err := dlq.ParseWatchStreams("SEARCH")
			require.NoError(t, err)
			adv := dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: now, Stream: "SEARCH", Consumer: "indexer", StreamSeq: 7, Deliveries: 1}
			raw := fmt.Sprintf(`{"type":%q,"stream":"SEARCH","consumer":"indexer","stream_seq":7,"deliveries":1}`, adv.Type)
			giveUp := dlq.ParseAdvisory(ws[0], adv, &dlq.Original{Subject: "app.acme.search.index_update", Data: data, Time: now.Add(-time.Second),
				Header: map[string][]string{dlq.HeaderNatsMsgID: {"doc-41"}}}, []byte(raw), dlq.Received{Stream: "DLQ_ADVISORIES", Seq: 3, Time: now})
			require.Equal(t, "acme", giveUp.Tenant)
			order := []dlq.Record{own, giveUp}
			if advisoryFirst {
				order = []dlq.Record{giveUp, own}
			}
			for _, r := range order {
				_, err := b.store.Insert(ctx, []dlq.Record{r})
				require.NoError(t, err)
			}
			var ownID, giveUpID int64
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE source_kind = 'dlq' AND msg_id = 'doc-41'`).Scan(&ownID))
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE source_kind = 'advisory' AND msg_id = 'doc-41'`).Scan(&giveUpID))

			_, drafts := b.draft(t, oncall, ownID, giveUpID)
			items := b.itemsOf(t, drafts)
			assert.Equal(t, replaypolicy.CheckServiceTwin, items[giveUpID].Check, "the give-up advisory's dead letter (verdict %q, skip %q)",
				items[giveUpID].Verdict, items[giveUpID].SkipReason)
			assert.Contains(t, items[giveUpID].SkipReason, fmt.Sprintf("dead letter %d", ownID))
			assert.Equal(t, replaypolicy.CheckNeedsFix, items[ownID].Check, "the service's own, judged by its own class (permanent)")
		})
	}
}
