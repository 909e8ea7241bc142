package dlq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevIngest21ConflictingErrorClassesReplayByTheLoosest (review 21b): a
// dead letter that carries Dlq-Error-Class twice, with two classes that
// disagree (a framework's default "transient" added before the service's
// own "stale_version", or the contract's spelling beside a lower-case one a
// gateway added), is read by its first value (or the contract's spelling)
// and flagged duplicate:error_class, a flag no replay rule weighs. The
// dead letter is then judged transient and goes out directly, by one
// person, for a rebuildable item type: the stale_version it also claimed
// (never replay an older version over a newer one) is never weighed.
// Round 19 judged a class the console could not read as unreadable, the
// strictest, because "it may have meant stale_version"; two classes that
// say different things are no more readable than one misspelt.
func TestRevIngest21ConflictingErrorClassesReplayByTheLoosest(t *testing.T) {
	t.Parallel()
	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	for name, h := range map[string]map[string][]string{
		"SentTwice":        {dlq.HeaderErrorClass: {"transient", "stale_version"}},
		"SentInTwoCases":   {dlq.HeaderErrorClass: {"transient"}, "dlq-error-class": {"stale_version"}},
		"TwoOtherSpelling": {"DLQ-ERROR-CLASS": {"transient"}, "dlq-error-class": {"stale_version"}},
	} {
		t.Run(name, func(t *testing.T) {
			h[dlq.HeaderOriginalSubject] = []string{"app.acme.search.index_update"}
			h[dlq.HeaderOriginalMsgID] = []string{"msg-1"}
			rec := dlq.ParseDLQ("dlq", dlq.Received{
				Subject: "dlq.acme.search.index_update",
				Header:  h,
				Data:    []byte(`{"doc":1,"version":3}`),
				Stream:  "DLQ", Seq: 7, Time: time.Now().Add(-time.Hour),
			})
			require.Contains(t, rec.Flags, "duplicate:error_class", "the conflict is seen")
			judged := dlq.UnreadableErrorClass(rec.ErrorClass, rec.Flags) // as web/ and the replay rules judge it
			item := replaypolicy.Item{
				ItemType: rec.ItemType, OriginalSubject: "app.acme.search.index_update", MsgID: "msg-1",
				ErrorClass: string(judged), DeadLetteredAt: rec.DeadLetteredAt, Status: "quarantined",
				PayloadSHA256: "aa", OriginalPayloadSHA256: "aa",
			}
			v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
			// The decided fix: classes that disagree are not readable
			// with certainty, and are judged as a class that could not be
			// read is (unreadable: at least manual, two approvers and a
			// reconciliation note), never by one person directly.
			require.Equal(t, dlq.ClassUnreadable, judged,
				"a dead letter that said both transient and stale_version was judged by error class %q alone: %s (%s); "+
					"the stale_version it also claimed (%s) was never weighed",
				judged, v.Outcome, v.Reason, table.DescribeErrorClass(replaypolicy.ErrStaleVersion))
			assert.Equal(t, dlq.ClassUnclassified, rec.ErrorClass, "stored as a class that could not be read is")
			assert.Equal(t, replaypolicy.Manual, v.Class, "a rebuildable item type, but its error class is not known: %s", v.Reason)
			assert.Contains(t, strings.Join(rec.MalformedReasons, "\n"), "transient and stale_version, which disagree", "the page says why")
		})
	}
	// The same class sent again, in any spelling, is that class.
	rec := dlq.ParseDLQ("dlq", dlq.Received{
		Subject: "dlq.acme.search.index_update",
		Header: map[string][]string{dlq.HeaderErrorClass: {"transient", "TRANSIENT"}, "dlq-error-class": {"Transient"},
			dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {"msg-1"}},
		Data:   []byte(`{"doc":1,"version":3}`),
		Stream: "DLQ", Seq: 8, Time: time.Now().Add(-time.Hour),
	})
	assert.Equal(t, dlq.ClassTransient, dlq.UnreadableErrorClass(rec.ErrorClass, rec.Flags), "%q", rec.MalformedReasons)
}

// TestRevIngest21ReplayClaimOnAnotherSubjectTakesTheConsoleOperationID
// (review 21b): round 20 scoped a message id to its subject in the ledger
// and the publish gate (replaypolicy.Identity), but linkReplays still
// confirms a Dlq-Replay-Of claim by tenant and message id alone. The
// console replays acme's dead letter (Nats-Msg-Id refund-7, operation id
// op-real) to app.acme.search.index_update, where any reader of that
// subject sees its Nats-Msg-Id and Dlq-Replay-Of. A publisher of acme's
// watched stream copies them onto a message of ANOTHER subject,
// app.acme.email.send (an email: same_operation by item type and by
// subject), which the console never replayed; its consumer gives up. The
// advisory's record is linked to the replay (generation 1, a chain that
// never happened) and takes op-real, the operation id the console sent to
// the other subject: the one thing upstreamContext refuses to take from a
// message's own headers, because a same_operation replay without an
// operation id is refused. With it, the email may be replayed (one
// approver) under op-real, and at execution the ledger's "operation
// already replayed" check leaves out the first replay of the dead letter's
// origins (the chain exception), which is the replay of op-real: an
// operation the console replayed once goes out a second time, on another
// subject. A real replay that comes back comes back on the subject the
// console sent it to (replay_items.subject).
func TestRevIngest21ReplayClaimOnAnotherSubjectTakesTheConsoleOperationID(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	origin := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "refund-7",
		OperationID: "op-real", At: r.daysAgo(3)})
	req := testfactory.Request(t, r.replays, replayRequester, []int64{origin}, replay.SubmitInput{})
	published(t, r.db.Pool, req.ID, origin)
	var sentTo string
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&sentTo))
	require.Equal(t, "app.acme.search.index_update", sentTo, "where the console sent its replay")

	ws, err := dlq.ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	now := time.Now().UTC()
	adv := dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: now, Stream: "ORDERS", Consumer: "refunder",
		StreamSeq: 101, Deliveries: 5}
	raw := fmt.Sprintf(`{"type":%q,"stream":"ORDERS","consumer":"refunder","stream_seq":101,"deliveries":5}`, adv.Type)
	orig := &dlq.Original{Subject: "app.acme.email.send", Data: []byte(`{"to":"ceo@acme.example","body":"copied"}`), Time: now.Add(-time.Second),
		Header: map[string][]string{
			dlq.HeaderNatsMsgID: {"refund-7"},
			dlq.HeaderReplayOf:  {fmt.Sprint(origin)},
		}}
	rec := dlq.ParseAdvisory(ws[0], adv, orig, []byte(raw), dlq.Received{Stream: "DLQ_ADVISORIES", Seq: 3, Time: now})
	require.Equal(t, "app.acme.email.send", rec.OriginalSubject)
	_, err = dlq.NewStore(r.db.Pool).Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	d, err := dlq.NewStore(r.db.Pool).BySource(ctx, "ORDERS", 101, "refunder")
	require.NoError(t, err)
	assert.Empty(t, d.OperationID, "a message on app.acme.email.send took the operation id the console sent to %s", sentTo)
	assert.Nil(t, d.ReplayOf, "a message on app.acme.email.send was linked as a replay the console sent to %s", sentTo)
	assert.Zero(t, d.Generation)
	assert.Contains(t, d.Flags, "unlinked:replay_of")

	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	item := replaypolicy.Item{ItemType: d.ItemType, OriginalSubject: d.OriginalSubject, MsgID: d.MsgID, OperationID: d.OperationID,
		ErrorClass: string(dlq.UnreadableErrorClass(d.ErrorClass, d.Flags)), DeadLetteredAt: d.DeadLetteredAt, Status: "quarantined",
		PayloadSHA256: "aa", OriginalPayloadSHA256: "aa", Generation: int(d.Generation)}
	v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
	assert.Equal(t, replaypolicy.Block, v.Outcome, "the email %s (item type %s) that no replay of the console sent is judged %v (%s) with operation id %q",
		d.OriginalSubject, d.ItemType, v.Outcome, v.Reason, d.OperationID)
}
