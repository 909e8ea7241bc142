package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14ExportRowNamesItsFilterAsTheTrailerDoes: an export's audit
// row names its filter as the export's signed trailer does (name="value",
// a space between), not percent-encoded ("actor=a%40b.example"), and
// leaves out the filters sent empty.
func TestFixWeb14ExportRowNamesItsFilterAsTheTrailerDoes(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, me := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv?actor=a%40b.example&action=&outcome=ok&tenant=acme&object=dead_letter+7", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	var reason string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT reason FROM audit_log WHERE action = 'audit.export' AND actor_subject = $1`,
		me.Subject).Scan(&reason))
	assert.Equal(t, `filter: actor="a@b.example" tenant="acme" object="dead_letter 7" outcome="ok"`, reason)
}
