package views_test

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// blockedGroup is a confirm page's group whose one item is held back until
// its payload is edited (error class schema_invalid).
func blockedGroup() views.ReplayGroup {
	return views.ReplayGroup{
		RequestID: 7, Tenant: "acme", Class: "manual",
		Needs:    "manual: for effects that are irreversible or destructive.",
		OnSubmit: "nothing of it is left to replay: it is void", Approvals: -1,
		Skipped: []views.ReplayItemRow{{DeadLetterID: 81, MsgID: "m-81", Verdict: "blocked",
			SkipReason: `error class "schema_invalid" replays only after a fix: edit its payload`}},
	}
}

// TestReplayConfirmNothingRequestableShowsThePayloadEditBeforeTheWayBack:
// when nothing of a selection can be requested but a payload can be
// edited, the edit form (the way forward) comes before "Back to dead
// letters", and the line saying why nothing can be requested points to it.
// The way back keeps leading to the list as it was filtered, and the
// confirm form still carries it for the 422 page of a refused submit.
func TestReplayConfirmNothingRequestableShowsThePayloadEditBeforeTheWayBack(t *testing.T) {
	t.Parallel()
	m := views.ReplayConfirmModel{
		Action: "/replay/batches/b1", Groups: []views.ReplayGroup{blockedGroup()}, Blocked: 1,
		BackURL: "/deadletters?class=schema_invalid", Reason: "schema fixed",
		Forms: []views.PayloadEdit{{DeadLetterID: 81, MsgID: "m-81", Payload: `{"a":1}`, URL: "/replay/requests/7/items/81/payload"}},
	}
	doc, html := render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))

	assert.Zero(t, byTestID(doc, "replay-submit").Length(), "nothing to request, yet a submit button")
	edit := strings.Index(html, `data-testid="payload-edits"`)
	back := strings.Index(html, `data-testid="replay-back"`)
	require.True(t, edit >= 0 && back >= 0, "the page has both the edit form and the way back")
	assert.Less(t, edit, back, "the payload edit comes after \"Back to dead letters\", where it is missed")
	assert.Contains(t, byTestID(doc, "replay-nothing").Text(), "edit it above")
	assert.Equal(t, m.BackURL, byTestID(doc, "replay-back").AttrOr("href", ""))
	assert.Equal(t, m.BackURL, doc.Find(`[data-testid="replay-confirm-form"] input[name="back"]`).AttrOr("value", ""),
		"the confirm form no longer sends where to go back to")
	assert.Equal(t, "schema fixed", byTestID(doc, "replay-reason").Text(), "the reason typed is not kept")

	// A payload too large to edit in the browser is no way forward here.
	m.Forms[0].TooLarge = true
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))
	assert.NotContains(t, byTestID(doc, "replay-nothing").Text(), "edit it above")
}

// TestRequiredFieldsAreMarkedOneWay: every required field of the confirm
// page, the payload edit forms and the request page is marked the same
// way, a "*" after its label that assistive technology skips because the
// control itself is required (announced as such); none says "required" in
// red beside it.
func TestRequiredFieldsAreMarkedOneWay(t *testing.T) {
	t.Parallel()
	g := blockedGroup()
	g.Items, g.Rate, g.MaxRate, g.Confirmation = 1, "1", "10", "REPLAY m-82"
	confirm := views.ReplayConfirmModel{
		Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}, Total: 1, Requestable: true, NeedsNote: true,
		Forms: []views.PayloadEdit{{DeadLetterID: 81, MsgID: "m-81", Payload: `{"a":1}`, URL: "/replay/requests/7/items/81/payload"}},
	}
	request := views.ReplayRequestModel{ID: 7, Tenant: "acme", Class: "manual", Status: "pending_approval",
		CanApprove: true, CanReject: true, ApproveURL: "/replay/requests/7/approve", RejectURL: "/replay/requests/7/reject"}
	pages := map[string]*goquery.Document{}
	pages["confirm"], _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), confirm))
	pages["request"], _ = render(t, views.ReplayRequest(page("Replay request 7", "replays"), request))
	for name, doc := range pages {
		labels := doc.Find("label.label")
		require.NotZero(t, labels.Length(), name)
		marked := 0
		labels.Each(func(_ int, l *goquery.Selection) {
			text := strings.TrimSpace(l.Text())
			assert.False(t, strings.HasSuffix(text, "required"), "%s: %q is marked with the word", name, text)
			control := doc.Find("#" + l.AttrOr("for", ""))
			_, required := control.Attr("required")
			mark := l.Find(".req")
			if !required {
				assert.Zero(t, mark.Length(), "%s: %q is marked but not required", name, text)
				return
			}
			marked++
			if assert.Equal(t, 1, mark.Length(), "%s: required %q has no mark", name, text) {
				assert.Equal(t, "*", mark.Text(), name)
				assert.Equal(t, "true", mark.AttrOr("aria-hidden", ""), "%s: the mark is read out beside the control's own \"required\"", name)
			}
		})
		assert.NotZero(t, marked, "%s has no required field to check", name)
	}
}

// TestPolicyTextReadsAsASentence: a class description shown on its own
// starts with a capital, whatever the policy file wrote after "class: ".
func TestPolicyTextReadsAsASentence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ class, describe, want string }{
		{"manual", "manual: for effects that are irreversible.", "For effects that are irreversible."},
		{"dedupe", "replays under the original message id.", "Replays under the original message id."},
		{"manual", "Already a sentence.", "Already a sentence."},
		{"manual", "manual: ", ""},
		{"manual", "manual: élan vital", "Élan vital"},
		{"manual", `manual: "REPLAY <id>" to confirm`, `"REPLAY <id>" to confirm`},
	} {
		assert.Equal(t, tc.want, views.PolicyText(tc.class, tc.describe), tc.describe)
	}
}
