package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPolicyVoidedRequestSaysApprovalNoLongerApplies: a request waits for
// its approver when the replay policy changes; the sweep voids it. Its
// page and the replays page still said "0 of 1" approvals, as if one
// approval would still do. They say the approval no longer applies.
func TestPolicyVoidedRequestSaysApprovalNoLongerApplies(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, oncall := b.SignIn(t, "acme:oncall")
	ctx := context.Background()
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "relay back"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	newer, err := replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)))
	require.NoError(t, err)
	deploy := replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }})
	require.NoError(t, deploy.ActivatePolicy(ctx, "console-7f9c-42"))
	voided, err := deploy.VoidStale(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, voided)

	count := regexp.MustCompile(`\d+ of \d+`)
	page := b.Do(t, client, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	head := textOf(page.Doc(t), `[data-testid="replay-approval-count"]`)
	assert.NotRegexp(t, count, head, "a void request's page counts approvals")
	assert.Contains(t, head, "no longer applies")

	list := b.Do(t, client, "GET", "/replay/requests", nil, nil).Doc(t)
	cell := strings.Join(strings.Fields(row(list, req.ID).Find(`[data-testid="replay-row-approvals"]`).Text()), " ")
	assert.NotRegexp(t, count, cell, "the replays page counts a void request's approvals")
	assert.Contains(t, cell, "no longer applies")
}
