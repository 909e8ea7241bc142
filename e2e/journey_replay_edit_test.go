package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestEditedPayloadApprovalJourney is issue 11's journey: the on-call
// replays a rebuildable search-index update (which alone would go out at
// once) but fixes its payload first, with a reason; the request now waits
// for an approver (the replay's reason typed on the confirm page is kept
// across an edit). The approver finds it marked edited in /approvals, reads
// the diff of original and edited payload, and approves; the target
// stream receives the edited bytes under the original message id, marked
// Dlq-Payload-Edited with their SHA-256.
func TestEditedPayloadApprovalJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	doc := deadLetterSpec{
		Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
		MsgID: "doc-" + run, Payload: fmt.Appendf(nil, `{"sku":"sku-%s","price":1000,"currency":"EUR"}`, run),
		Err: "indexer: price must be in cents", Class: dlq.ClassPermanent,
	}
	publishDeadLetter(t, ctx, js, doc)
	dlID := waitDeadLetterID(t, s.DB, doc.MsgID, s.Console.proc)
	edited := fmt.Sprintf(`{"sku":"sku-%s","price":100000,"currency":"EUR"}`, run)
	why := "price was sent in euros; the indexer wants cents (e2e " + run + ")"

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(dlID)
	assert.Equal(t, "rebuildable", oncall.Text(testID("dl-policy-class")))
	oncall.ClickLoads(testID("replay"), "the confirm page with the payload form", `document.querySelector('[data-testid="payload-edit-form"]')`)
	// A first edit with a typo (a price in tenths of a euro), which lets
	// the item go and so asks for the replay's reason.
	oncall.Fill(testID("payload-edit"), strings.Replace(edited, "100000", "10000", 1))
	oncall.Fill(testID("payload-edit-reason"), why)
	oncall.ClickLoads(testID("payload-save"), "the confirm page after the edit", `document.querySelector('[data-testid="replay-edited"]')`)
	// The replay's reason typed on the page comes back with the page an
	// edit returns to: app.js sends it with the edit's own form, in its
	// body, and the console keeps it in the session, never in the address
	// (the browser's history, a proxy's log). Here an edit saved (the typo
	// corrected), then one refused (the same bytes again).
	reason := "reindex the corrected price (e2e " + run + ")"
	oncall.Fill(testID("replay-reason"), reason)
	oncall.Fill(testID("payload-edit"), edited)
	oncall.Fill(`form[data-testid="payload-edit-form"] input[name="reason"]`, why)
	oncall.ClickLoads(testID("payload-save"), "the confirm page after the edit corrected", `document.querySelector('[data-testid="payload-diff-lines"]') &&
		document.querySelector('[data-testid="payload-diff-lines"]').textContent.includes('"price": 100000')`)
	assert.Contains(t, oncall.Text(testID("payload-diff-lines")), `"price": 100000`, "the requester sees the change too")
	assert.Equal(t, reason, oncall.Text(testID("replay-reason")), "the reason typed is kept across the edit")
	assert.NotContains(t, oncall.Location(), "corrected", "and is not in the address")
	assert.NotContains(t, oncall.Location(), "reason", "and is not in the address")
	oncall.Fill(testID("replay-reason"), reason)
	oncall.Fill(`form[data-testid="payload-edit-form"] input[name="reason"]`, why)
	oncall.ClickLoads(testID("payload-save"), "the confirm page refusing the same bytes", `document.querySelector('[data-testid^="field-error-payload-"]')`)
	assert.Equal(t, reason, oncall.Text(testID("replay-reason")), "the reason typed is kept")
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(oncall.Location())
	require.NotNil(t, m, oncall.Location())
	reqPath := m[0]
	assert.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"), "an edited payload is never replayed on one person's word")
	assert.True(t, oncall.Exists(testID("replay-edited")))
	assert.False(t, oncall.Exists(testID("approve")), "the requester cannot approve their own edit")
	oncall.Screenshot("requester")
	requireStreamEmpty(t, ctx, js)

	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open("/approvals")
	approver.WaitUntil("the approval queue", `document.querySelector('[data-testid="approval-row"]')`)
	row := approver.Text(testID("approval-row"))
	assert.Contains(t, row, "edited", "the queue says the payload was edited")
	assert.True(t, approver.Exists(testID("approval-edits")), "and shows what changed")
	approver.Open(reqPath)
	approver.WaitUntil("the request page", `document.querySelector('[data-testid="payload-diff"]')`)
	diff := approver.Text(testID("payload-diff-lines"))
	assert.Contains(t, diff, `-   "price": 1000,`, "the original line")
	assert.Contains(t, diff, `+   "price": 100000,`, "the edited line")
	assert.Equal(t, why, approver.Text(testID("payload-edit-reason")))
	sum := sha256.Sum256([]byte(edited))
	assert.Equal(t, hex.EncodeToString(sum[:]), approver.Text(testID("payload-edited-sha")))
	assert.Equal(t, "1 removed, 1 added", approver.Text(testID("payload-diff-counts")))
	approver.Screenshot("approver-diff")
	approver.approveReplay(mustParseID(t, reqPath), "")
	approver.waitReplayStatus(mustParseID(t, reqPath), "done")

	got := requireReplayedOnce(t, ctx, js, doc.MsgID, doc.OriginalSubject, []byte(edited), mustParseID(t, reqPath))
	assert.Equal(t, hex.EncodeToString(sum[:]), got.Header.Get("Dlq-Payload-Edited"), "the replayed message says it was edited")
	assert.True(t, strings.HasPrefix(got.Header.Get(dlq.HeaderNatsMsgID), "doc-"), "under the original message id")
	s.Console.AuditVerify(t)
}

func mustParseID(t *testing.T, path string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(path, "/replay/requests/%d", &id); err != nil {
		t.Fatalf("not a request path %q: %v", path, err)
	}
	return id
}
