package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev41FixRecordedAtTheFormsDefaultCoversItsDeadLetter: the fix form
// on a dead letter's page is filled with now, to the second (its input
// steps by a second). Cut to the minute, a fix recorded "now" from the
// page of a dead letter stored earlier in the same minute was in place
// before it, and did not cover it: the on-call saw "fix recorded" and the
// item still refused, and fixes are never changed.
func TestRev41FixRecordedAtTheFormsDefaultCoversItsDeadLetter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	stored := time.Now().Add(-2 * time.Second)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rev41-fix", Class: "schema_invalid",
		At: stored, Payload: []byte(`{"doc":"rev41"}`)})

	input := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t).Find(`[data-testid="fix-fixed_at"]`).First()
	require.Equal(t, 1, input.Length())
	assert.Equal(t, "1", input.AttrOr("step", ""), "a value to the second passes the browser's step check")
	value := input.AttrOr("value", "")
	at, err := time.ParseInLocation("2006-01-02T15:04:05", value, time.UTC)
	require.NoError(t, err, "the default %q is to the second", value)
	assert.False(t, at.Before(stored.Truncate(time.Second)), "the default %s is now, not before the dead letter (%s)", value, stored)

	resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/fix", id),
		url.Values{"scope": {"item_type"}, "fixed_at": {value}, "ref": {"v9.9.9"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	_, drafts := testfactory.Draft(t, b.Replays, oncallUser.Actor, id)
	items, err := b.Replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Empty(t, items[0].Check, "the fix recorded at the form's default covers the dead letter: %s", items[0].SkipReason)
}

// TestRev41AuditObjectWithoutIdIsNoFilterLink: an audit entry naming an
// object type and no id (every sign-in: "session") showed its type as a
// link to the object filter "session:", which matched nothing ("No
// entries for this object"). The type is shown as text; an entry with an
// id keeps its link.
func TestRev41AuditObjectWithoutIdIsNoFilterLink(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	session, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.object", ObjectType: "session", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	object, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.object", ObjectType: "dead_letter", ObjectID: "83", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	c, _ := b.SignIn(t, "*:auditor")

	list := b.Do(t, c, "GET", "/audit?action=test.object", nil, nil).Doc(t)
	assert.Equal(t, 1, list.Find(`[data-testid="audit-object-filter"]`).Length(), "only the entry with an id links to its object's entries")
	assert.Equal(t, "session", list.Find(`[data-testid="audit-object-type"]`).Text())
	for _, href := range list.Find(`a[href^="/audit?object="]`).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("href", "") }) {
		assert.Positive(t, b.Do(t, c, "GET", href, nil, nil).Doc(t).Find(`[data-testid="audit-row"]`).Length(), "%s finds its object", href)
	}

	event := b.Do(t, c, "GET", "/audit/"+strconv.FormatInt(session.Seq, 10), nil, nil).Doc(t)
	assert.Zero(t, event.Find(`[data-testid="audit-event-object-filter"]`).Length(), "no 'all its entries' for an object without an id")
	event = b.Do(t, c, "GET", "/audit/"+strconv.FormatInt(object.Seq, 10), nil, nil).Doc(t)
	assert.Equal(t, 1, event.Find(`[data-testid="audit-event-object-filter"]`).Length())
}
