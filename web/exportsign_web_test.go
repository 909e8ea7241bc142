package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// exportSignLog appends entries of acme and of globex, globex's saying
// things an auditor of acme must not learn.
func exportSignLog(t *testing.T, b *testfactory.Console) {
	t.Helper()
	ctx := context.Background()
	for i, tenant := range []string{"acme", "globex", "globex", "acme", "globex"} {
		e := audit.Event{Tenant: tenant, Action: "test.exportsign", Outcome: audit.OutcomeOK, Reason: "acme's reason " + strconv.Itoa(i)}
		if tenant == "globex" {
			e.Action, e.Reason, e.ObjectType, e.ObjectID = "test.secret", "globex-merger-plan", "deal", "globex-deal-7"
		}
		_, err := audit.AppendFunc(ctx, b.Pool, e)
		require.NoError(t, err)
	}
}

// TestExportSignWebCSVIsSigned: the CSV the audit page's export link
// downloads carries the console's signature over its exact bytes, and
// audit.VerifyExportCSV (console audit verify --file) checks it with the
// console's public key; a row edited in it is refused.
func TestExportSignWebCSVIsSigned(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	exportSignLog(t, b)
	auditor, _ := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv?action=test.exportsign", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	records, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
	require.NoError(t, err, "every record as long as the header")
	require.GreaterOrEqual(t, len(records), 4)
	assert.True(t, strings.HasPrefix(records[len(records)-2][0], "# export-signature "), "the export is signed: %s", resp.Body)
	assert.Equal(t, "# chain-head", records[len(records)-1][0])

	keys := audit.NewKeySet(b.Signer.PublicKey())
	res, err := audit.VerifyExportCSV(strings.NewReader(resp.Body), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned, res.String())
	assert.True(t, res.Signed, res.String())
	assert.Equal(t, int64(2), res.Entries, "acme's two entries")

	edited := strings.Replace(resp.Body, "acme's reason 3", "acme's reason 9", 1)
	require.NotEqual(t, resp.Body, edited)
	res, err = audit.VerifyExportCSV(strings.NewReader(edited), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "an edited row verified: %s", res)
}

// TestExportSignWebTenantLearnsNothing: what an export signs (its counts,
// its range, its chain head) is what the file holds anyway: an auditor of
// acme finds nothing of globex's entries in either export, its signature
// record or its headers, and the counts signed are the records it holds.
func TestExportSignWebTenantLearnsNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	exportSignLog(t, b)
	auditor, _ := b.SignIn(t, "acme:auditor")
	keys := audit.NewKeySet(b.Signer.PublicKey())
	secrets := []string{"globex", "merger", "test.secret", "deal"}

	for _, path := range []string{"/audit/export.csv", "/audit/export.jsonl"} {
		resp := b.Do(t, auditor, http.MethodGet, path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		var headers bytes.Buffer
		require.NoError(t, resp.Header.Write(&headers))
		for _, secret := range secrets {
			assert.NotContains(t, resp.Body, secret, "%s", path)
			assert.NotContains(t, headers.String(), secret, "%s", path)
		}
		verify := audit.VerifyExport
		if strings.HasSuffix(path, ".csv") {
			verify = audit.VerifyExportCSV
		}
		res, err := verify(strings.NewReader(resp.Body), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), "%s: %s", path, res)
		require.True(t, res.ExportSigned, "%s: %s", path, res)
		assert.Equal(t, `tenants="acme"`, res.Filter, "%s: the auditor's own scope, nothing else", path)
		if !strings.HasSuffix(path, ".csv") {
			continue
		}
		records, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
		require.NoError(t, err)
		var entries, stubs int
		for _, rec := range records[1 : len(records)-2] {
			if rec[1] == "" {
				stubs++
			} else {
				entries++
			}
		}
		signature := strings.Fields(records[len(records)-2][0])
		assert.Contains(t, signature, "entries="+strconv.Itoa(entries), "the count signed is the entries in the file")
		assert.Contains(t, signature, "left_out="+strconv.Itoa(stubs), "the stubs in the file, no other count")
		assert.Equal(t, int64(entries), res.Entries)
		assert.Equal(t, int64(stubs), res.LeftOut)
	}
}
