package web_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev43FailedStartChangesNothingTheFleetWorksBy: a release with a new
// policy file whose start fails (here its OIDC_ISSUER names nothing that
// answers) leaves the running console's policy active, and the request
// waiting for approval waiting: a start makes its file the active one as
// its last step. Activated first, the console that never served made the
// running one's policy stale and voided the request, and a rollback of
// the release could not take the old version back. The same release
// with the identity provider up starts, and makes its file the active one.
func TestRev43FailedStartChangesNothingTheFleetWorksBy(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	ctx := context.Background()
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "relay back"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	before, err := b.Replays.PolicyStanding(ctx)
	require.NoError(t, err)
	require.False(t, before.Stale())

	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	newer := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(newer, []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nobody := "http://" + l.Addr().String() + "/dex"
	require.NoError(t, l.Close())

	_, err = b.Another(func(c *app.Config) {
		c.Replay.PolicyFile, c.OIDC.Issuer, c.OIDCWait = newer, nobody, time.Second
	})
	require.Error(t, err, "a console whose identity provider does not answer started")
	after, err := b.Replays.PolicyStanding(ctx)
	require.NoError(t, err)
	assert.False(t, after.Stale(), "a start that failed made another policy the active one")
	assert.Equal(t, before.Active.Version, after.Active.Version)
	got, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "a start that failed voided a request waiting for approval")
	assert.Zero(t, b.AuditCount(t, `action = 'replay.policy_activated' AND object_id <> $1`, before.Active.Version),
		"a start that failed audited an activation")

	started, err := b.Another(func(c *app.Config) { c.Replay.PolicyFile = newer })
	require.NoError(t, err)
	t.Cleanup(started.Close)
	after, err = b.Replays.PolicyStanding(ctx)
	require.NoError(t, err)
	assert.True(t, after.Stale(), "the release that started did not make its policy the active one")
	got, err = b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusVoid, got.Status)
}
