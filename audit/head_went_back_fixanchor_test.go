package audit_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// headSeqs gathers the collector's gauges of the head's seq and of the
// last signed checkpoint's; a gauge not exported is absent from the map.
func headSeqs(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if n := mf.GetName(); n == "quarantine_audit_head_seq" || n == "quarantine_audit_checkpoint_seq" {
			got[n] = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return got
}

// logLine returns the first line of out whose message is msg ("" when
// none is).
func logLine(out *logs.Buffer, msg string) string {
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, fmt.Sprintf("msg=%q", msg)) {
			return l
		}
	}
	return ""
}

// checkpointer is a Checkpointer signing with signer whose log is out, at
// Info and above, as serve logs; it records on demand only unless Run.
func checkpointer(b bundle, signer *audit.Signer, out *logs.Buffer) *audit.Checkpointer {
	return audit.NewCheckpointer(b.db.Pool, signer, audit.CheckpointConfig{Every: 1000, Interval: time.Hour, Poll: 10 * time.Millisecond},
		slog.New(slog.NewTextHandler(out, nil)))
}

// TestFixAnchorRecordedCheckpointIsAnAnchorOutsideTheDatabase (review
// fx-auditanchor): a checkpoint the console records is logged at Info
// with its seq, hash and key id (and as the seq:hash `console audit verify
// --anchor` takes), and quarantine_audit_checkpoint_seq reads its seq, as
// quarantine_audit_head_seq reads the head's: the logs shipped off the host
// and Prometheus keep the signed head outside the database. Before, the
// line was at Debug without the hash and no series carried a seq.
func TestFixAnchorRecordedCheckpointIsAnAnchorOutsideTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.NewCheckpointCollector(b.db.Pool, audit.NewKeySet(signer.PublicKey()), slog.New(slog.DiscardHandler)))
	var out logs.Buffer
	cp := checkpointer(b, signer, &out)

	assert.Equal(t, map[string]float64{"quarantine_audit_head_seq": 0}, headSeqs(t, reg),
		"an empty log: head 0, no signed checkpoint yet")
	appendAll(t, b, event("one"), event("two"), event("three"))
	assert.Equal(t, map[string]float64{"quarantine_audit_head_seq": 3}, headSeqs(t, reg), "nothing signed yet")

	signed, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.EqualValues(t, 3, signed.Seq)
	assert.Equal(t, map[string]float64{"quarantine_audit_head_seq": 3, "quarantine_audit_checkpoint_seq": 3}, headSeqs(t, reg),
		"the recorded checkpoint's seq is the gauge's")

	line := logLine(&out, "audit checkpoint recorded")
	require.NotEmpty(t, line, "the recorded checkpoint is logged at Info (serve's level); logged:\n%s", out.String())
	assert.Contains(t, line, "level=INFO")
	assert.Contains(t, line, " seq=3 ")
	assert.Contains(t, line, " hash="+signed.HashHex()+" ")
	assert.Contains(t, line, " key_id="+signer.KeyID()+" ")
	assert.Contains(t, line, fmt.Sprintf(" anchor=%d:%s", signed.Seq, signed.HashHex()))

	again, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, signed.Seq, again.Seq, "the head was signed already")
	assert.Equal(t, 1, strings.Count(out.String(), "audit checkpoint"), "a head is logged once: %s", out.String())

	appendAll(t, b, event("four"), event("five"))
	assert.Equal(t, map[string]float64{"quarantine_audit_head_seq": 5, "quarantine_audit_checkpoint_seq": 3}, headSeqs(t, reg))
}

// TestFixAnchorScheduleLogsACheckpointSignedElsewhere: a checkpoint this
// console did not sign (another replica's, `console audit checkpoint`, or
// one a purge signed in its transaction, which Record cannot log before it
// commits) is logged by the next tick of the schedule, at Info with its
// seq and hash, so every signed head reaches the logs.
func TestFixAnchorScheduleLogsACheckpointSignedElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	appendAll(t, b, event("one"), event("two"))
	elsewhere, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonOnDemand) // another replica, or the CLI
	require.NoError(t, err)

	var out logs.Buffer
	cp := checkpointer(b, signer, &out)
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { defer close(done); cp.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	wait.Until(t, "the schedule to log the checkpoint signed elsewhere", 10*time.Second, func() bool {
		return logLine(&out, "audit checkpoint seen") != ""
	})
	line := logLine(&out, "audit checkpoint seen")
	assert.Contains(t, line, "level=INFO")
	assert.Contains(t, line, fmt.Sprintf(" seq=%d hash=%s ", elsewhere.Seq, elsewhere.HashHex()))
	assert.Empty(t, logLine(&out, "audit checkpoint recorded"), "the head was signed: nothing to sign")
}

// TestFixAnchorRollbackToAnEarlierSignedHead (review fx-auditanchor,
// reproduced): whoever holds the owner's rights deletes, with the
// triggers off, the newest entries and the newest checkpoint, back to an
// earlier signed head. What is left is a sound chain whose checkpoints
// all verify, so `console audit verify` with the right key says ok, and
// the console goes on signing from there, new entries taking the removed
// seqs. What shows the cut is a head kept outside the database: the
// anchor the console logged for the removed checkpoint breaks the chain
// (`--anchor seq:hash`), the gauges read lower than Prometheus saw them
// (AuditHeadWentBack), and the console's schedule, having seen the later
// head, logs at Error that it went back.
func TestFixAnchorRollbackToAnEarlierSignedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.NewCheckpointCollector(b.db.Pool, keys, slog.New(slog.DiscardHandler)))
	var out logs.Buffer
	cp := checkpointer(b, signer, &out)

	appendAll(t, b, event("one"), event("two"), event("three"))
	earlier, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	appendAll(t, b, event("four"), event("five"))
	later, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.EqualValues(t, 5, later.Seq)
	require.Equal(t, map[string]float64{"quarantine_audit_head_seq": 5, "quarantine_audit_checkpoint_seq": 5}, headSeqs(t, reg))
	// The anchor as the console logged it, the way the runbook feeds it
	// to `console audit verify --anchor`.
	logged := regexp.MustCompile(`msg="audit checkpoint recorded" seq=5 .* anchor=(5:[0-9a-f]{64})`).FindStringSubmatch(out.String())
	require.NotNil(t, logged, "the later checkpoint's anchor is in the log:\n%s", out.String())
	anchor, err := audit.ParseAnchor(logged[1])
	require.NoError(t, err)
	require.Equal(t, audit.Anchor{Seq: later.Seq, Hash: later.Hash}, anchor)

	// Back to the earlier signed head: its tail and the later checkpoint go.
	tamper(t, b, `DELETE FROM audit_log WHERE seq > 3`)
	tamperCheckpoints(t, b, `DELETE FROM audit_checkpoints WHERE seq > 3`)

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.True(t, res.OK(), "the finding: without an anchor the cut log verifies: %s", res.String())
	assert.Empty(t, res.Warnings)
	assert.Equal(t, map[string]float64{"quarantine_audit_head_seq": 3, "quarantine_audit_checkpoint_seq": 3}, headSeqs(t, reg),
		"both gauges read below what Prometheus saw (5): AuditHeadWentBack")

	// The console's schedule finds the newest checkpoint that verifies
	// older than the one it saw (and the head signed: nothing is due).
	const wentBack = "audit signed head went back: the newest checkpoint that verifies is older than one this console saw before; the log was cut back (see docs/runbook.md, AuditHeadWentBack)"
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { defer close(done); cp.Run(ctx) }()
	wait.Until(t, "the schedule to log that the signed head went back", 10*time.Second, func() bool {
		return logLine(&out, wentBack) != ""
	})
	stop()
	<-done
	went := logLine(&out, wentBack)
	assert.Contains(t, went, "level=ERROR")
	assert.Contains(t, went, fmt.Sprintf(" seq=3 hash=%s seen_seq=5 seen_hash=%s ", earlier.HashHex(), later.HashHex()))
	assert.Equal(t, 1, strings.Count(out.String(), "audit signed head went back"), "once: %s", out.String())

	// It goes on signing from there: new entries at seqs 4 and 5.
	appendAll(t, b, event("four again"), event("five again"))
	resigned, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, later.Seq, resigned.Seq)
	require.NotEqual(t, later.HashHex(), resigned.HashHex())
	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.True(t, res.OK(), "the regrown log verifies without an anchor too: %s", res.String())

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys, Anchors: []audit.Anchor{anchor}})
	require.NoError(t, err)
	assert.False(t, res.OK(), "the logged anchor of the removed checkpoint verified: %s", res.String())
	require.ErrorIs(t, res.Err(), audit.ErrChainBroken)
	assert.Equal(t, later.Seq, res.FirstBad)
	assert.Contains(t, res.Problem, fmt.Sprintf("anchor at seq 5: the entry's hash is %s, not %s", resigned.HashHex(), later.HashHex()))
	assert.Zero(t, res.Anchors)
}
