package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// TestRevOncall32ReadLeftOutKeepsWhatIsStillRead: a kept left-out list
// shown to a person who now reads acme only loses globex's group (counted
// out), the replay request of globex's dead letters (counted out), and
// globex's dead letter named in a group by status (its count stays); an
// item kept without its tenant goes unless it is of its group's tenant.
func TestRevOncall32ReadLeftOutKeepsWhatIsStillRead(t *testing.T) {
	t.Parallel()
	item := func(tenant, msgID string) views.ConfirmItem { return views.ConfirmItem{Tenant: tenant, MsgID: msgID} }
	kept := views.LeftOut{N: 9, Of: 12, Chosen: "matching", Verb: "discard", Groups: []views.LeftOutGroup{
		{N: 2, RequestID: 4, Items: []views.ConfirmItem{item("acme", "a-held")}},
		{N: 1, RequestID: 5, Items: []views.ConfirmItem{item("globex", "g-held")}},
		{N: 2, Tenant: "globex", Items: []views.ConfirmItem{item("globex", "g-1"), item("globex", "g-2")}},
		{N: 1, Tenant: "acme", Items: []views.ConfirmItem{item("", "a-old")}},
		{N: 3, Status: "resolved", Items: []views.ConfirmItem{item("acme", "a-done"), item("globex", "g-done"), item("", "old-done")}},
	}}
	got := readLeftOut(kept, authz.Scope{Tenants: []string{"acme"}})
	want := &views.LeftOut{N: 6, Of: 9, Chosen: "matching", Verb: "discard", Groups: []views.LeftOutGroup{
		{N: 2, RequestID: 4, Items: []views.ConfirmItem{item("acme", "a-held")}},
		{N: 1, Tenant: "acme", Items: []views.ConfirmItem{item("", "a-old")}},
		{N: 3, Status: "resolved", Items: []views.ConfirmItem{item("acme", "a-done")}},
	}}
	assert.Equal(t, want, got)
	assert.Equal(t, &kept, readLeftOut(kept, authz.Scope{All: true}), "a reader of every tenant reads it all")
	assert.Nil(t, readLeftOut(views.LeftOut{N: 2, Of: 4, Groups: kept.Groups[2:3]}, authz.Scope{Tenants: []string{"acme"}}),
		"nothing to say when only globex's was left out")
}
