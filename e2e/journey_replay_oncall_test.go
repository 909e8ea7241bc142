package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestOnCallReplayJourney is journey 1 of issue 6 with its triage and
// replay parts. Dead letters of three item types arrive while the on-call
// watches (signed in through Dex in Chromium): the dashboard's unresolved
// count rises to them; the on-call filters the list by item type, opens an
// email whose payload carries <script> and an onerror handler and sees
// them as text (no element made, nothing run), reads the stack trace, then
// replays a rebuildable search-index update straight from its page
// (confirm page, reason, no approval) and sees it done. The target stream
// then holds exactly one message with the original Nats-Msg-Id, on the
// original subject, with the original payload and the replay headers.
func TestOnCallReplayJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.Open("/")
	oncall.WaitUntil("the dashboard", `document.querySelector('[data-testid="kpi-unresolved"]')`)
	before := kpiUnresolved(oncall)

	run := randomHex(4)
	const xss = `<script>alert(1)</script><img src=x onerror="window.__xss=1">`
	stack := "goroutine 7 [running]:\nmain.(*Indexer).apply(0xc000123, {0x1, 0x2})\n\t/srv/indexer/apply.go:88 +0x1f4\nmain.main()\n\t/srv/indexer/main.go:31"
	index := deadLetterSpec{
		Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
		MsgID: "idx-" + run, Payload: fmt.Appendf(nil, `{"index":"products","doc_id":"sku-%s"}`, run),
		Err: "index products: timeout", Class: dlq.ClassTransient, Stack: stack,
	}
	email := deadLetterSpec{
		Tenant: "acme", ItemType: "email.send", OriginalSubject: "app.acme.email.send",
		MsgID: "mail-xss-" + run, OperationID: "op-mail-xss-" + run,
		Payload: []byte(`{"to":"eve@example.com","subject":"hello","html":"` + strings.ReplaceAll(xss, `"`, `\"`) + `"}`),
		Err:     "smtp: 550 mailbox unavailable", Class: dlq.ClassPermanent, Stack: "mailer.Send\n\t/srv/mailer/send.go:12",
	}
	specs := []deadLetterSpec{index, email}
	for i := range 3 {
		specs = append(specs, deadLetterSpec{
			Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
			MsgID: fmt.Sprintf("idx-%s-%d", run, i), Payload: fmt.Appendf(nil, `{"doc_id":"sku-%d"}`, i),
			Err: "index products: timeout", Class: dlq.ClassTransient,
		}, deadLetterSpec{
			Tenant: "acme", ItemType: "analytics.event", OriginalSubject: "app.acme.analytics.event",
			MsgID: fmt.Sprintf("ev-%s-%d", run, i), Payload: fmt.Appendf(nil, `{"event":"click","n":%d}`, i),
			Err: "warehouse: schema mismatch", Class: dlq.ClassSchemaInvalid,
		})
	}
	for _, d := range specs {
		publishDeadLetter(t, ctx, js, d)
	}
	indexID := waitDeadLetterID(t, s.DB, index.MsgID, s.Console.proc)
	emailID := waitDeadLetterID(t, s.DB, email.MsgID, s.Console.proc)

	// The dashboard count rises to what arrived.
	want := before + int64(len(specs))
	err := wait.Poll(2*time.Minute, 500*time.Millisecond, whileRunning(func() error {
		oncall.Open("/")
		if got := kpiUnresolved(oncall); got != want {
			return fmt.Errorf("unresolved %d, want %d: %w", got, want, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))
	require.NoError(t, err, "dashboard count")

	// The list, filtered by item type as a person does: choose, apply.
	oncall.ClickLoads(testID("kpi-unresolved"), "the dead-letter list", `document.querySelectorAll('[data-testid="deadletter-row"]').length === `+strconv.Itoa(len(specs)))
	oncall.Select(testID("deadletter-filter")+` select[name="type"]`, "email.send")
	oncall.Click(testID("deadletter-filter") + ` button[type="submit"]`)
	oncall.WaitUntil("the list filtered to email.send", `(() => {
		const rows = [...document.querySelectorAll('[data-testid="deadletter-row"]')];
		return new URLSearchParams(location.search).get("type") === "email.send" && rows.length === 1 &&
			rows[0].querySelector('[data-testid="row-type"]').textContent.trim() === "email.send";
	})()`)
	assert.Equal(t, strconv.FormatInt(emailID, 10), oncall.Attr(testID("deadletter-row"), "data-id"))
	assert.Equal(t, email.MsgID, oncall.Text(testID("row-msgid")))

	// The email with <script> in its payload: shown as text, nothing made of it.
	oncall.ClickLoads(testID("deadletter-row")+" "+testID("row-link"), "the email's page", `location.pathname === "/deadletters/`+strconv.FormatInt(emailID, 10)+`" &&
		document.querySelector('[data-testid="dl-payload-body"]')`)
	payloadText := oncall.Text(testID("dl-payload-body"))
	assert.Contains(t, payloadText, "<script>alert(1)</script>", "the payload's markup is shown as text")
	assert.Contains(t, payloadText, `onerror=`, "the payload's markup is shown as text")
	assert.Zero(t, eval[int](oncall, "count elements in the payload",
		`document.querySelectorAll('[data-testid="dl-payload"] script, [data-testid="dl-payload"] img, [data-testid="dl-payload-body"] *').length`),
		"the payload made no element")
	assert.False(t, eval[bool](oncall, "look for the payload's handler", `window.__xss === 1`), "the payload's onerror ran")
	assert.Equal(t, email.MsgID, oncall.Text(testID("dl-msgid")))
	assert.Contains(t, oncall.Text(testID("dl-error")), "550 mailbox unavailable")
	oncall.Screenshot("payload")

	// The search-index update: the stack trace, then a direct replay.
	oncall.openDeadLetter(indexID)
	assert.Equal(t, strings.TrimSpace(stack), oncall.Text(testID("dl-stack")), "the stack trace as sent")
	assert.Equal(t, "rebuildable", oncall.Text(testID("dl-policy-class")))
	reqID := oncall.requestReplay("index rebuilt after the version-conflict fix (e2e "+run+")", "")
	oncall.waitReplayStatus(reqID, "done")
	oncall.WaitUntil("progress: one replayed, none pending",
		`document.querySelector('[data-testid="progress-replayed"]').textContent.trim() === "1" &&
		 document.querySelector('[data-testid="progress-pending"]').textContent.trim() === "0"`)
	assert.False(t, oncall.Exists(testID("approve")), "a rebuildable replay asks no approval")
	assert.Contains(t, oncall.Text(testID("replay-items")), index.MsgID)
	oncall.Screenshot("")

	requireReplayedOnce(t, ctx, js, index.MsgID, index.OriginalSubject, index.Payload, reqID)
	msgs := streamMessages(t, ctx, js, targetStream)
	assert.Len(t, msgs, 1, "only the replayed item was published")
}

// kpiUnresolved reads the dashboard's unresolved count.
func kpiUnresolved(s *session) int64 {
	s.t.Helper()
	txt := s.Text(testID("kpi-unresolved") + " .kpi__value")
	n, err := strconv.ParseInt(strings.NewReplacer(",", "", " ", "", "\u202f", "", "\u00a0", "").Replace(txt), 10, 64)
	if err != nil {
		s.t.Fatalf("dashboard unresolved count %q: %v", txt, err)
	}
	return n
}
