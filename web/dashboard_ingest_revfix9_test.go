package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFix9IngestLineShowsOtherTenantsBacklog: commit 2ba504e hides the
// DLQ stream's size and oldest message ("DLQ stream" under Storage) from a
// reader of some tenants, because one stream holds every tenant's dead
// letters and those figures are other tenants' volume. The dashboard's
// Ingest line, shown to the same reader, still says how many dead letters
// of every tenant wait in that stream and when the oldest of them arrived
// ("3 waiting to be stored; the oldest arrived …"): here three dead letters
// of tenant "stuck" (which PostgreSQL refuses, so they stay in the stream)
// are counted and dated on the dashboard of an acme-only reader. The
// same figures the fix hid, by another line.
func TestRevFix9IngestLineShowsOtherTenantsBacklog(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.IngestTuning = func(ic *dlq.IngestConfig) { ic.HealthEvery, ic.RetryUnstorable = 100*time.Millisecond, time.Minute }
	}})
	ctx := context.Background()
	_, err := b.DB.OwnerPool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refuses_tenant CHECK (tenant <> 'stuck')`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.DB.OwnerPool.Exec(context.Background(), `ALTER TABLE dead_letters DROP CONSTRAINT test_refuses_tenant`)
	})
	for range 3 {
		_, err := b.JetStream.Publish(ctx, "dlq.stuck.orders.refund", []byte(`{"secret":"volume"}`))
		require.NoError(t, err)
	}
	everyTenant, _ := b.SignIn(t, "*:oncall")
	wait.Until(t, "the dashboard of a reader of every tenant to count the three unstored dead letters", 30*time.Second, func() bool {
		d := b.Do(t, everyTenant, "GET", "/", nil, nil).Doc(t)
		return strings.Contains(text(byID(d, "ingest-lag")), "3 waiting to be stored")
	})
	acme, _ := b.SignIn(t, "acme:oncall")
	d := b.Do(t, acme, "GET", "/", nil, nil).Doc(t)
	require.NotZero(t, byID(d, "ingest-lag").Length(), "the Ingest line is on an acme reader's dashboard")
	line := text(byID(d, "ingest-lag"))
	assert.NotContains(t, line, "3 waiting to be stored",
		"an acme-only reader is shown how many of tenant stuck's dead letters wait in the one stream: %q", line)
	assert.Zero(t, byID(d, "ingest-lag-age").Length(),
		"an acme-only reader is shown when the oldest of every tenant's unstored dead letters arrived: %q", line)
}
