package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall11AuditObjectOfNoTypeSaysSo: the audit filter's Object field
// reads "a type and an id", and its own rule (web/audit_list.go Validate)
// is that an object the filter cannot read says so, since finding nothing
// reads as "nothing happened to it". An auditor asked about "request 4"
// (the console calls it "Replay request 4", and the replay list's column
// is "Request") types "request 4": the filter takes "request" as an object
// type no audit entry has ever had and answers "0 events · No audit events
// match", 200 — with three entries for replay_request 4 in the log. The
// same for a typo ("dead_leter 138"). Seen on the screens server: auditor,
// /audit?object=request+4 (0 events) and ?object=replay_request+4 (3).
//
// Severity: low (an auditor reads "nothing happened" to a request that
// was approved and ran). Expected: a type no entry has is refused at the
// field (422, as a broken object is), or read as the console's own names
// for its objects.
func TestRevOncall11AuditObjectOfNoTypeSaysSo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "search.index_update", "rvo11-audit-object", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard back"})

	named := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(fmt.Sprintf("replay_request %d", req.ID)), nil, nil)
	require.Equal(t, http.StatusOK, named.Status, named.Body)
	require.NotZero(t, named.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "the request has audit entries")

	for _, typed := range []string{fmt.Sprintf("request %d", req.ID), fmt.Sprintf("dead_leter %d", id)} {
		resp := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(typed), nil, nil)
		d := resp.Doc(t)
		rows := d.Find(`[data-testid="audit-row"]`).Length()
		fieldError := strings.TrimSpace(d.Find(`#f-object-error`).Text())
		assert.True(t, rows > 0 || (resp.Status == http.StatusUnprocessableEntity && fieldError != ""),
			"object %q: answered %d with %d rows and no message at the field (%q): reads as nothing happened to it",
			typed, resp.Status, rows, textOf(d, `[data-testid="empty-state"], .empty`))
	}
}
