package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestFixLeft13ReplayListSaysWhatExpires: the replays page names what of a
// request runs out (here a draft's "draft expires", not "Expires"), with
// the values the replay package gives (replay.Lapse as views names them).
func TestFixLeft13ReplayListSaysWhatExpires(t *testing.T) {
	t.Parallel()
	for lapse, shown := range map[replay.Lapse]string{
		replay.LapseDraft: views.LapseDraft, replay.LapseApproval: views.LapseApproval, replay.LapseStart: views.LapseStart,
	} {
		assert.Equal(t, string(lapse), shown)
	}
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, u := c.SignIn(t, "acme:oncall")
	_, drafts := testfactory.Draft(t, c.Replays, u.Actor, seed(t, c, "acme", "search.index_update", "lapse-web", nil))
	d := c.Do(t, client, "GET", views.PathReplays+"?status=draft", nil, nil).Doc(t)
	cell := d.Find(fmt.Sprintf(`[data-testid="replay-row"][data-id="%d"] [data-testid="replay-row-expires"]`, drafts[0].ID))
	require.Equal(t, 1, cell.Length())
	assert.Equal(t, "draft expires", strings.TrimSpace(cell.Find(`[data-testid="replay-row-lapse"]`).Text()))
	assert.Zero(t, cell.Find(`[data-testid="badge"]`).Length(), "not expired")
	assert.Contains(t, d.Find(`[data-testid="replays-table"] thead`).Text(), "Time limit")
}
