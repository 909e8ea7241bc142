package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/csv"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAuditVerifyChecksAnAnchor: the verify page takes a head kept
// elsewhere (seq:hash) and says whether the chain still holds it
// unchanged; a changed hash is a broken chain, an anchor that is not
// seq:hash a 422 that checks nothing. The page lists the public keys the
// check trusts, as PEM, so an export's signed head can be checked
// outside the console.
func TestAuditVerifyChecksAnAnchor(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	e, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.anchor", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	c, _ := b.SignIn(t, "*:auditor")
	verify := func(anchor string, hdr map[string]string) testfactory.Response {
		return b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{"anchor": {anchor}}, hdr)
	}
	anchor := fmt.Sprintf("%d:%s", e.Seq, hex.EncodeToString(e.Hash))

	t.Run("Matches", func(t *testing.T) {
		resp := verify(anchor, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Equal(t, "true", d.Find(`[data-testid="verify-result"]`).AttrOr("data-ok", ""))
		got := d.Find(`[data-testid="verify-anchor-verdict"]`)
		assert.Equal(t, "true", got.AttrOr("data-matched", ""))
		assert.Contains(t, strings.Join(strings.Fields(got.Text()), " "), fmt.Sprintf("seq %d is in the chain unchanged", e.Seq))
		assert.Equal(t, anchor, d.Find(`input[name="anchor"]`).AttrOr("value", ""), "the form keeps it")
		assert.Equal(t, 1, b.AuditCount(t, "action = 'audit.verify' AND outcome = 'ok' AND after->>'anchor' = $1", anchor))
	})
	t.Run("Changed", func(t *testing.T) {
		other := fmt.Sprintf("%d:%s", e.Seq, strings.Repeat("ab", 32))
		resp := verify(other, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Equal(t, "false", d.Find(`[data-testid="verify-result"]`).AttrOr("data-ok", ""))
		assert.Contains(t, d.Find(`[data-testid="verify-problem"]`).Text(), fmt.Sprintf("anchor at seq %d", e.Seq))
		assert.Equal(t, "false", d.Find(`[data-testid="verify-anchor-verdict"]`).AttrOr("data-matched", ""))
		assert.Equal(t, 0, d.Find(`nav.crumbs`).Length(), "htmx gets the result only")
	})
	t.Run("NotAnAnchor", func(t *testing.T) {
		before := b.AuditCount(t, "action = 'audit.verify'")
		resp := verify("83 9f86d0", nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.NotEmpty(t, d.Find(`[data-testid="field-error-anchor"]`).Text())
		assert.Equal(t, 0, d.Find(`[data-testid="verify-result"]`).Length(), "nothing was checked")
		assert.Equal(t, before, b.AuditCount(t, "action = 'audit.verify'"))
	})
	t.Run("PublicKeys", func(t *testing.T) {
		d := verify("", nil).Doc(t)
		keys := d.Find(`[data-testid="verify-key"]`)
		require.Equal(t, 1, keys.Length())
		assert.Equal(t, b.Signer.KeyID(), keys.AttrOr("data-key-id", ""))
		block, _ := pem.Decode([]byte(keys.Find(`[data-testid="verify-key-pem"]`).Text()))
		require.NotNil(t, block, "the key is PEM")
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		require.NoError(t, err)
		assert.Equal(t, b.Signer.PublicKey(), pub.(ed25519.PublicKey), "the console's signing key")
	})
}

// TestAuditExportCSVReadsStrictly: every record of the CSV export is as
// long as its header, the chain-head trailer too, so a reader that wants
// that reads the file; the head is also in the Audit-Chain-Head header.
func TestAuditExportCSVReadsStrictly(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "*:auditor")
	resp := b.Do(t, c, http.MethodGet, "/audit/export.csv", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	records, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
	require.NoError(t, err, "every record as long as the header")
	trailer := records[len(records)-1]
	require.Equal(t, "# chain-head", trailer[0])
	// Signed for the export, or by the console's checkpointer when its
	// first tick signed the same head just before (Record hands out a
	// checkpoint that verifies at the head as it is).
	assert.Contains(t, []string{audit.ReasonExport, audit.ReasonInterval, audit.ReasonCount}, trailer[4], "signed at the head")
	assert.NotEmpty(t, trailer[8], "with a signature")
	assert.Equal(t, trailer[1]+":"+trailer[2], resp.Header.Get("Audit-Chain-Head"))
}
