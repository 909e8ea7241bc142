package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
	"github.com/quarantine-console/quarantine/views"
)

// A dead letter whose values carry a right-to-left override (U+202E), a
// zero-width space (U+200B) and a left-to-right isolate (U+2066): the
// tenant (from the subject), the original subject (the replay target),
// the message and operation ids, the error, a header and the payload.
const (
	hiddenTenant  = "acme\u200b"
	hiddenSubject = "app." + hiddenTenant + ".email.\u202ednes"
	hiddenMsgID   = "mail-\u202e77-\u2066x"
	hiddenOpID    = "send-\u200b77"
	hiddenError   = "refund \u202edeliaf\u200b for \u2066order 7"
	hiddenHeader  = "X-Note"
	hiddenValue   = "a\u2066b\u200bc\u202e"
	hiddenPayload = "{\"note\":\"pay \u202e001\u200b\"}"
)

// TestHiddenCharactersReadAsMarkers: a value that came from a message and
// holds hidden or direction-changing characters reads as it is on every
// page that shows it (the list and its filter, the detail, the replay
// confirm, request and approval pages, the audit log): each character a visible marker "<U+202E>", never
// the character itself in text a person reads; the detail page says which
// values hold some; copy buttons and the download keep the exact bytes.
func TestHiddenCharactersReadAsMarkers(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, err := b.JetStream.PublishMsg(ctx, &nats.Msg{Subject: "dlq." + hiddenTenant + ".email.send", Data: []byte(hiddenPayload), Header: nats.Header{
		dlq.HeaderOriginalSubject: {hiddenSubject}, dlq.HeaderOriginalMsgID: {hiddenMsgID}, dlq.HeaderOperationID: {hiddenOpID},
		dlq.HeaderError: {hiddenError}, dlq.HeaderErrorClass: {"transient"}, dlq.HeaderAttempts: {"3"},
		dlq.HeaderFirstFailedAt: {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, hiddenHeader: {hiddenValue},
	}})
	require.NoError(t, err)
	var id int64
	wait.Until(t, "the dead letter stored", 30*time.Second, func() bool {
		err := b.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE msg_id = $1`, hiddenMsgID).Scan(&id)
		return err == nil
	})
	oncall, _ := b.SignIn(t, "*:oncall")
	approver, _ := b.SignIn(t, "*:approver")
	// A new tenant is known to the pages once the counters' snapshot has
	// it (within a second of the store).
	wait.Until(t, "the new tenant's dead letter on the list", 30*time.Second, func() bool {
		return getPage(t, b, oncall, "/deadletters").Find(fmt.Sprintf(`[data-testid="deadletter-row"][data-id="%d"]`, id)).Length() == 1
	})

	t.Run("List", func(t *testing.T) {
		d := getPage(t, b, oncall, "/deadletters")
		row := d.Find(fmt.Sprintf(`[data-testid="deadletter-row"][data-id="%d"]`, id))
		require.Equal(t, 1, row.Length())
		assert.Equal(t, "acme<U+200B>", row.Find(`[data-testid="row-tenant"]`).Text())
		assert.Equal(t, "refund <U+202E>deliaf<U+200B> for <U+2066>order 7", row.Find(`[data-testid="row-link"]`).Text())
		assert.Equal(t, "mail-<U+202E>77-<U+2066>x", row.Find(`[data-testid="row-msgid"]`).Text())
		assert.Equal(t, "mail-<U+202E>77-<U+2066>x", row.Find(`[data-testid="row-msgid"]`).AttrOr("title", ""))
		assertIsolated(t, row.Find(`[data-testid="row-msgid"]`))
		assertNoHiddenText(t, d)
	})

	t.Run("ListFilterEcho", func(t *testing.T) {
		d := getPage(t, b, oncall, "/deadletters?tenant="+url.QueryEscape(hiddenTenant)+"&msg_id="+url.QueryEscape(hiddenMsgID))
		require.Equal(t, 1, d.Find(`[data-testid="deadletter-row"]`).Length(), "the filter finds it by its exact values")
		assert.Equal(t, hiddenMsgID, d.Find(`input[name="msg_id"]`).AttrOr("value", ""), "the field keeps the value, to submit it again")
		assert.Equal(t, "Reads as mail-<U+202E>77-<U+2066>xhidden characters", d.Find(`[data-testid="field-shown-msg_id"]`).Text())
		assert.Equal(t, "acme<U+200B>", d.Find(`select[name="tenant"] option[selected]`).Text())
		assertNoHiddenText(t, d)
	})

	t.Run("Detail", func(t *testing.T) {
		d := getPage(t, b, oncall, fmt.Sprintf("/deadletters/%d", id))
		var in []string
		d.Find(`[data-testid="dl-hidden-in"]`).Each(func(_ int, s *goquery.Selection) { in = append(in, s.Text()) })
		assert.Equal(t, []string{"Tenant", "DLQ subject", "Original subject", "Message id", "Operation id", "Error", "Payload",
			"Header Dlq-Error", "Header Dlq-Operation-Id", "Header Dlq-Original-Msg-Id", "Header Dlq-Original-Subject", "Header X-Note"}, in,
			"the page says which values hold such characters")
		assert.Contains(t, strings.Join(strings.Fields(d.Find(`[data-testid="dl-hidden"]`).Text()), " "), "In: Tenant, DLQ subject, Original subject,",
			"a comma right after each value named (a line break before it was a space)")
		assert.Equal(t, "acme<U+200B>", byID(d, "dl-tenant").Text())
		assert.Equal(t, "refund <U+202E>deliaf<U+200B> for <U+2066>order 7", byID(d, "dl-error").Text())
		assert.Equal(t, "mail-<U+202E>77-<U+2066>x", byID(d, "dl-msgid").Text())
		assert.Contains(t, byID(d, "dl-payload-body").Text(), `"pay <U+202E>001<U+200B>"`)
		var header *goquery.Selection
		d.Find(`[data-testid="dl-header"]`).Each(func(_ int, s *goquery.Selection) {
			if strings.TrimSpace(s.Find(".headers__name").Text()) == hiddenHeader {
				header = s
			}
		})
		require.NotNil(t, header)
		assert.Equal(t, "a<U+2066>b<U+200B>c<U+202E>", header.Find(".headers__value bdi.ut").Text())
		assert.Equal(t, 1, header.Find(`[data-testid="hidden-chars"]`).Length(), "the value is flagged")
		marker := byID(d, "dl-msgid").Find("bdi.uc").First()
		assert.Contains(t, marker.AttrOr("title", ""), "U+202E RIGHT-TO-LEFT OVERRIDE")
		assertIsolated(t, byID(d, "dl-msgid"))
		assert.Equal(t, 3, byID(d, "dl-error").Children().Length(), "the error's block is its isolation: three markers, no wrapper")
		assert.Equal(t, 3, byID(d, "dl-error").Children().Filter("bdi.uc").Length())

		// Copy buttons copy the value itself, and the download is the
		// payload's exact bytes.
		assert.Equal(t, hiddenMsgID, byID(d, "dl-msgid").Parent().Find("button[data-copy]").AttrOr("data-copy", ""))
		var copies []string
		d.Find("button[data-copy]").Each(func(_ int, s *goquery.Selection) { copies = append(copies, s.AttrOr("data-copy", "")) })
		assert.Subset(t, copies, []string{hiddenMsgID, hiddenOpID, hiddenSubject})
		raw := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil)
		assert.Equal(t, http.StatusOK, raw.Status)
		assert.Equal(t, hiddenPayload, raw.Body)
		assertNoHiddenText(t, d)
	})

	t.Run("Replay", func(t *testing.T) {
		form := url.Values{"id": {fmt.Sprint(id)}}
		resp := b.Do(t, oncall, "POST", "/replay", form, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		confirmPath := resp.Header.Get("Location")
		confirm := getPage(t, b, oncall, confirmPath)
		item := confirm.Find(`[data-testid="replay-sample"] [data-testid="replay-item"]`)
		require.Equal(t, 1, item.Length())
		assertReplayItem(t, item)
		assertNoHiddenText(t, confirm)

		resp = b.Do(t, oncall, "POST", confirmPath, url.Values{"reason": {"consumer fixed in 1.2.3"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		reqPath := resp.Header.Get("Location")

		approvals := getPage(t, b, approver, "/approvals")
		row := approvals.Find(`[data-testid="approval-row"]`)
		require.Equal(t, 1, row.Length())
		assert.Equal(t, "acme<U+200B>", row.Find(`td[data-label="Tenant"]`).Text())
		assertNoHiddenText(t, approvals)

		page := getPage(t, b, approver, reqPath)
		require.Equal(t, 1, page.Find(`[data-testid="approve-form"]`).Length(), "the approver may approve it")
		item = page.Find(`[data-testid="replay-items"] [data-testid="replay-item"]`)
		require.Equal(t, 1, item.Length())
		assertReplayItem(t, item)
		assert.Contains(t, page.Find(".page-sub").Text(), "acme<U+200B>")
		assertNoHiddenText(t, page)
	})

	t.Run("AuditLog", func(t *testing.T) {
		auditor, _ := b.SignIn(t, "*:auditor")
		d := getPage(t, b, auditor, "/audit?message_id="+url.QueryEscape(hiddenMsgID))
		rows := d.Find(`[data-testid="audit-row"]`)
		require.Positive(t, rows.Length(), "the replay's item events name the message id")
		rows.Each(func(_ int, r *goquery.Selection) {
			assert.Equal(t, "mail-<U+202E>77-<U+2066>x", r.Find(`td[data-label="Message"] [data-testid="audit-message"]`).Text())
			assert.Equal(t, "acme<U+200B>", r.Find(`td[data-label="Tenant"]`).Text())
		})
		assert.Equal(t, "Reads as mail-<U+202E>77-<U+2066>xhidden characters", d.Find(`[data-testid="field-shown-message_id"]`).Text())
		assertNoHiddenText(t, d)
	})
}

func getPage(t *testing.T, b *testfactory.Console, c *http.Client, path string) *goquery.Document {
	t.Helper()
	resp := b.Do(t, c, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, path)
	return resp.Doc(t)
}

// assertReplayItem checks a replay item row of the hidden dead letter:
// message id, target subject and operation id as markers, each flagged.
func assertReplayItem(t *testing.T, item *goquery.Selection) {
	t.Helper()
	assert.Equal(t, "mail-<U+202E>77-<U+2066>x", item.Find(`[data-testid="replay-item-msgid"] bdi.ut`).Text())
	assert.Equal(t, "app.acme<U+200B>.email.<U+202E>dnes", item.Find(`[data-testid="replay-item-subject"] bdi.ut`).Text())
	assert.Equal(t, "send-<U+200B>77", item.Find(`[data-testid="replay-item-operation"] bdi.ut`).Text())
	assert.Equal(t, 3, item.Find(`[data-testid="hidden-chars"]`).Length())
}

// assertIsolated checks that the value in s is isolated: inside a
// <bdi dir="ltr">, so that it cannot reorder the text around it.
func assertIsolated(t *testing.T, s *goquery.Selection) {
	t.Helper()
	v := s.Find("bdi.ut")
	require.Equal(t, 1, v.Length(), "one isolated value")
	assert.Equal(t, "ltr", v.AttrOr("dir", ""))
}

// assertNoHiddenText checks that no text a person reads on the page holds
// a hidden or direction-changing character (views.HasHiddenLines): not a
// text node, a title, an aria-label nor a placeholder. The values of form
// fields and copy buttons keep the exact value on purpose (they are sent
// or copied, not read), and a <textarea> holds the text it edits.
func assertNoHiddenText(t *testing.T, d *goquery.Document) {
	t.Helper()
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			assert.False(t, views.HasHiddenLines(n.Data), "text %q under <%s> holds a hidden character", n.Data, n.Parent.Data)
		case html.ElementNode:
			if n.Data == "textarea" || n.Data == "script" {
				return
			}
			for _, a := range n.Attr {
				switch a.Key {
				case "title", "aria-label", "placeholder", "alt", "label":
					assert.False(t, views.HasHiddenLines(a.Val), "%s=%q of <%s> holds a hidden character", a.Key, a.Val, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range d.Nodes {
		walk(n)
	}
}
