package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUX33ClearOnAGroupPageKeepsTheGroup: on an error group's page
// (the list filtered by the group), the filter's Clear led to the whole
// list, leaving the group the person was triaging; the group has its own
// Remove for that. Clear empties the other filters and stays on the
// group; on the plain list it leads to the list, as before.
func TestRevUX33ClearOnAGroupPageKeepsTheGroup(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "rr33-clear", Error: "gateway timed out",
		Class: string(dlq.ClassPermanent), Payload: []byte(`{}`)})
	fp := dlq.Fingerprint(dlq.ClassPermanent, "gateway timed out", "")

	resp := b.Do(t, oncall, "GET", "/deadletters?group="+fp+"&type=email.send", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	d := resp.Doc(t)
	assert.Equal(t, "/deadletters?group="+fp, d.Find(`[data-testid="filter-clear"]`).AttrOr("href", ""), "Clear stays on the group")
	assert.Equal(t, "/deadletters?type=email.send", d.Find(`[data-testid="group-filter-clear"]`).AttrOr("href", ""), "Remove leaves it")

	plain := b.Do(t, oncall, "GET", "/deadletters?type=email.send", nil, nil).Doc(t)
	assert.Equal(t, "/deadletters", plain.Find(`[data-testid="filter-clear"]`).AttrOr("href", ""))
}
