package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevUX33VerifyWhileOneRunsSaysSo: "Verify chain" while another
// verification ran answered a 409, which the audit page shows as "The
// server answered 409 … reload it to try again". The result panel says
// instead that one is running, that nothing was started, and when to look
// again, and keeps the anchor form and keys.
func TestRevUX33VerifyWhileOneRunsSaysSo(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, AuditVerifyResult(AuditVerifyPage{Busy: true, Anchor: AuditVerifyAnchor{Text: "12:ab"}}).Render(context.Background(), &buf))
	d, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	busy := strings.Join(strings.Fields(d.Find(`#verify-result [data-testid="verify-busy"]`).Text()), " ")
	assert.Contains(t, busy, "A verification is already running")
	assert.Contains(t, busy, "nothing was started")
	assert.Zero(t, d.Find(`[data-testid="verify-result"]`).Length(), "no verdict: nothing was checked")
	assert.Equal(t, 1, d.Find(`[data-testid="verify-tools"]`).Length(), "the anchor form and keys stay")

	buf.Reset()
	require.NoError(t, AuditVerifyResult(AuditVerifyPage{}).Render(context.Background(), &buf))
	assert.NotContains(t, buf.String(), "verify-busy")
}
