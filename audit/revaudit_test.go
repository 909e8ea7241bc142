package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// Review rev-audit. The runtime role (what serve connects as) holds INSERT
// on audit_log, and nothing in the database checks that an inserted row
// continues the chain. One row with a wrong hash (or a seq past the head)
// is accepted; it can never be removed (the triggers refuse DELETE), every
// later Append chains onto it, and Verify stops at the first broken link,
// so from then on no entry after it is ever checked: an edit made later by
// the owner gives the very same verify answer as before it.
func TestRevAuditRuntimeRoleCannotInsertAnEntryOffTheChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("one"), event("two"))

	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_log (seq, at, action, outcome, prev_hash, hash)
        VALUES (3, now(), 'forged.poison', 'ok', sha256('not the head'), sha256('x'))`)
	assert.Error(t, err, "the runtime role inserts a row whose prev_hash and hash are not the chain's")

	appendAll(t, b, event("three"), event("four"), event("five"))
	keys := audit.NewKeySet()
	before, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)

	// The owner now rewrites the newest entry (the one a cover-up needs).
	tamper(t, b, `UPDATE audit_log SET reason = 'nothing to see' WHERE seq = (SELECT max(seq) FROM audit_log)`)
	after, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	assert.NotEqual(t, before.Problem, after.Problem,
		"an edit after a broken link must change what verify reports; it said %q both times", after.Problem)
}

// Review rev-audit. Anyone with the runtime role's credentials may insert
// a checkpoint; the trigger of migration 0025 checks only that it names
// an entry with its hash, not its signature. One at the current head with
// a garbage signature takes that seq (one checkpoint per seq), so Record
// returns it as "already signed" without checking it: the export's trailer
// carries it, and Verify reports the chain BROKEN there for ever and walks
// no further.
func TestRevAuditRecordDoesNotHandOutAForgedCheckpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries := appendAll(t, b, event("one"), event("two"))
	head := entries[len(entries)-1]
	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'export', 'forged', sha256('p'), sha512('s'))`, head.Seq, head.Hash)
	require.NoError(t, err, "precondition: the runtime role records a checkpoint naming the head")

	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	assert.NoError(t, cp.VerifySignature(keys), "the head an export is signed with must be signed by the console's key")

	appendAll(t, b, event("three"))
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	assert.True(t, res.OK(), "an intact chain verifies: %s", res)
}

// Review rev-audit. Entries are appended under the chain lock with the
// database clock, so at never goes backwards along the chain. Append
// nevertheless takes any At from its caller, and the runtime role may
// insert any at: an approval dated a week before it was written verifies,
// and sorts before the incident in every time-filtered search and export.
// Verify checks seq, links and hashes but not that at is non-decreasing.
func TestRevAuditVerifyFlagsAnEntryDatedBeforeItsPredecessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("incident.start"))
	backdated := event("replay.approve")
	backdated.At = time.Now().Add(-7 * 24 * time.Hour)
	// fix-audit-chain: Append refuses the backdated event (and the trigger
	// of migration 0034 a backdated row); the owner, who may disable the
	// trigger, writes it with its correct hash.
	_, err := audit.AppendFunc(b.ctx, b.db.Pool, backdated)
	require.Error(t, err)
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "Append takes no time earlier than the head's: %v", err)
	tamper(t, b, `INSERT INTO audit_log (seq, at, action, outcome, actor_email_verified, prev_hash, hash)
        SELECT 2, at - interval '7 days', 'replay.approve', 'ok', false, hash, hash FROM audit_log WHERE seq = 1`,
		`UPDATE audit_log SET hash = audit_entry_hash(audit_log) WHERE seq = 2`)

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.False(t, res.OK(), "seq 2 is dated a week before seq 1: verify said %s", res)
	assert.Contains(t, res.Problem, "seq 2: dated")
}
