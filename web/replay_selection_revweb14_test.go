package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb14ReplaySelectionNamingADeadLetterTwiceIsNoServerError: a
// selection that names one dead letter twice (id=X&id=X: a hand-made or
// scripted form, two checkboxes of one row) answers 500 "Something went
// wrong" on POST /replay, while the discard and resolve of the same
// selection answer the form's 422. The replay should take the dead letter
// once (a draft of it) or refuse the selection as invalid, never fail.
func TestRevWeb14ReplaySelectionNamingADeadLetterTwiceIsNoServerError(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-1", nil)

	form := url.Values{"id": {fmt.Sprint(id), fmt.Sprint(id)}}
	resp := b.Do(t, oncall, "POST", "/replay", form, nil)
	require.NotEqual(t, http.StatusInternalServerError, resp.Status, "a selection naming dead letter %d twice is a server error", id)
	require.Contains(t, []int{http.StatusSeeOther, http.StatusUnprocessableEntity}, resp.Status, resp.Body)
}
