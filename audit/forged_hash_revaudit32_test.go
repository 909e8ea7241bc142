package audit_test

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit32ForgedHashIsRefused: the runtime role (the console's, which
// appends) may insert the next row of the chain, with the right seq and
// prev_hash; the chain guard also refuses one whose hash (version 3) is not
// the hash of its tag, seq, content digest and prev_hash, so no row is
// appended that verify reports as edited for its hash. Its content digest
// the guard cannot check without re-hashing the content (measured too dear
// for every append, migration 0034): a row with a false digest and the
// hash of that digest is taken, and verify names it (its hash is not its
// content's).
func TestRevAudit32ForgedHashIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	head := appendAll(t, b, event("one"), event("two"))[1]
	next := func(digest, hash []byte) error {
		_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_log (seq, at, actor_email_verified, tenant, action, outcome,
                prev_hash, hash, hash_version, content_digest, nonce)
            VALUES ($1, $2, false, 'acme', 'forged.entry', 'ok', $3, $4, 3, $5, $6)`,
			head.Seq+1, head.At, head.Hash, hash, digest, make([]byte, 16))
		return err
	}
	digest := sha256.Sum256([]byte("not the digest of the row"))
	for name, hash := range map[string][]byte{
		"MadeUp":      bytes.Repeat([]byte{7}, 32),
		"OtherSeq":    audit.ChainHashOf(head.Seq, digest[:], head.Hash),
		"OtherPrev":   audit.ChainHashOf(head.Seq+1, digest[:], head.PrevHash),
		"OtherDigest": audit.ChainHashOf(head.Seq+1, head.ContentDigest, head.Hash),
	} {
		err := next(digest[:], hash)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "%s: the runtime role appended a row whose hash is not its own", name)
		assert.Equal(t, "23514", pgErr.Code, "%s: %s", name, pgErr.Message)
		assert.Contains(t, pgErr.Message, "hash is not", name)
	}
	requireIntact(t, b, 2)

	require.NoError(t, next(digest[:], audit.ChainHashOf(head.Seq+1, digest[:], head.Hash)),
		"the hash of a false digest: the guard cannot tell the digest is false")
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, head.Seq+1, res.FirstBad)
	assert.Contains(t, res.Problem, "edited row", "verify names it")
}
