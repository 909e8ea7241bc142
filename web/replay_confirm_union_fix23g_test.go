package web

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestConfirmGroupLimitsOfADraftsUnion: a draft of class revalidate whose
// items are same_operation too (an email.send to an accounts subject) is
// held, from its submit on, to the strictest knobs of both
// (replaypolicy.Table.RequestKnobs): the confirm page's rate limit is the
// union's (the draft's Union, as the selection reads it before the
// submit), not its class's alone, so that the page refuses beside the
// field what the submit would refuse (review 23g).
func TestConfirmGroupLimitsOfADraftsUnion(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../dev/policy.toml")
	require.NoError(t, err)
	text := string(src)
	at := strings.Index(text, "[class.same_operation]")
	require.Positive(t, at)
	rest := strings.Replace(text[at:], "default_rate = 50\nmax_rate = 500", "default_rate = 5\nmax_rate = 20", 1)
	table, err := replaypolicy.Parse("slow-email.toml", []byte(text[:at]+rest))
	require.NoError(t, err)
	k, _ := table.Knobs(replaypolicy.Revalidate)
	require.Equal(t, float64(100), k.MaxRate)

	draft := replay.SelectionRequest{Request: replay.Request{ID: 9, Tenant: "acme", Class: replaypolicy.Revalidate, Status: replay.StatusDraft, ItemCount: 1},
		Union: []replaypolicy.Class{replaypolicy.SameOperation, replaypolicy.Revalidate}}
	g, requestable := confirmGroup(table, draft, submitForm{}, nil, true)
	assert.True(t, requestable)
	assert.Equal(t, "20", g.MaxRate, "same_operation's max_rate holds the draft too")
	assert.Equal(t, float64(20), rateLimits(table, replay.Selection{Requests: []replay.SelectionRequest{draft}})[9].MaxRate)

	_, errs := submitForm{Reason: "resend", Rates: map[int64]string{9: "50"}, Limits: rateLimits(table, replay.Selection{Requests: []replay.SelectionRequest{draft}})}.Validate()
	assert.Contains(t, errs["rate-9"], "over this request's limit of 20")
}
