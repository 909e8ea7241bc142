package web_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestItemVerdictNamesTheClassAsRead: a dead letter already held by a
// request is blocked in a new selection; its row says why beginning with
// the class as people read it ("same operation", as the class chips say),
// not its key "same_operation".
func TestItemVerdictNamesTheClassAsRead(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	mail := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	other := seed(t, b, "acme", "email.send", "mail-2", opHeader("op-2"))
	requestReplay(t, b, oncall, mail)
	d := b.Do(t, oncall, "GET", draftPage(t, b, oncall, mail, other), nil, nil).Doc(t)
	why := textOf(d, `[data-testid="replay-skip-reason"]`)
	require.Contains(t, why, "already holds")
	assert.True(t, strings.HasPrefix(why, "same operation"), "the verdict begins with the class key: %q", why)
}
