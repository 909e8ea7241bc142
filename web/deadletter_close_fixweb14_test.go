package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14CloseWithAVersionThatIsNoneIsRefused: a discard sent with a
// version that is no version (not a number, negative, 0, past int32) was
// read as "no version check" and closed whatever changed since. It is the
// form again (422), nothing changed, saying why, at the version the dead
// letter has now, so that confirming it checks what the page shows.
func TestFixWeb14CloseWithAVersionThatIsNoneIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-fw14-v", nil)
	path := fmt.Sprintf("/deadletters/%d/discard", id)

	for _, v := range []string{"abc", "-1", "0", "2147483648", " 1"} {
		resp := b.Do(t, oncall, http.MethodPost, path, url.Values{"reason": {"dup"}, "version": {v}, "confirmed": {"1"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "version %q: %s", v, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="confirm-error"]`), "is not a version", v)
		version, _ := d.Find(`input[name="version"]`).Attr("value")
		assert.Equal(t, "1", version, "%q: the form again at the version it has now", v)
		var status string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
		require.Equal(t, "quarantined", status, "version %q: nothing changed", v)
	}
	resp := b.Do(t, oncall, http.MethodPost, path, url.Values{"reason": {"dup"}, "version": {"1"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
}

// TestFixWeb14CloseOfADeadLetterNamedTwiceClosesIt: a selection naming a
// dead letter twice discards it, once (one audit row), as naming it once
// does, rather than refusing it as "1 of the 2 selected are not open".
func TestFixWeb14CloseOfADeadLetterNamedTwiceClosesIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-fw14-twice", nil)
	other := seed(t, b, "acme", "search.index_update", "doc-fw14-other", nil)

	ids := []string{fmt.Sprint(id), fmt.Sprint(other), fmt.Sprint(id)}
	confirm := b.Do(t, oncall, http.MethodPost, "/deadletters/resolve", url.Values{"id": ids}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, confirm.Status, "the confirmation, asking for a reason")
	assert.Len(t, confirm.Doc(t).Find(`input[name="id"]`).Nodes, 2, "the confirmation names each once")

	resp := b.Do(t, oncall, http.MethodPost, "/deadletters/resolve", url.Values{"id": ids, "reason": {"fixed by hand"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var status string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
	assert.Equal(t, "resolved", status)
	assert.Equal(t, 1, b.AuditCount(t, `action = 'deadletter.resolve' AND object_id = $1 AND actor_subject = $2`, fmt.Sprint(id), me.Subject))
}
