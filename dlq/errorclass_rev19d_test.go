package dlq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevIngest19UnreadableErrorClassReplaysAsIfAbsent: a producer that
// says why it gave up in a spelling the contract does not list
// (STALE_VERSION, a Java enum's name; stale-version) is flagged
// invalid:error_class and stored as unclassified, and the replay rules
// then judge it as a dead letter that said nothing: by its class, the
// loosest error-class rule. The seeds' rule for stale_version (never
// replay an older version over a newer one) and the policy file's
// tightenings of it are passed by the very dead letters that tried to
// claim them. An error class the console cannot read should be judged at
// least as strictly as the strictest it could have been (as an item type
// no rule knows is manual), not as the loosest.
func TestRevIngest19UnreadableErrorClassReplaysAsIfAbsent(t *testing.T) {
	t.Parallel()
	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	for _, sent := range []string{"STALE_VERSION", "stale-version", "Stale_Version"} {
		t.Run(sent, func(t *testing.T) {
			rec := dlq.ParseDLQ("dlq", dlq.Received{
				Subject: "dlq.acme.search.index_update",
				Header: map[string][]string{
					dlq.HeaderOriginalSubject: {"app.acme.search.index_update"},
					dlq.HeaderOriginalMsgID:   {"msg-1"},
					dlq.HeaderErrorClass:      {sent},
				},
				Data:   []byte(`{"doc":1,"version":3}`),
				Stream: "DLQ", Seq: 7, Time: time.Now().Add(-time.Hour),
			})
			require.Contains(t, rec.Flags, "spelling:error_class", "the value is read in its spelling, and flagged")

			item := replaypolicy.Item{
				ItemType: rec.ItemType, OriginalSubject: "app.acme.search.index_update", MsgID: "msg-1",
				ErrorClass: string(rec.ErrorClass), DeadLetteredAt: rec.DeadLetteredAt, Status: "quarantined",
				PayloadSHA256: "aa", OriginalPayloadSHA256: "aa",
			}
			v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
			require.NotEqual(t, replaypolicy.Go, v.Outcome,
				"a dead letter whose Dlq-Error-Class %q could not be read was judged by error class %q: %s (%s); "+
					"the rule it tried to claim (stale_version: %s) was never weighed",
				sent, rec.ErrorClass, v.Outcome, v.Reason, table.DescribeErrorClass(replaypolicy.ErrStaleVersion))
		})
	}
}
