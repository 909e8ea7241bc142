package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevOps26AnAnchorPastTheEndOfTheLogBreaksIt: Verify's own comment says
// a log whose checkpoints were removed as well is caught only by an
// anchor. Someone with the owner's powers cuts the last entries off the
// log and every checkpoint with them: the links that remain are sound, so
// only the anchor kept elsewhere (a head an earlier verify printed) can
// say that entries are gone. An anchor whose seq the log no longer
// reaches must break the chain, or `console audit verify --anchor` exits
// 0 on a log cut short.
func TestRevOps26AnAnchorPastTheEndOfTheLogBreaksIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	entries := appendAll(t, b, event("one"), event("two"), event("three"), event("four"), event("five"))
	cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, entries[4].Seq, cp.Seq)
	anchor := audit.Anchor{Seq: cp.Seq, Hash: cp.Hash}

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys, Anchors: []audit.Anchor{anchor}})
	require.NoError(t, err)
	require.True(t, res.OK(), "precondition: the intact log verifies with its anchor: %s", res.String())
	require.Equal(t, 1, res.Anchors)

	// The last two entries go, and every checkpoint with them.
	tamper(t, b, `DELETE FROM audit_log WHERE seq > 3`)
	tamperCheckpoints(t, b, `DELETE FROM audit_checkpoints`)

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys, Anchors: []audit.Anchor{anchor}})
	require.NoError(t, err)
	assert.False(t, res.OK(), "a log cut short below its anchor verified: %s", res.String())
	assert.Equal(t, cp.Seq, res.FirstBad)
	assert.Contains(t, res.Problem, "anchor at seq 5: the log ends at seq 3")
	assert.Zero(t, res.Anchors, "no anchor matched")
	require.ErrorIs(t, res.Err(), audit.ErrChainBroken)
}
