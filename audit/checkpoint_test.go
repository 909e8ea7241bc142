package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

func newSigner(t *testing.T) *audit.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return audit.NewSigner(priv)
}

// TestAuditCheckpointsSigned records checkpoints on schedule and on demand
// and checks what they sign, that verify checks every signature with the
// keys it is given (and only those), and that exports end at a signed head.
func TestAuditCheckpointsSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	cp := audit.NewCheckpointer(b.db.Pool, signer, audit.CheckpointConfig{Every: 5, Interval: time.Hour, Poll: 10 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))

	empty, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	assert.Zero(t, empty.Seq, "an empty log has no head to sign")
	assert.False(t, empty.Signed())

	// On schedule: the first entries are signed at once (no checkpoint yet),
	// then again once Every more entries follow.
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { cp.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	appendAll(t, b, event("one"))
	waitForCheckpoint(t, b, 1)
	for range 5 {
		appendAll(t, b, event("more"))
	}
	last := waitForCheckpoint(t, b, 6)
	assert.Equal(t, audit.ReasonCount, last.Reason)
	stop()
	<-done

	// On demand: the head now; asked again with no new entry, the same one.
	appendAll(t, b, event("seven"))
	now, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	assert.Equal(t, int64(7), now.Seq)
	assert.Equal(t, signer.KeyID(), now.KeyID)
	again, err := cp.Record(b.ctx, "purge")
	require.NoError(t, err)
	assert.Equal(t, now, again, "a head is signed once")
	_, err = cp.Record(b.ctx, strings.Repeat("r", 65))
	require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))

	latest, ok, err := audit.LatestCheckpoint(b.ctx, b.db.Pool)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, now, latest)
	var headHash []byte
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT hash FROM audit_log WHERE seq = 7`).Scan(&headHash))
	assert.Equal(t, headHash, latest.Hash)
	require.NoError(t, latest.VerifySignature(keys))

	// Verify checks every signature with the given keys.
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.GreaterOrEqual(t, res.Checkpoints, 3)
	assert.Equal(t, int64(7), res.LastCheckpoint.Seq)
	assert.Contains(t, res.String(), "signed checkpoints verify, the last at seq 7")

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.False(t, res.OK(), "without a key the signatures are not checked, so the log does not verify")
	assert.False(t, res.Broken(), "a signature not checked is no problem of the chain: %s", res)
	assert.Contains(t, res.Unchecked, "no public key was given")
	assert.ErrorIs(t, res.Err(), audit.ErrNotChecked)

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: audit.NewKeySet(newSigner(t).PublicKey())})
	require.NoError(t, err)
	assert.False(t, res.OK())
	assert.Contains(t, res.Problem, "which is not one of the public keys given")

	// A checkpoint signed by someone else's key that claims our key id (the
	// table's public_key column is never trusted) fails its signature.
	_, forger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	forged := latest
	forged.Signature = ed25519.Sign(forger, []byte("a checkpoint of the forger's choosing"))
	assert.ErrorContains(t, forged.VerifySignature(keys), "signature does not verify")

	// Exports end at a signed head: a new entry is signed for the export.
	appendAll(t, b, event("eight"))
	head, err := cp.Record(b.ctx, audit.ReasonExport)
	require.NoError(t, err)
	require.Equal(t, int64(8), head.Seq)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{}, head, &out))
	records, err := csv.NewReader(&out).ReadAll() // the trailer as long as the header
	require.NoError(t, err)
	trailer := records[len(records)-1]
	require.Len(t, trailer, len(records[0]), "# chain-head,seq,hash,signed at,reason,key id,public key,signature, then empty cells")
	assert.Equal(t, "filter:", trailer[8], "an export of every entry")
	assert.Equal(t, make([]string, len(trailer)-9), trailer[9:])
	assert.Equal(t, []string{"# chain-head", "8", head.HashHex(), head.At.Format("2006-01-02T15:04:05.000000Z07:00"), "export", signer.KeyID()}, trailer[:6])
	assertSignedHead(t, signer.PublicKey(), trailer[1], trailer[2], trailer[3], trailer[4], trailer[5], trailer[6], trailer[7])

	out.Reset()
	require.NoError(t, audit.ExportJSONL(b.ctx, b.db.Pool, audit.Filter{}, head, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var tr struct {
		ChainHead map[string]any `json:"chain_head"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &tr))
	assert.Equal(t, float64(8), tr.ChainHead["seq"])
	assert.Equal(t, head.HashHex(), tr.ChainHead["hash"])
	assert.Equal(t, hex.EncodeToString(head.Signature), tr.ChainHead["signature"])
	assert.Equal(t, signer.KeyID(), tr.ChainHead["key_id"])
}

// assertSignedHead re-checks an exported signed head with nothing but the
// public key, the way an outside party would: by rebuilding the checkpoint.
func assertSignedHead(t *testing.T, pub ed25519.PublicKey, seq, hash, at, reason, keyID, pubHex, sigHex string) {
	t.Helper()
	var cp audit.Checkpoint
	var err error
	cp.Seq, err = strconv.ParseInt(seq, 10, 64)
	require.NoError(t, err)
	cp.Hash, err = hex.DecodeString(hash)
	require.NoError(t, err)
	cp.At, err = time.Parse(time.RFC3339Nano, at)
	require.NoError(t, err)
	cp.Reason, cp.KeyID = reason, keyID
	cp.Signature, err = hex.DecodeString(sigHex)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(pub), pubHex)
	require.NoError(t, cp.VerifySignature(audit.NewKeySet(pub)))
}

// TestAuditVerifyDetectsRebuiltLog plays an attacker with the owner's
// powers: they cut the log after seq 5 and write a new tail, correctly
// chained with fresh hashes. The chain alone cannot tell; the signed
// checkpoint at seq 8 (and an anchor kept elsewhere) can.
func TestAuditVerifyDetectsRebuiltLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	for range 8 {
		appendAll(t, b, event("original"))
	}
	cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, int64(8), cp.Seq)
	anchor := audit.Anchor{Seq: 8, Hash: cp.Hash}
	appendAll(t, b, event("original"), event("original"))
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys, Anchors: []audit.Anchor{anchor}})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.Equal(t, 1, res.Anchors)

	// Truncate the tail and re-chain it: Append itself computes the fresh
	// hashes from the (genuine) seq 5.
	tamper(t, b, `DELETE FROM audit_log WHERE seq > 5`)
	for range 5 {
		appendAll(t, b, event("forged"))
	}
	var rows int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_log`).Scan(&rows))
	assert.Equal(t, 10, rows, "the rebuilt log is as long as the original")

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.False(t, res.OK(), "the signed checkpoint catches the rebuilt tail")
	assert.Equal(t, int64(8), res.FirstBad)
	assert.Contains(t, res.Problem, "checkpoint at seq 8: the signed hash")
	assert.Equal(t, int64(10), res.Rows, "the walk goes on after the first problem")
	assert.Equal(t, int64(10), res.Linked, "every link held: only the signature tells")
	assert.Zero(t, res.HeadSeq, "no entry is vouched for")
	assert.Contains(t, res.String(), "audit chain BROKEN")
	require.ErrorIs(t, res.Err(), audit.ErrChainBroken)

	// With the checkpoints removed too, an anchor kept elsewhere still does.
	tamperCheckpoints(t, b, `DELETE FROM audit_checkpoints`)
	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys, Anchors: []audit.Anchor{anchor}})
	require.NoError(t, err)
	require.False(t, res.OK())
	assert.Contains(t, res.Problem, "anchor at seq 8")

	// A log cut short (no rebuild) leaves the checkpoint past its end.
	b2 := setup(t)
	for range 4 {
		appendAll(t, b2, event("x"))
	}
	_, err = audit.Record(b2.ctx, b2.db.Pool, signer, audit.ReasonOnDemand)
	require.NoError(t, err)
	tamper(t, b2, `DELETE FROM audit_log WHERE seq > 2`)
	res, err = audit.Verify(b2.ctx, b2.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.False(t, res.OK())
	assert.Contains(t, res.Problem, "checkpoint at seq 4: the log ends at seq 2")
}

func TestParseAnchor(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	a, err := audit.ParseAnchor("12:" + h)
	require.NoError(t, err)
	assert.Equal(t, int64(12), a.Seq)
	for _, bad := range []string{"", "12", "x:" + h, "0:" + h, "12:abc", "12:" + h + "00"} {
		_, err := audit.ParseAnchor(bad)
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), bad)
	}
}

func TestLoadKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	priv, pub, id, err := audit.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), priv, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pub"), pub, 0o644))
	s, err := audit.LoadSigner(filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	assert.Equal(t, id, s.KeyID())
	_, err = audit.LoadSigner(filepath.Join(dir, "key.pub"))
	assert.ErrorContains(t, err, "holds a public key")
	ks, err := audit.LoadKeySet(filepath.Join(dir, "key.pub"), filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	assert.Equal(t, []string{id}, ks.IDs(), "a private key file gives its public half")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk"), []byte("not a key"), 0o600))
	_, err = audit.LoadKeySet(filepath.Join(dir, "junk"))
	assert.ErrorContains(t, err, "not a PEM file")
}

// tamperCheckpoints is tamper for the checkpoints table.
func tamperCheckpoints(t *testing.T, b bundle, statements ...string) {
	t.Helper()
	conn, err := pgx.Connect(b.ctx, b.db.OwnerURL)
	require.NoError(t, err)
	defer conn.Close(b.ctx)
	steps := append([]string{`ALTER TABLE audit_checkpoints DISABLE TRIGGER USER`}, statements...)
	steps = append(steps, `ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_update_delete`,
		`ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_names_entry`)
	for _, sql := range steps {
		_, err := conn.Exec(b.ctx, sql)
		require.NoError(t, err, sql)
	}
}

// waitForCheckpoint waits until a checkpoint at seq exists and returns it.
func waitForCheckpoint(t *testing.T, b bundle, seq int64) audit.Checkpoint {
	t.Helper()
	var cp audit.Checkpoint
	wait.For(t, fmt.Sprintf("a checkpoint at seq %d", seq), 20*time.Second, func() error {
		latest, ok, err := audit.LatestCheckpoint(b.ctx, b.db.Pool)
		if err != nil {
			return wait.Stop(err)
		}
		if !ok || latest.Seq < seq {
			return fmt.Errorf("%w: latest %+v", wait.ErrNotYet, latest)
		}
		cp = latest
		return nil
	})
	require.Equal(t, seq, cp.Seq)
	return cp
}

// TestForgedCheckpointRefused: the runtime role records checkpoints, so
// anyone with its credentials could insert one. One naming a seq past the
// head made the scheduler take it for the last signed and sign nothing
// again; one with another hash than its entry's signs nothing of the
// chain. Both are refused, and the scheduler goes on signing the head.
func TestForgedCheckpointRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries := appendAll(t, b, event("one"), event("two"))
	forge := func(seq int64, hash []byte) error {
		_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
            VALUES ($1, $2, now(), 'on_demand', 'forged', sha256('p'), sha512('s'))`, seq, hash)
		return err
	}
	assert.ErrorContains(t, forge(1_000_000, entries[1].Hash), "names no entry of the chain", "a seq not written yet")
	assert.ErrorContains(t, forge(entries[0].Seq, entries[1].Hash), "names no entry of the chain", "another entry's hash")
	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_checkpoints`).Scan(&n))
	require.Zero(t, n)

	signer := newSigner(t)
	cp := audit.NewCheckpointer(b.db.Pool, signer, audit.CheckpointConfig{Every: 1, Interval: time.Hour, Poll: 10 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { cp.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	got := waitForCheckpoint(t, b, entries[1].Seq)
	assert.NoError(t, got.VerifySignature(audit.NewKeySet(signer.PublicKey())))
	appendAll(t, b, event("three"))
	waitForCheckpoint(t, b, entries[1].Seq+1)
}

// TestRecordSignsPastAForgedCheckpoint: a checkpoint at the real head that
// claims the console's key id but whose signature does not verify is not
// handed out by Record: Record appends an entry saying so and signs it, and
// Verify then reports the forged one as a warning (the later checkpoint
// vouches for every entry up to it). Without a later checkpoint, the
// forged one breaks the chain.
func TestRecordSignsPastAForgedCheckpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries := appendAll(t, b, event("one"), event("two"))
	head := entries[len(entries)-1]
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'export', $3, $4, sha512('s'))`, head.Seq, head.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	require.NoError(t, err)

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.False(t, res.OK(), "no later checkpoint vouches for the entries: the forged one breaks the chain")
	assert.Contains(t, res.Problem, "checkpoint at seq 2: signature does not verify")

	cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	require.Equal(t, head.Seq+1, cp.Seq, "Record signed past the forged checkpoint")
	require.NoError(t, cp.VerifySignature(keys))
	var action, reason string
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT action, reason FROM audit_log WHERE seq = $1`, cp.Seq).Scan(&action, &reason))
	assert.Equal(t, audit.ActionCheckpointRefused, action)
	assert.Contains(t, reason, "the checkpoint at seq 2 does not verify: signature does not verify")

	again, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	assert.Equal(t, cp, again, "the valid checkpoint at the head is reused")

	res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "checkpoint at seq 2: signature does not verify")
	assert.Contains(t, res.String(), "1 warning")
}
