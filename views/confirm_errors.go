package views

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// linkedError is one line of a form's error summary: what it is about
// (Label, words from the page, some of them a producer's: shown as
// untrusted), the message, and the element it links to (Href "" for none).
type linkedError struct{ Label, Message, Href string }

// confirmErrors are the errors of a refused confirm page in the order the
// page shows their fields: each request's own error, rate and typed
// confirmation, then the reason, the reconciliation note and the payload
// edits; any other last, by key. The selection's own error is left out:
// the page's flash says it, above the summary, for every request (each
// group repeats its part).
func confirmErrors(m ReplayConfirmModel) []linkedError {
	var out []linkedError
	seen := map[string]bool{"selection": true}
	if m.Errors["selection"] != "" {
		for _, g := range m.Groups {
			seen["request-"+strconv.FormatInt(g.RequestID, 10)] = true
		}
	}
	add := func(key, label, href string) {
		if msg := m.Errors[key]; msg != "" && !seen[key] {
			out = append(out, linkedError{Label: label, Message: msg, Href: href})
		}
		seen[key] = true
	}
	for _, g := range m.Groups {
		id := strconv.FormatInt(g.RequestID, 10)
		which := " (" + g.Tenant + " · " + Label(g.Class) + ")"
		add("request-"+id, "Request"+which, "#"+confirmGroupID(g.RequestID))
		add("rate-"+id, "Rate"+which, "#"+fieldID("rate-"+id))
		add("confirm-"+id, "Confirmation"+which, "#"+fieldID("confirm-"+id))
	}
	add("reason", "Reason", "#reason")
	add("reconciliation_note", "Reconciliation note", "#reconciliation_note")
	for _, f := range m.Forms {
		key := "payload-" + strconv.FormatInt(f.DeadLetterID, 10)
		add(key, "Payload of "+f.MsgID, "#"+key)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Errors)) {
		add(k, Label(k), "")
	}
	return out
}

// confirmErrorsTitle heads the summary of errs: a refused edit saved
// nothing; any other refusal requested nothing.
func confirmErrorsTitle(errs []linkedError) string {
	for _, e := range errs {
		if !strings.HasPrefix(e.Label, "Payload of ") {
			return "Nothing was requested: correct what is marked below, then request the replay again."
		}
	}
	return "The payload was not saved: correct what is marked below."
}

// confirmGroupID is the id of a request's group on the confirm page.
func confirmGroupID(requestID int64) string {
	return "replay-group-" + strconv.FormatInt(requestID, 10)
}
