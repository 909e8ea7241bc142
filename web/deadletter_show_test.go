package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

func TestDeadLetterShow(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	stack := "goroutine 7 [running]:\nmain.refund(0xc000123)\n\t/app/refund.go:42 +0x1d"
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "refund-77", OperationID: "op-77", CorrelationID: "corr-77",
			Error: "refund ord-77: gateway timed out\nsecond line", Class: "unknown_effect", Stack: stack,
			Headers: map[string][]string{dlq.HeaderPrincipal: {"user:42"}, "Traceparent": {"00-abc-01"}}},
		testfactory.Letter{Tenant: "globex", ItemType: "email.send", MsgID: "mail-1"},
	)
	acme, globex := ids[0], ids[1]
	_, err := audit.AppendFunc(context.Background(), b.Pool, audit.Event{
		Tenant: "acme", Action: "deadletter.discard", Outcome: audit.OutcomeOK, ObjectType: "dead_letter", ObjectID: fmt.Sprint(acme), Reason: "test trail",
	})
	require.NoError(t, err)
	_, err = audit.AppendFunc(context.Background(), b.Pool, audit.Event{
		Tenant: "acme", Action: "replay.publish", Outcome: audit.OutcomeOK, MessageID: "refund-77",
	})
	require.NoError(t, err)
	c, _ := b.SignIn(t, "acme:oncall")

	t.Run("Success", func(t *testing.T) {
		resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", acme), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Equal(t, "orders.refund", byID(d, "dl-type").Text())
		assert.Equal(t, "acme", byID(d, "dl-tenant").Text())
		assert.Contains(t, text(byID(d, "dl-status")), "quarantined")
		assert.Contains(t, text(byID(d, "dl-class")), "unknown effect")
		assert.Equal(t, "refund ord-77: gateway timed out\nsecond line", byID(d, "dl-error").Text())
		assert.Equal(t, stack, byID(d, "dl-stack").Text())
		assert.Equal(t, "3", byID(d, "dl-attempts").Text())
		assert.Equal(t, "refund-77", byID(d, "dl-msgid").Text())
		summary := byID(d, "dl-summary")
		for _, want := range []string{"op-77", "corr-77", "user:42", "app.acme.orders.refund", "dlq.acme.orders.refund", testfactory.Stream + ":"} {
			assert.Contains(t, summary.Text(), want)
		}
		// Copy buttons for the ids.
		for _, id := range []string{"refund-77", "op-77", "corr-77"} {
			assert.Equal(t, 1, summary.Find(`button[data-copy="`+id+`"]`).Length(), id)
		}
		// Policy: orders.refund is manual in dev/policy.toml.
		assert.Equal(t, "manual", byID(d, "dl-policy-class").Text())
		assert.Contains(t, byID(d, "dl-policy-text").Text(), "two distinct approvers")
		assert.Contains(t, byID(d, "dl-policy").Text(), "orders.refund")
		// Headers, every one received.
		var names []string
		byID(d, "dl-header").Each(func(_ int, s *goquery.Selection) {
			names = append(names, strings.TrimSpace(s.Find("td").First().Text()))
		})
		assert.Contains(t, names, "Traceparent")
		assert.Contains(t, names, dlq.HeaderPrincipal)
		// Payload pretty-printed.
		assert.Equal(t, "json", byID(d, "dl-payload").AttrOr("data-kind", ""))
		assert.Equal(t, "{\n  \"order_id\": \"ord-1\",\n  \"amount_cents\": 1200\n}", byID(d, "dl-payload-body").Text())
		assert.Equal(t, fmt.Sprintf("/deadletters/%d/payload", acme), byID(d, "dl-download").AttrOr("href", ""))
		assert.Zero(t, byID(d, "dl-truncated").Length())
		assert.Len(t, byID(d, "dl-sha").Text(), 64)
		// The audit trail: by object and by message id, oldest first.
		trail := byID(d, "dl-audit-row")
		require.Equal(t, 2, trail.Length())
		assert.Contains(t, trail.Eq(0).Text(), "deadletter.discard")
		assert.Contains(t, trail.Eq(0).Text(), "test trail")
		assert.Contains(t, trail.Eq(1).Text(), "replay.publish")
		assert.Equal(t, 0, trail.Find("a").Length(), "oncall cannot read the audit log: no links")
		assert.Equal(t, 1, byID(d, "dl-group-link").Length())
	})

	t.Run("NotFound", func(t *testing.T) {
		for _, path := range []string{"/deadletters/999999", "/deadletters/abc", "/deadletters/-1", "/deadletters/999999/payload"} {
			assert.Equal(t, http.StatusNotFound, b.Do(t, c, "GET", path, nil, nil).Status, path)
		}
	})

	t.Run("CrossTenantIsNotFoundAndAudited", func(t *testing.T) {
		other, _ := b.SignIn(t, "acme:oncall")
		before := b.AuditCount(t, "action = 'authz.denied' AND object_type = 'dead_letter' AND object_id = $1 AND tenant = 'globex'", fmt.Sprint(globex))
		resp := b.Do(t, other, "GET", fmt.Sprintf("/deadletters/%d", globex), nil, nil)
		assert.Equal(t, http.StatusNotFound, resp.Status)
		assert.NotContains(t, resp.Body, "mail-1", "nothing of it leaks")
		assert.Equal(t, http.StatusNotFound, b.Do(t, other, "GET", fmt.Sprintf("/deadletters/%d/payload", globex), nil, nil).Status)
		after := b.AuditCount(t, "action = 'authz.denied' AND object_type = 'dead_letter' AND object_id = $1 AND tenant = 'globex'", fmt.Sprint(globex))
		assert.Equal(t, before+2, after, "both attempts audited with the object's tenant")
	})

	t.Run("Download", func(t *testing.T) {
		resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d/payload", acme), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		assert.Equal(t, `{"order_id":"ord-1","amount_cents":1200}`, resp.Body)
		assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
		assert.Equal(t, fmt.Sprintf(`attachment; filename="deadletter-%d.bin"`, acme), resp.Header.Get("Content-Disposition"))
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		assert.Equal(t, 1, b.AuditCount(t, "action = 'deadletter.download' AND object_id = $1 AND message_id = 'refund-77'", fmt.Sprint(acme)))
	})

	t.Run("ViewerMayNotDownload", func(t *testing.T) {
		viewer, _ := b.SignIn(t, "acme:viewer")
		d := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", acme), nil, nil).Doc(t)
		assert.Zero(t, byID(d, "dl-download").Length(), "no download link without the permission")
		assert.Equal(t, http.StatusForbidden, b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d/payload", acme), nil, nil).Status)
		// Download in one tenant, only read in the other: the other's payload is refused, not hidden.
		mixed, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
		assert.Equal(t, http.StatusForbidden, b.Do(t, mixed, "GET", fmt.Sprintf("/deadletters/%d/payload", globex), nil, nil).Status)
		assert.Equal(t, http.StatusOK, b.Do(t, mixed, "GET", fmt.Sprintf("/deadletters/%d/payload", acme), nil, nil).Status)
	})

	t.Run("AuditorSeesTrailLinks", func(t *testing.T) {
		auditor, _ := b.SignIn(t, "acme:auditor")
		d := b.Do(t, auditor, "GET", fmt.Sprintf("/deadletters/%d", acme), nil, nil).Doc(t)
		rows := byID(d, "dl-audit-row")
		assert.GreaterOrEqual(t, rows.Length(), 2)
		assert.Equal(t, rows.Length(), rows.Find(`a[href^="/audit/"]`).Length(), "every entry links to its audit event")
	})
}

func TestDeadLetterPayloads(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	big := []byte(`{"batch":[` + strings.Repeat(`{"event":"page_view"},`, 5000) + `{}]}`)
	require.Greater(t, len(big), dlq.PreviewPayloadMax)
	binary := []byte{0x1f, 0x8b, 0x08, 0x00, 'h', 'i', 0xff, 0x00, '<', 's', '>'}
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Payload: big},
		testfactory.Letter{Payload: binary},
		testfactory.Letter{Payload: []byte("plain text line\n" + scriptTag)},
		testfactory.Letter{Payload: []byte{}},
		testfactory.Letter{Payload: []byte(`{"subject":"` + strings.ReplaceAll(attrBreak, `"`, `\"`) + `","link":"javascript:alert(1)"}`)},
	)
	c, _ := b.SignIn(t, "acme:oncall")
	get := func(id int64) (string, *goquery.Selection, string) {
		resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		d := resp.Doc(t)
		assertNothingExecutable(t, d, resp.Body)
		return byID(d, "dl-payload").AttrOr("data-kind", ""), byID(d, "dl-payload-body"), resp.Body
	}

	kind, body, page := get(ids[0])
	assert.Equal(t, "text", kind, "a truncated JSON payload is shown as text")
	assert.Len(t, body.Text(), dlq.PreviewPayloadMax)
	assert.Contains(t, page, `data-testid="dl-truncated"`)
	assert.Contains(t, page, "Showing the first 64.0 KB of")

	kind, body, _ = get(ids[1])
	assert.Equal(t, "binary", kind)
	assert.Equal(t, "00000000  1f 8b 08 00 68 69 ff 00  3c 73 3e                 |....hi..<s>|", body.Text())

	kind, body, _ = get(ids[2])
	assert.Equal(t, "text", kind)
	assert.Equal(t, "plain text line\n"+scriptTag, body.Text())

	kind, _, page = get(ids[3])
	assert.Equal(t, "empty", kind)
	assert.Contains(t, page, "The payload is empty.")

	kind, body, _ = get(ids[4])
	assert.Equal(t, "json", kind)
	assert.Contains(t, body.Text(), `"link": "javascript:alert(1)"`)

	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d/payload", ids[0]), nil, nil)
	assert.Equal(t, string(big), resp.Body, "the download is whole")
	resp = b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d/payload", ids[1]), nil, nil)
	assert.Equal(t, string(binary), resp.Body, "byte for byte")
}

func TestDeadLetterShowEscapesHostileValues(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ids := testfactory.DeadLetters(t, b.Pool, testfactory.Letter{
		Tenant: "acme", ItemType: "email.send", MsgID: attrBreak, OperationID: scriptTag, CorrelationID: jsURL, Subject: jsURL,
		Error: hostileAll + badUTF8, Stack: scriptTag + "\n" + attrBreak, Class: "fatal",
		Headers: map[string][]string{"X-Evil": {hostileAll, badUTF8}, dlq.HeaderPrincipal: {jsURL}},
		Payload: []byte(scriptTag + attrBreak),
	})
	c, _ := b.SignIn(t, "acme:oncall")
	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", ids[0]), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	d := resp.Doc(t)
	assertNothingExecutable(t, d, resp.Body)
	assert.Contains(t, byID(d, "dl-error").Text(), hostileAll, "shown as text")
	assert.Contains(t, byID(d, "dl-error").Text(), "\uFFFD")
	assert.Equal(t, attrBreak, byID(d, "dl-msgid").Text())
	assert.Equal(t, attrBreak, byID(d, "dl-summary").Find(`button[data-copy]`).First().AttrOr("data-copy", ""))
	assert.Contains(t, byID(d, "dl-stack").Text(), scriptTag)
	assert.Equal(t, scriptTag+attrBreak, byID(d, "dl-payload-body").Text())
	assert.Equal(t, 1, byID(d, "dl-malformed").Length(), "the contract breaks are listed")
	// The binary header value is shown as base64, not as bytes.
	var binary int
	byID(d, "dl-header").Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(s.Text(), "base64") {
			binary++
		}
	})
	assert.Equal(t, 2, binary, "Dlq-Error and the second X-Evil value")
	// A javascript: subject is text, never a link.
	assert.Zero(t, d.Find(`a[href*="javascript"]`).Length())
	assert.Contains(t, byID(d, "dl-summary").Text(), jsURL)
}
