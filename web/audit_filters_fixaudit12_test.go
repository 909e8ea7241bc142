package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixAudit12OperationLinksAndLongIDs: an entry's operation id links,
// on the list and on the event page, to every entry of the operation in
// its tenant; an id longer than a row holds (stored as its key) is found
// by the whole id, as a message id is.
func TestFixAudit12OperationLinksAndLongIDs(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	long := "fa12-op-" + strings.Repeat("x", 600)
	e, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter", ObjectID: "7",
		MessageID: "fa12-msg", OperationID: long, Reason: "fa12-long-op", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	_, err = audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter", ObjectID: "8",
		MessageID: "fa12-other", OperationID: "fa12-op-other", Reason: "fa12-other-op", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	auditor, _ := b.SignIn(t, "acme:auditor")

	page := b.Do(t, auditor, http.MethodGet, "/audit?"+url.Values{"operation_id": {long}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Contains(t, page.Body, "fa12-long-op", "the whole long id finds the entry stored under its key")
	assert.NotContains(t, page.Body, "fa12-other-op")
	doc := page.Doc(t)
	href, ok := doc.Find(`[data-testid="audit-operation-link"]`).First().Attr("href")
	require.True(t, ok, "the row links its operation")
	u, err := url.Parse(href)
	require.NoError(t, err)
	assert.Equal(t, "/audit", u.Path)
	assert.Equal(t, e.OperationID, u.Query().Get("operation_id"))
	assert.Equal(t, "acme", u.Query().Get("tenant"))
	value, _ := doc.Find(`input[name="operation_id"]`).Attr("value")
	assert.Equal(t, long, value, "the form keeps the filter")

	event := b.Do(t, auditor, http.MethodGet, "/audit/"+strconv.FormatInt(e.Seq, 10), nil, nil)
	require.Equal(t, http.StatusOK, event.Status)
	link, ok := event.Doc(t).Find(`[data-testid="audit-event-operation-filter"]`).Attr("href")
	require.True(t, ok, "the event page links every entry of its operation")
	assert.Equal(t, href, link)
	following := b.Do(t, auditor, http.MethodGet, link, nil, nil)
	require.Equal(t, http.StatusOK, following.Status)
	assert.Contains(t, following.Body, "fa12-long-op")
	assert.NotContains(t, following.Body, "fa12-other-op")
}

// TestFixAudit12UnknownFilterIsRefused: a parameter that is no filter of
// the audit log (misspelt, or one it does not have) is refused with a
// message, on the page and by the exports, never dropped: the search (or
// the export) would cover the whole log.
func TestFixAudit12UnknownFilterIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, _ := b.SignIn(t, "*:auditor")
	q := "?" + url.Values{"operationid": {"op-1"}}.Encode()

	page := b.Do(t, auditor, http.MethodGet, "/audit"+q, nil, nil)
	require.Equal(t, http.StatusUnprocessableEntity, page.Status)
	errs := page.Doc(t).Find(`[data-testid="filter-errors"]`).Text()
	assert.Contains(t, errs, `no filter "operationid"`)
	assert.Contains(t, errs, "operation_id", "the message names the filters there are")
	assert.Zero(t, page.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "nothing is listed")
	assert.Zero(t, page.Doc(t).Find(`[data-testid="export-csv"]`).Length(), "no export of a refused filter")

	for _, path := range []string{"/audit/export.csv", "/audit/export.jsonl"} {
		resp := b.Do(t, auditor, http.MethodGet, path+q, nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s with an unknown filter exports nothing", path)
	}
	ok := b.Do(t, auditor, http.MethodGet, "/audit?poll=1", nil, nil)
	assert.Equal(t, http.StatusOK, ok.Status, "a page's own poll mark is no filter, and no error")
}

// TestFixAudit12ExportLinksCarryThePagesWindow: the "Last 1 h" preset keeps
// "now-1h" in the page's address, but its export links carry the instant
// the page counted from, so the export holds the window the page showed
// whenever it is clicked.
func TestFixAudit12ExportLinksCarryThePagesWindow(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, _ := b.SignIn(t, "*:auditor")
	before := time.Now()
	page := b.Do(t, auditor, http.MethodGet, "/audit?from=now-1h&to=now", nil, nil)
	after := time.Now()
	require.Equal(t, http.StatusOK, page.Status)
	doc := page.Doc(t)
	for _, id := range []string{"export-csv", "export-jsonl"} {
		href, ok := doc.Find(`[data-testid="` + id + `"]`).Attr("href")
		require.True(t, ok, id)
		u, err := url.Parse(href)
		require.NoError(t, err)
		from, err := time.Parse(time.RFC3339Nano, u.Query().Get("from"))
		require.NoError(t, err, "%s carries an instant, not %q", id, u.Query().Get("from"))
		to, err := time.Parse(time.RFC3339Nano, u.Query().Get("to"))
		require.NoError(t, err, "%s carries an instant, not %q", id, u.Query().Get("to"))
		assert.WithinRange(t, from, before.Add(-time.Hour-time.Second), after.Add(-time.Hour+time.Second))
		assert.Equal(t, time.Hour, to.Sub(from), "the page's window")
		resp := b.Do(t, auditor, http.MethodGet, href, nil, nil)
		assert.Equal(t, http.StatusOK, resp.Status, "the export takes the instants")
	}
	assert.Positive(t, doc.Find(`a[href*="from=now-1h"]`).Length(), "the presets stay relative")
}

// TestFixAudit12AuditPageSaysANewerCheckpointDoesNotVerify: a checkpoint
// that does not verify with the console's keys is not shown as signed; the
// page says one exists, at which seq, and counts from the last that does.
func TestFixAudit12AuditPageSaysANewerCheckpointDoesNotVerify(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	auditor, _ := b.SignIn(t, "*:auditor")
	// The console's checkpointer may have judged a checkpoint due (none
	// verified yet, on its first tick) just before this test signs one,
	// and then record after the forgery: it refuses it and signs a newer
	// head, which leaves nothing newer to warn of. Such an attempt is
	// told by a checkpoint above the forgery's and tried again: the
	// recorder, having signed, is not due again for its interval.
	for attempt := 1; ; attempt++ {
		_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.entry", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
		signed, err := b.Checkpoints.Record(ctx, audit.ReasonOnDemand)
		require.NoError(t, err)
		// The entry and its forged checkpoint in one transaction: the
		// entry holds the chain's lock, which a recorder takes first, so
		// none signs the entry before the forgery takes its seq.
		var forged audit.Entry
		require.NoError(t, pgx.BeginFunc(ctx, b.Pool, func(tx pgx.Tx) error {
			forged, err = audit.Append(ctx, tx, audit.Event{Action: "test.entry", Outcome: audit.OutcomeOK})
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
                VALUES ($1, $2, now(), 'interval', $3, sha256('p'), sha512('s'))`, forged.Seq, forged.Hash, b.Signer.KeyID())
			return err
		}))

		page := b.Do(t, auditor, http.MethodGet, "/audit", nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		var newest int64
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT max(seq) FROM audit_checkpoints`).Scan(&newest))
		if newest > forged.Seq && attempt < 3 {
			t.Logf("attempt %d: the console signed seq %d after the forgery at %d; again", attempt, newest, forged.Seq)
			continue
		}
		require.Equal(t, forged.Seq, newest, "the forgery is the newest checkpoint")
		doc := page.Doc(t)
		assert.Equal(t, strconv.FormatInt(signed.Seq, 10), strings.TrimSpace(doc.Find(`[data-testid="audit-checkpoint-seq"]`).Text()),
			"the last checkpoint that verifies")
		warning := doc.Find(`[data-testid="audit-checkpoint-unverified"]`).Text()
		assert.Contains(t, warning, "A newer checkpoint, at seq "+strconv.FormatInt(forged.Seq, 10)+", does not verify")
		return
	}
}
