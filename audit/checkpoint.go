package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// checkpointDomain starts the signed bytes of every checkpoint.
const checkpointDomain = "quarantine-audit-checkpoint-v1"

// Reasons a checkpoint is recorded. Callers of Record may give their own
// (up to MaxCheckpointReason bytes), such as "purge" before partitions go.
const (
	ReasonCount    = "count"     // AUDIT_CHECKPOINT_EVERY entries since the last one
	ReasonInterval = "interval"  // AUDIT_CHECKPOINT_INTERVAL since the last one
	ReasonExport   = "export"    // the head an export ends at
	ReasonOnDemand = "on_demand" // `console audit checkpoint`
)

// MaxCheckpointReason is the longest reason Record takes, in bytes.
const MaxCheckpointReason = 64

// Checkpoint is the head of the chain at a moment, signed: anyone holding
// the public key can later check that the entry at Seq still has Hash, so a
// log that was cut and rebuilt after Seq, even with freshly computed hashes,
// is caught.
type Checkpoint struct {
	Seq       int64
	Hash      []byte
	At        time.Time // UTC, microsecond precision
	Reason    string
	KeyID     string
	PublicKey ed25519.PublicKey // as stored; verification uses keys it is given
	Signature []byte
}

// HashHex returns Hash in lowercase hex.
func (c Checkpoint) HashHex() string { return hex.EncodeToString(c.Hash) }

// Signed reports whether c carries a signature (an empty log's head does
// not).
func (c Checkpoint) Signed() bool { return len(c.Signature) > 0 }

// signedBytes is what the signature covers: length-prefixed fields as in
// hashEntry, in this order: the tag "quarantine-audit-checkpoint-v1", seq (8
// bytes, big-endian), hash (32 bytes), at (timeLayout, UTC), reason, key id.
func (c Checkpoint) signedBytes() []byte {
	var b bytes.Buffer
	field(&b, []byte(checkpointDomain))
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], uint64(c.Seq))
	field(&b, seq[:])
	field(&b, c.Hash)
	field(&b, []byte(c.At.UTC().Format(timeLayout)))
	field(&b, []byte(c.Reason))
	field(&b, []byte(c.KeyID))
	return b.Bytes()
}

// VerifySignature checks c's signature with the trusted key of c's key id.
// It returns an error saying what is wrong: no trusted key has that id, or
// the signature does not verify.
func (c Checkpoint) VerifySignature(keys *KeySet) error {
	var pub []byte
	if keys != nil {
		pub = keys.byID[c.KeyID]
	}
	if pub == nil {
		return fmt.Errorf("signed by key %s, which is not one of the public keys given", keyName(c.KeyID))
	}
	if !ed25519.Verify(pub, c.signedBytes(), c.Signature) {
		return fmt.Errorf("signature does not verify with key %s", keyName(c.KeyID))
	}
	return nil
}

const checkpointColumns = `seq, hash, at, reason, key_id, public_key, signature`

func scanCheckpoint(row pgx.CollectableRow) (Checkpoint, error) {
	var c Checkpoint
	var pub []byte
	err := row.Scan(&c.Seq, &c.Hash, &c.At, &c.Reason, &c.KeyID, &pub, &c.Signature)
	c.At = c.At.UTC()
	c.PublicKey = pub
	return c, err
}

// The newest checkpoint, whatever its signature.
const selectLatestCheckpoint = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints ORDER BY seq DESC LIMIT 1`

// LatestCheckpoint returns the newest checkpoint, and false when there is
// none yet. Its signature is not checked: anyone with the runtime role's
// credentials may insert a checkpoint; what is shown or relied on as the
// last signed head is LatestVerifiedCheckpoint's.
func LatestCheckpoint(ctx context.Context, db Querier) (Checkpoint, bool, error) {
	rows, err := db.Query(ctx, selectLatestCheckpoint)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read latest audit checkpoint: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCheckpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read latest audit checkpoint: %w", err)
	}
	return c, true, nil
}

// MaxCheckpointScan is how many of the newest checkpoints that name a
// trusted key LatestVerifiedCheckpoint reads, at most, looking for one
// that verifies; it reads them checkpointScanBatch at a time, so the
// usual case (the newest verifies) reads one batch.
const (
	MaxCheckpointScan   = 1000
	checkpointScanBatch = 10
)

const (
	// The newest checkpoints naming a trusted key below seq $2, newest
	// first, by the primary key on seq. One naming another key can never
	// verify, so it costs no signature check; one naming a trusted key is
	// checked.
	selectTrustedCheckpoints = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints
        WHERE key_id = ANY($1) AND seq < $2 ORDER BY seq DESC LIMIT $3`
	// The checkpoints newer than the one that verifies (none of them does),
	// and the newest of them.
	selectNewerCheckpoints = `SELECT count(*), COALESCE(max(seq), 0) FROM audit_checkpoints WHERE seq > $1`
)

// VerifiedCheckpoint is what the log's checkpoints say about its signed
// state: the newest one whose signature verifies with the keys trusted
// (Checkpoint, when OK), and the checkpoints newer than it, which do not
// (Unverified of them, the newest at seq NewestUnverified): each was
// written by someone else than a console holding one of those keys, or
// changed since, and `console audit verify` reports it.
type VerifiedCheckpoint struct {
	Checkpoint       Checkpoint
	OK               bool
	Unverified       int64
	NewestUnverified int64
}

// LatestVerifiedCheckpoint returns the newest checkpoint whose signature
// verifies with keys (found among the newest MaxCheckpointScan that name
// one of them), and how many newer ones do not. It is the last signed
// head for the auditor's page and the scheduler: a checkpoint anyone with
// the runtime role's credentials inserted (a garbage signature, a date in
// the future) is never taken for one.
func LatestVerifiedCheckpoint(ctx context.Context, db Querier, keys *KeySet) (VerifiedCheckpoint, error) {
	var out VerifiedCheckpoint
	below := int64(math.MaxInt64)
scan:
	for read := 0; read < MaxCheckpointScan; read += checkpointScanBatch {
		rows, err := db.Query(ctx, selectTrustedCheckpoints, keys.IDs(), below, checkpointScanBatch)
		if err != nil {
			return out, fmt.Errorf("read audit checkpoints: %w", err)
		}
		cps, err := pgx.CollectRows(rows, scanCheckpoint)
		if err != nil {
			return out, fmt.Errorf("read audit checkpoints: %w", err)
		}
		for _, c := range cps {
			if c.VerifySignature(keys) == nil {
				out.Checkpoint, out.OK = c, true
				break scan
			}
			below = c.Seq
		}
		if len(cps) < checkpointScanBatch {
			break
		}
	}
	if err := db.QueryRow(ctx, selectNewerCheckpoints, out.Checkpoint.Seq).Scan(&out.Unverified, &out.NewestUnverified); err != nil {
		return out, fmt.Errorf("count unverified audit checkpoints: %w", err)
	}
	return out, nil
}

// Head returns the head of the chain (seq and hash, unsigned); seq 0 for an
// empty log. Entries commit in seq order (appends hold the chain lock until
// they commit), so every entry up to the head is visible.
func Head(ctx context.Context, db Querier) (Checkpoint, error) {
	var c Checkpoint
	err := db.QueryRow(ctx, chainHead).Scan(&c.Seq, &c.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read chain head: %w", err)
	}
	return c, nil
}

// checkpointLockKey serialises checkpoint recording between replicas
// ("QAUDIT" then 0002). Migration 0063's trigger takes it too, before it
// refuses a checkpoint below the newest: keep the two the same.
const checkpointLockKey int64 = 0x5141554449540002

// CheckpointLockKey is checkpointLockKey, the lock every writer of
// audit_checkpoints takes before it inserts: a fixture that writes the
// table by hand with its triggers off (testdb.DB.ExecWithoutTrigger)
// takes it before it locks the table, or it and the console's own
// recorder (which holds it, then inserts) wait on each other.
const CheckpointLockKey = checkpointLockKey

const (
	// One recorder at a time; the next finds the head signed, or signs a
	// newer one.
	lockCheckpoint = `SELECT pg_advisory_xact_lock($1)`
	// One checkpoint per seq: a head signed twice keeps the first.
	insertCheckpoint = `INSERT INTO audit_checkpoints (` + checkpointColumns + `)
        VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (seq) DO NOTHING`
	selectCheckpoint = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints WHERE seq = $1`
	selectClock      = `SELECT clock_timestamp()`
)

// maxRefusedPerRecord bounds the checkpoints one Record refuses below the
// head (unverifiedBefore): more than that since the last one that
// verifies is no forgery slipped in before a checkpoint, and the gauge
// and console audit verify report them.
const maxRefusedPerRecord = 100

// The checkpoints after seq $1 and before the head, $2, oldest first.
const selectCheckpointsBetween = `SELECT ` + checkpointColumns + ` FROM audit_checkpoints
    WHERE seq > $1 AND seq < $2 ORDER BY seq LIMIT $3`

// unverifiedBefore returns the checkpoints below head that are newer than
// the newest checkpoint that verifies with trusted (none of them does:
// LatestVerifiedCheckpoint), oldest first, at most maxRefusedPerRecord.
// None when no checkpoint verifies: with no valid one to be between (a
// first checkpoint, or a console not given the key the others sign
// with), no forgery slipped in between valid ones; the one at the head is
// refused all the same (RecordTrusting), and console audit verify reports
// the others.
func unverifiedBefore(ctx context.Context, tx pgx.Tx, trusted *KeySet, head int64) ([]Checkpoint, error) {
	vc, err := LatestVerifiedCheckpoint(ctx, tx, trusted)
	if err != nil || !vc.OK || vc.Unverified == 0 {
		return nil, err
	}
	rows, err := tx.Query(ctx, selectCheckpointsBetween, vc.Checkpoint.Seq, head, maxRefusedPerRecord)
	if err != nil {
		return nil, fmt.Errorf("read unverified checkpoints: %w", err)
	}
	cps, err := pgx.CollectRows(rows, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("read unverified checkpoints: %w", err)
	}
	return cps, nil
}

// Record is RecordTrusting with signer's key alone trusted.
func Record(ctx context.Context, db Beginner, signer *Signer, reason string) (Checkpoint, error) {
	return RecordTrusting(ctx, db, signer, nil, reason)
}

// RecordTrusting signs the head of the chain and stores the checkpoint,
// unless the head is already signed with a key of TrustedKeys(signer,
// others) (during a key rotation, replicas already switched sign with the
// next key, in AUDIT_PUBLIC_KEYS), in which case it returns that
// checkpoint. A checkpoint at the head whose signature does not verify
// with any of them (anyone with the runtime role's credentials may insert
// one, and one per seq is kept) is never handed out: Record appends an
// entry saying so (action audit.checkpoint_refused, outcome error) and
// signs that entry, the new head. So does it, first, for each checkpoint
// below the head newer than the last that verifies (unverifiedBefore),
// which the checkpoint it signs leaves behind: a forgery inserted just
// before the console signs is in the log, and counted
// (quarantine_audit_checkpoints_refused_total), however briefly the
// gauge of unverified checkpoints showed it. It returns a zero, unsigned Checkpoint
// for an empty log, and an invalid quarantine.Error for a reason that is
// empty or longer than 64 bytes. Recorders are serialised by an advisory
// lock held for the few milliseconds this takes, after the chain's lock,
// which they hold too (appends wait for them). Call it before anything that
// removes data the log refers to, so the head as it was is signed (reason
// "purge", for example).
func RecordTrusting(ctx context.Context, db Beginner, signer *Signer, others *KeySet, reason string) (Checkpoint, error) {
	cp, _, err := SignHead(ctx, db, signer, others, reason)
	return cp, err
}

// SignHead is RecordTrusting, saying too whether the head was signed
// already (found: the checkpoint returned is that one, with its own
// reason, and nothing was signed), for a command that must not report an
// older checkpoint as the one it made.
func SignHead(ctx context.Context, db Beginner, signer *Signer, others *KeySet, reason string) (out Checkpoint, found bool, err error) {
	if reason == "" || len(reason) > MaxCheckpointReason {
		return Checkpoint{}, false, quarantine.Errorf(quarantine.EINVALID, "An audit checkpoint's reason must be 1 to %d bytes.", MaxCheckpointReason)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// The chain's lock first, as a transaction that appends and then
		// records (a purge) takes them: Record may append.
		if _, err := tx.Exec(ctx, lockAppend, appendLockKey); err != nil {
			return fmt.Errorf("lock the chain: %w", err)
		}
		if _, err := tx.Exec(ctx, lockCheckpoint, checkpointLockKey); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		head, err := Head(ctx, tx)
		if err != nil || head.Seq == 0 {
			out = head
			return err
		}
		rows, err := tx.Query(ctx, selectCheckpoint, head.Seq)
		if err != nil {
			return fmt.Errorf("read checkpoint %d: %w", head.Seq, err)
		}
		existing, err := pgx.CollectExactlyOneRow(rows, scanCheckpoint)
		trusted := TrustedKeys(signer, others)
		switch {
		case err == nil && existing.VerifySignature(trusted) == nil:
			out, found = existing, true
			return nil
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read checkpoint %d: %w", head.Seq, err)
		}
		// Signing past them, the checkpoints since the last that verifies
		// leave quarantine_audit_unverified_checkpoints: each is refused
		// in the log first, so that one inserted just before the console
		// signs is counted (quarantine_audit_checkpoints_refused_total)
		// however short a time the gauge showed it.
		refused, err := unverifiedBefore(ctx, tx, trusted, head.Seq)
		if err != nil {
			return err
		}
		if existing.Seq == head.Seq { // found at the head, and it does not verify
			refused = append(refused, existing)
		}
		for _, c := range refused {
			entry, err := Append(ctx, tx, Event{Action: ActionCheckpointRefused, Outcome: OutcomeError,
				ObjectType: "audit_checkpoint", ObjectID: strconv.FormatInt(c.Seq, 10),
				Reason: fmt.Sprintf("the checkpoint at seq %d does not verify: %v (this console signs with key %s and trusts %v); it was not written by a console with a trusted key; the head is signed anew",
					c.Seq, c.VerifySignature(trusted), signer.KeyID(), trusted.IDs())})
			if err != nil {
				return err
			}
			head = Checkpoint{Seq: entry.Seq, Hash: entry.Hash}
		}
		if err := tx.QueryRow(ctx, selectClock).Scan(&head.At); err != nil {
			return fmt.Errorf("read clock: %w", err)
		}
		head.At = head.At.UTC().Truncate(time.Microsecond)
		head.Reason = reason
		signer.sign(&head)
		if _, err := tx.Exec(ctx, insertCheckpoint, head.Seq, head.Hash, head.At, head.Reason,
			head.KeyID, []byte(head.PublicKey), head.Signature); err != nil {
			return fmt.Errorf("insert checkpoint %d: %w", head.Seq, err)
		}
		out = head
		return nil
	})
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("record audit checkpoint: %w", err)
	}
	return out, found, nil
}
