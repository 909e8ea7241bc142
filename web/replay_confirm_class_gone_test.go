package web

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// TestConfirmGroupOfAClassNoLongerInThePolicy: a draft of a class the
// policy in force no longer has (here dedupe) was shown with the limits
// of another class (the page took manual's when it knew none of the
// request's classes, where the rules know none and refuse it), a rate
// field and a "Request replay" button. Its group says "class no longer in
// the policy: cannot be requested", asks no rate, and the page offers
// nothing to request; a request of a class it has is shown as before.
func TestConfirmGroupOfAClassNoLongerInThePolicy(t *testing.T) {
	// Parse gives every class of this release its knobs; a table of
	// another release (or none read yet) may lack one.
	table := new(replaypolicy.Table)
	_, has := table.Knobs(replaypolicy.Dedupe)
	require.False(t, has, "the table has no dedupe class")

	gone := replay.SelectionRequest{Request: replay.Request{ID: 7, Tenant: "acme", Class: replaypolicy.Dedupe, ItemCount: 3, Rate: 200}}
	g, requestable := confirmGroup(table, gone, submitForm{}, nil, true)
	assert.False(t, requestable)
	assert.True(t, g.ClassGone)
	assert.Equal(t, "class no longer in the policy: cannot be requested", g.OnSubmit)

	src, err := os.ReadFile("../dev/policy.toml")
	require.NoError(t, err)
	shipped, err := replaypolicy.Parse("policy.toml", src)
	require.NoError(t, err)
	kept := replay.SelectionRequest{Request: replay.Request{ID: 8, Tenant: "acme", Class: replaypolicy.Manual, ItemCount: 1, Rate: 1}}
	k, ok := confirmGroup(shipped, kept, submitForm{}, nil, true)
	assert.True(t, ok, "a manual request the rules would take")
	assert.Equal(t, "10", k.MaxRate)

	var buf bytes.Buffer
	require.NoError(t, views.ReplayConfirm(views.Page{}, views.ReplayConfirmModel{Action: "/replay/batches/b", Groups: []views.ReplayGroup{g}}).Render(context.Background(), &buf))
	d, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	group := d.Find(`[data-testid="replay-group"]`)
	assert.Contains(t, strings.Join(strings.Fields(group.Find(`[data-testid="replay-on-submit"]`).Text()), " "), "class no longer in the policy: cannot be requested")
	assert.Equal(t, "3 selected, none can be requested", group.Find(`[data-testid="replay-group-count"]`).Text(), "its items are not counted as to replay")
	assert.Zero(t, group.Find(`input[name="rate-7"]`).Length(), "a rate is asked for a class the policy no longer has")
	assert.Zero(t, d.Find(`[data-testid="replay-submit"]`).Length())
	assert.Zero(t, d.Find(`textarea[name="reason"]`).Length())
}
