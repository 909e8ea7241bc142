package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestHiddenCharactersJourney ("Trojan Source" in the console): a producer
// dead-letters an email whose error, message id, operation id and target
// subject carry a right-to-left override (U+202E), a zero-width space
// (U+200B) and a left-to-right isolate (U+2066). In Chromium the on-call
// reads each as a marker "<U+202E>" in the page's rendered text
// (innerText), on the list and on the dead letter, which says that the
// message holds such characters; the text after the override is not
// turned around (each word stands left of the next, as stored); the copy
// button carries the exact id. The approver reads the same markers on the
// request they are asked to approve.
func TestHiddenCharactersJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	email := deadLetterSpec{
		Tenant: "acme", ItemType: "email.send", OriginalSubject: "app.acme.email.\u202esend",
		MsgID: "mail-\u202e" + run + "-\u2066x", OperationID: "op-\u200b" + run,
		Payload: []byte(`{"to":"customer@example.com"}`),
		Err:     "smtp \u202edeliaf\u200b for order " + run, Class: dlq.ClassTransient,
	}
	publishDeadLetter(t, ctx, js, email)
	dlID := waitDeadLetterID(t, s.DB, email.MsgID, s.Console.proc)
	msgIDShown := "mail-<U+202E>" + run + "-<U+2066>x"
	errorShown := "smtp <U+202E>deliaf<U+200B> for order " + run

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)

	oncall.Open("/deadletters")
	row := fmt.Sprintf(`[data-testid="deadletter-row"][data-id="%d"]`, dlID)
	oncall.WaitUntil("the dead letter in the list", `document.querySelector(`+jsString(row)+`)`)
	rowText := innerText(oncall, row)
	assert.Contains(t, rowText, errorShown)
	assert.Contains(t, rowText, msgIDShown)
	assertNoHiddenInnerText(t, oncall, "main")

	oncall.openDeadLetter(dlID)
	assert.Contains(t, innerText(oncall, testID("dl-hidden")), "hidden or direction-changing characters")
	assert.Equal(t, errorShown, innerText(oncall, testID("dl-error")))
	assert.Equal(t, msgIDShown, innerText(oncall, testID("dl-msgid")))
	assert.Contains(t, innerText(oncall, testID("dl-summary")), "app.acme.email.<U+202E>send")
	assertNoHiddenInnerText(t, oncall, "main")
	// Nothing after the override is turned around: each word of the error
	// stands left of the one after it, as stored.
	xs := eval[[]float64](oncall, "where the words of the error are", wordsLeft(testID("dl-error"), "smtp", "deliaf", "for", "order"))
	require.Len(t, xs, 4)
	for i := 1; i < len(xs); i++ {
		assert.Less(t, xs[i-1], xs[i], "word %d of the error stands left of word %d: %v", i-1, i, xs)
	}
	assert.Equal(t, email.MsgID, oncall.Attr(testID("dl-msgid")+" + button[data-copy]", "data-copy"), "the copy button copies the exact id")
	oncall.Screenshot("deadletter")

	reqID := oncall.requestReplay("resend after the relay came back (e2e "+run+")", "")
	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open(requestPath(reqID))
	approver.WaitUntil("the request page", `document.querySelector('[data-testid="approve-form"]')`)
	items := innerText(approver, testID("replay-items"))
	assert.Contains(t, items, msgIDShown, "the approver reads the message id as it is")
	assert.Contains(t, items, "app.acme.email.<U+202E>send", "and the target subject")
	assert.Contains(t, items, "op-<U+200B>"+run, "and the operation id")
	assert.Contains(t, items, "hidden characters", "each such value is flagged")
	assertNoHiddenInnerText(t, approver, "main")
	approver.Screenshot("approver")
}

// innerText is the rendered text of the first element matching css: what
// a person reads, as the browser lays it out.
func innerText(s *session, css string) string {
	s.t.Helper()
	v := read[*string](s, "read the rendered text of "+css, `(() => { const e = document.querySelector(`+jsString(css)+`); return e ? e.innerText.trim() : null })()`)
	if v == nil {
		s.t.Fatalf("no element %s (%s) at %s", css, s.label, s.Location())
	}
	return *v
}

// assertNoHiddenInnerText checks that the rendered text of css holds no
// direction control, zero-width or other format character (\p{Cf}), nor a
// line or paragraph separator.
func assertNoHiddenInnerText(t *testing.T, s *session, css string) {
	t.Helper()
	found := read[[]string](s, "look for hidden characters in "+css, `(() => {
		const e = document.querySelector(`+jsString(css)+`);
		return [...(e ? e.innerText : "").matchAll(/[\p{Cf}\u2028\u2029]/gu)].map(m => "U+" + m[0].codePointAt(0).toString(16).toUpperCase());
	})()`)
	assert.Empty(t, found, "hidden characters in the rendered text of %s at %s", css, s.Location())
}

// wordsLeft is a JavaScript expression: the left edge, in the page, of the
// first appearance of each word in the text of the element css, in order
// (-1 for a word not there).
func wordsLeft(css string, words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = jsString(w)
	}
	return `(() => {
		const root = document.querySelector(` + jsString(css) + `);
		return [` + strings.Join(quoted, ",") + `].map(word => {
			const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
			for (let n = walk.nextNode(); n; n = walk.nextNode()) {
				const i = n.data.indexOf(word);
				if (i >= 0) {
					const r = document.createRange();
					r.setStart(n, i);
					r.setEnd(n, i + word.length);
					return r.getBoundingClientRect().left;
				}
			}
			return -1;
		});
	})()`
}
