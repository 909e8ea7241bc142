package replay_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestFixOps12ReplayNeverTargetsTheConsolesDeadLetterSubjects: with an
// allowlist as wide as *.{tenant}.>, a producer's Dlq-Original-Subject
// dlq.acme.x aimed a replay at the console's own DLQ stream: stored
// there, reported replayed, and back as a new dead letter. The console's
// dead-letter prefix is refused as system subjects are, at the draft (the
// item left out with the reason) and by the allowlist every stage and
// the worker judge with; the prefix the console ingests (Reserving), the
// default one when none is set.
func TestFixOps12ReplayNeverTargetsTheConsolesDeadLetterSubjects(t *testing.T) {
	t.Parallel()
	allow, err := replay.ParseSubjectAllowlist("*.{tenant}.>")
	require.NoError(t, err)
	t.Run("Allowlist", func(t *testing.T) {
		t.Parallel()
		own := allow.Reserving("dlqstaging")
		assert.ErrorContains(t, own.For("acme", "dlqstaging.acme.refund"), "DLQ_SUBJECT_PREFIX")
		assert.NoError(t, own.For("acme", "dlq.acme.refund"), "another prefix than the console's is an ordinary subject")
		assert.NoError(t, own.For("acme", "app.acme.refund"))
		assert.ErrorContains(t, (*replay.SubjectAllowlist)(nil).Reserving("dlq").Check("dlq.acme.x"), "dead-letter subject")
	})
	t.Run("Draft", func(t *testing.T) {
		t.Parallel()
		b := setupReplay(t)
		b.replays = replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: allow})
		ok := b.seedItem(t, "search.index_update", "m-ok", nil, "{}")
		loop := b.seedItem(t, "search.index_update", "m-loop", nats.Header{dlq.HeaderOriginalSubject: {"dlq.acme.search.index_update"}}, "{}")
		_, reqs := b.draft(t, oncall, ok, loop)
		reasons := skipReasonsOf(t, b.replays, reqs)
		assert.Empty(t, reasons[ok])
		assert.Contains(t, reasons[loop], "dead-letter subject")
	})
}
