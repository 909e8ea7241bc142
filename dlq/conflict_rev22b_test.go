package dlq_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestConflictingIdentityHeadersFlagged (review 22b): each header a dead
// letter's identity, target or authority is read from, sent with values
// that disagree once read as the contract reads one (in any spelling of
// its name), is flagged conflicting:<field>, naming the values, and the
// first is stored as before; the same value sent again (in any spelling,
// or a Dlq-Replay-Of naming the same id) is a duplicate only. ConflictsOf
// reads the flags back with the values the stored headers show.
func TestConflictingIdentityHeadersFlagged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		headers  map[string][]string
		conflict string // the flag, "" for none
		said     string // in the flag's sentence
		values   []string
		more     int
	}{
		{name: "MsgIDTwice", headers: map[string][]string{dlq.HeaderOriginalMsgID: {"m-1", "m-2"}},
			conflict: "conflicting:msg_id", said: `Dlq-Original-Msg-Id says "m-1" and "m-2", which disagree`, values: []string{"m-1", "m-2"}},
		{name: "SubjectInTwoCases", headers: map[string][]string{"DLQ-ORIGINAL-SUBJECT": {"app.acme.b"}},
			conflict: "conflicting:original_subject", values: []string{"app.acme.email.send", "app.acme.b"}},
		{name: "PrincipalTwice", headers: map[string][]string{dlq.HeaderPrincipal: {"svc", "user:1"}},
			conflict: "conflicting:principal", values: []string{"svc", "user:1"}},
		{name: "ReplayOfAndUpstream", headers: map[string][]string{dlq.HeaderReplayOf: {"7"}, dlq.UpstreamPrefix + dlq.HeaderReplayOf: {"8"}},
			conflict: "conflicting:replay_of", values: []string{"7", "8"}},
		{name: "ManyOperationIDs", headers: map[string][]string{dlq.HeaderOperationID: {"a", "b", "c", "d", "e", "f"}},
			conflict: "conflicting:operation_id", said: `"a" and "b" and "c" and "d" and 2 more`, values: []string{"a", "b", "c", "d"}, more: 2},
		{name: "SameOperationIDTwice", headers: map[string][]string{dlq.HeaderOperationID: {"op-1"}, "dlq-operation-id": {"op-1"}}},
		{name: "SameReplayOfTwice", headers: map[string][]string{dlq.HeaderReplayOf: {"12", " 12 "}}},
		{name: "CorrelationIDsDisagree", headers: map[string][]string{dlq.HeaderCorrelationID: {"c-1", "c-2"}}}, // ties messages for people only
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.email.send"}, dlq.HeaderErrorClass: {"transient"}}
			for k, v := range c.headers {
				h[k] = v
			}
			rec := dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq.acme.email.send", Header: h, Data: []byte(`{}`), Stream: "DLQ", Seq: 3,
				Time: time.Now().Add(-time.Minute)})
			got := dlq.ConflictsOf(rec.Flags, rec.Headers)
			if c.conflict == "" {
				for _, f := range rec.Flags {
					assert.False(t, strings.HasPrefix(f, dlq.FlagConflictingPrefix), "flagged %s", f)
				}
				assert.Empty(t, got)
				return
			}
			require.Contains(t, rec.Flags, c.conflict)
			assert.Contains(t, strings.Join(rec.MalformedReasons, "\n"), c.said)
			require.Len(t, got, 1)
			assert.Equal(t, c.values, got[0].Values)
			assert.Equal(t, c.more, got[0].More)
		})
	}

	t.Run("AdvisoryReadsNatsMsgIDOnly", func(t *testing.T) {
		t.Parallel()
		ws, err := dlq.ParseWatchStreams("ORDERS")
		require.NoError(t, err)
		now := time.Now().UTC()
		rec := dlq.ParseAdvisory(ws[0], dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Timestamp: now, Stream: "ORDERS", Consumer: "c",
			StreamSeq: 5, Deliveries: 5}, &dlq.Original{Subject: "app.acme.orders.refund", Data: []byte(`{}`), Time: now.Add(-time.Second),
			Header: map[string][]string{dlq.HeaderNatsMsgID: {"r-1", "r-2"}, dlq.HeaderOperationID: {"op-1", "op-2"}}},
			[]byte(`{}`), dlq.Received{Stream: "DLQ_ADVISORIES", Seq: 1, Time: now})
		assert.Equal(t, "r-1", rec.MsgID, "stored under the first, as before")
		assert.Contains(t, rec.Flags, "conflicting:msg_id")
		assert.NotContains(t, rec.Flags, "conflicting:operation_id", "an advisory's dead letter does not read the original's Dlq-Operation-Id")
		got := dlq.ConflictsOf(rec.Flags, rec.Headers)
		require.Len(t, got, 1)
		assert.Equal(t, dlq.HeaderNatsMsgID, got[0].Header)
	})

	t.Run("FlagWithoutValues", func(t *testing.T) {
		t.Parallel()
		got := dlq.ConflictsOf([]string{"conflicting:principal"}, nil)
		assert.Equal(t, []dlq.Conflict{{Header: dlq.HeaderPrincipal}}, got, "blocked all the same, named by its header")
	})
}
