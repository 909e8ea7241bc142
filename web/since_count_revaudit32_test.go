package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit32SinceCountOnlyForEveryTenant: the audit page's checkpoint
// line said "N entries since, not yet signed" to every viewer, N counted
// over the whole log: an auditor of acme alone read how much globex did
// since the last checkpoint (the dashboard hides such volume from people
// who cannot read every tenant). The count is shown to auditors of every
// tenant only; the checkpoint itself to both.
func TestRevAudit32SinceCountOnlyForEveryTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.CheckpointInterval, c.CheckpointEvery = 24*time.Hour, 1_000_000 // signs once, at its first tick
	}})
	ctx := context.Background()
	everyone, _ := b.SignIn(t, "*:auditor")
	acme, _ := b.SignIn(t, "acme:auditor")
	checkpointLine := func(client *http.Client) string {
		t.Helper()
		page := b.Do(t, client, http.MethodGet, "/audit", nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		doc := page.Doc(t)
		require.NotEmpty(t, doc.Find(`[data-testid="audit-checkpoint-seq"]`).Text(), "a signed checkpoint is shown")
		return strings.Join(strings.Fields(doc.Find(`[data-testid="audit-checkpoint"]`).Text()), " ")
	}
	// The console's checkpointer may sign on its first tick, after this
	// test's entries: such an attempt leaves none unsigned, and is told by
	// a checkpoint at or above them, and tried again.
	for attempt := 1; ; attempt++ {
		_, err := b.Checkpoints.Record(ctx, audit.ReasonOnDemand)
		require.NoError(t, err)
		var last audit.Entry
		for range 3 {
			last, err = audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "globex", Action: "test.entry", Outcome: audit.OutcomeOK})
			require.NoError(t, err)
		}
		every, some := checkpointLine(everyone), checkpointLine(acme)
		var newest int64
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT max(seq) FROM audit_checkpoints`).Scan(&newest))
		if newest >= last.Seq && attempt < 3 {
			t.Logf("attempt %d: the console signed seq %d, past the entries; again", attempt, newest)
			continue
		}
		require.Less(t, newest, last.Seq, "globex's entries are not signed yet")
		assert.Contains(t, every, "since, not yet signed", "an auditor of every tenant reads how many entries are not signed")
		assert.Contains(t, some, "Last signed checkpoint: seq", "an auditor of acme reads the checkpoint")
		assert.NotContains(t, some, "since", "an auditor of acme reads how many entries of any tenant followed it: %q", some)
		assert.NotContains(t, some, "not signed", some)
		return
	}
}
