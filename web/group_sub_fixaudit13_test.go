package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixAudit13GroupsSubtitleOffersOnlyWhatTheViewerMay: the groups
// page's subtitle offers acting on a group, snoozing it and giving it an
// owner to people who may triage, not to read-only roles (an auditor).
func TestFixAudit13GroupsSubtitleOffersOnlyWhatTheViewerMay(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	sub := func(role string) string {
		client, _ := b.SignIn(t, role)
		page := b.Do(t, client, http.MethodGet, "/groups", nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		return strings.Join(strings.Fields(page.Doc(t).Find(".page-sub").First().Text()), " ")
	}
	assert.Equal(t, "Dead letters with the same error class, normalised message and top stack frames. "+
		"Act on a whole group, snooze it, or give it an owner.", sub("acme:oncall"))
	assert.Equal(t, "Dead letters with the same error class, normalised message and top stack frames.", sub("*:auditor"))
}
