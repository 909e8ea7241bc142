package views_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev43AuditActorFilterSaysItIsExact: the actor filter matches a
// whole email or subject (audit.Filter.Actor), and the page did not say
// so: /audit?actor=oncall read "No audit events match", as if oncall had
// done nothing. The field's placeholder says exact, and the empty page
// names the actor and says that the match is of a whole one; with other
// filters, that the events by that actor do not match them.
func TestRev43AuditActorFilterSaysItIsExact(t *testing.T) {
	t.Parallel()
	m := auditModel()
	m.Rows, m.NextURL, m.PrevURL = nil, "", ""
	m.Filter = views.AuditFilter{Actor: "oncall"}
	doc, _ := render(t, views.AuditList(page("Audit log", "audit"), m))
	assert.Equal(t, "exact email or subject", doc.Find(`input[name="actor"]`).AttrOr("placeholder", ""))
	empty := byTestID(doc, "empty-state")
	assert.Equal(t, "No events by exactly “oncall”", squash(empty.Find(".empty__title").Text()))
	assert.Equal(t, "The actor filter matches a whole verified email or subject, not part of one.", squash(empty.Find(".empty__hint").Text()))

	m.Filter = views.AuditFilter{Actor: "oncall", Tenant: "acme", From: "now-1h"}
	doc, _ = render(t, views.AuditList(page("Audit log", "audit"), m))
	empty = byTestID(doc, "empty-state")
	assert.Equal(t, "No events by exactly “oncall” match the other filters", squash(empty.Find(".empty__title").Text()))
	assert.Contains(t, squash(empty.Find(".empty__hint").Text()), "not part of one. Widen the time range, or clear the filter.")

	m.Filter = views.AuditFilter{Tenant: "acme"}
	doc, _ = render(t, views.AuditList(page("Audit log", "audit"), m))
	assert.Equal(t, "No audit events match", squash(byTestID(doc, "empty-state").Find(".empty__title").Text()), "no actor: as before")
}
