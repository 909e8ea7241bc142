package audit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// CheckpointConfig says how often the chain's head is signed.
type CheckpointConfig struct {
	// Every is how many entries may follow the last checkpoint before the
	// next is recorded (AUDIT_CHECKPOINT_EVERY, default 1000).
	Every int64
	// Interval is the longest time entries stay unsigned
	// (AUDIT_CHECKPOINT_INTERVAL, default 5m).
	Interval time.Duration
	// Poll is how often the head is looked at; default a quarter of
	// Interval, at most 10 s.
	Poll time.Duration
	// Trusted are the public keys besides the signer's whose checkpoints
	// count as signed (AUDIT_PUBLIC_KEYS; see TrustedKeys). Nil: none.
	Trusted *KeySet
}

// DB is what the checkpointer works on: *pgxpool.Pool is one.
type DB interface {
	Beginner
	Querier
}

// Checkpointer records checkpoints on schedule (Run) and on demand (Record).
// Every replica may run one: they take turns under an advisory lock, and a
// head is signed once.
//
// It logs each signed head it comes to know at Info, with its seq and hash
// (logHead): the shipped logs hold heads kept outside the database,
// anchors for `console audit verify --anchor`, which is what catches a log
// its owner cut back to an earlier signed head (the rows after it and the
// newer checkpoints deleted, the triggers off): what is left is a sound
// chain whose checkpoints all verify, and the console goes on signing from
// there.
type Checkpointer struct {
	db     DB
	signer *Signer
	keys   *KeySet // TrustedKeys(signer, cfg.Trusted)
	cfg    CheckpointConfig
	log    *slog.Logger

	// mu guards head. A tick holds it from its read of the newest
	// checkpoint that verifies to its note of it (readHead), and Record
	// notes a checkpoint only once it committed: a tick never reads a
	// checkpoint older than one noted before, unless the log went back.
	mu sync.Mutex
	// head is the newest signed head noted (zero before the first).
	head Checkpoint
}

// NewCheckpointer returns a checkpointer signing with signer.
func NewCheckpointer(db DB, signer *Signer, cfg CheckpointConfig, log *slog.Logger) *Checkpointer {
	if cfg.Every <= 0 {
		cfg.Every = 1000
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = min(cfg.Interval/4, 10*time.Second)
	}
	return &Checkpointer{db: db, signer: signer, keys: TrustedKeys(signer, cfg.Trusted), cfg: cfg, log: log}
}

// Signer returns the key the checkpointer signs with.
func (c *Checkpointer) Signer() *Signer { return c.signer }

// Keys returns the keys the checkpointer trusts a checkpoint's signature
// with: TrustedKeys of its signer and CheckpointConfig.Trusted.
func (c *Checkpointer) Keys() *KeySet { return c.keys }

// Record signs the current head now (see RecordTrusting), in a
// transaction of its own, and logs the checkpoint it signed, or the one it
// found at the head when that is newer than any logged (logHead).
func (c *Checkpointer) Record(ctx context.Context, reason string) (Checkpoint, error) {
	cp, found, err := SignHead(ctx, c.db, c.signer, c.cfg.Trusted, reason)
	if err != nil {
		return Checkpoint{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp.Signed() && (!found || cp.Seq > c.head.Seq) {
		c.logHead(cp, !found)
	}
	if cp.Seq > c.head.Seq {
		c.head = cp
	}
	return cp, nil
}

// RecordIn is Record in db, the caller's transaction (a purge signs the
// head in the transaction that removes what the log refers to). It logs
// nothing: the checkpoint may yet roll back with db, and a head logged
// that the log never held would read as a rewritten log; the next tick
// of Run logs it once it committed, if it is still the newest.
func (c *Checkpointer) RecordIn(ctx context.Context, db Beginner, reason string) (Checkpoint, error) {
	return RecordTrusting(ctx, db, c.signer, c.cfg.Trusted, reason)
}

// logHead logs cp, a committed checkpoint that verifies, at Info: "audit
// checkpoint recorded" when this process signed it (signed), else "audit
// checkpoint seen" (another replica, a purge's transaction or `console
// audit checkpoint` signed it), with its seq, hash, key id, reason, time
// and anchor (seq:hash, as `console audit verify --anchor` takes it).
func (c *Checkpointer) logHead(cp Checkpoint, signed bool) {
	msg := "audit checkpoint seen"
	if signed {
		msg = "audit checkpoint recorded"
	}
	c.log.Info(msg, "seq", cp.Seq, "hash", cp.HashHex(), "key_id", cp.KeyID, "reason", cp.Reason,
		"at", cp.At, "anchor", fmt.Sprintf("%d:%s", cp.Seq, cp.HashHex()))
}

// Run records a checkpoint whenever one is due, until ctx ends. Failures are
// logged and tried again at the next poll.
func (c *Checkpointer) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Poll)
	defer t.Stop()
	for {
		if err := c.tick(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("audit checkpoint", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// The head and the database's clock, which dates checkpoints (Record).
const selectHeadAndClock = `SELECT COALESCE((SELECT seq FROM audit_log ORDER BY seq DESC LIMIT 1), 0), clock_timestamp()`

// tick records a checkpoint when one is due, counting from the newest
// checkpoint signed with a key this checkpointer trusts (LatestVerifiedCheckpoint):
// one anyone else inserted (the runtime role may insert checkpoints; the
// database checks their seq, hash and date, not their signature) neither
// counts as signed nor, dated ahead, puts the next one off.
func (c *Checkpointer) tick(ctx context.Context) error {
	head, now, vc, err := c.readHead(ctx)
	if err != nil {
		return err
	}
	var (
		last   int64
		lastAt *time.Time
	)
	if vc.OK {
		last, lastAt = vc.Checkpoint.Seq, &vc.Checkpoint.At
	}
	reason := checkpointDue(head, last, lastAt, now, c.cfg)
	if reason == "" {
		return nil
	}
	_, err = c.Record(ctx, reason)
	return err
}

// readHead reads the head, the database's clock and the newest checkpoint
// that verifies, holding c.mu from the read to its note: a checkpoint
// newer than the last noted is logged (logHead); one older means the log
// went back (rows and checkpoints removed from its end, or a database
// restored from a backup or failed over to a replica behind), logged at
// Error with both heads, once: the older is noted instead. A Record that
// commits meanwhile notes its checkpoint after this one, never before.
func (c *Checkpointer) readHead(ctx context.Context) (head int64, now time.Time, vc VerifiedCheckpoint, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.db.QueryRow(ctx, selectHeadAndClock).Scan(&head, &now); err != nil {
		return 0, time.Time{}, vc, fmt.Errorf("read audit head: %w", err)
	}
	if vc, err = LatestVerifiedCheckpoint(ctx, c.db, c.keys); err != nil {
		return 0, time.Time{}, vc, err
	}
	switch cp := vc.Checkpoint; {
	case !vc.OK:
	case cp.Seq > c.head.Seq:
		c.logHead(cp, false)
		c.head = cp
	case cp.Seq < c.head.Seq:
		c.log.Error("audit signed head went back: the newest checkpoint that verifies is older than one this console saw before; the log was cut back (see docs/runbook.md, AuditHeadWentBack)",
			"seq", cp.Seq, "hash", cp.HashHex(), "seen_seq", c.head.Seq, "seen_hash", c.head.HashHex(),
			"seen_anchor", fmt.Sprintf("%d:%s", c.head.Seq, c.head.HashHex()))
		c.head = cp
	}
	return head, now, vc, nil
}

// checkpointDue returns why a checkpoint is due, or "" when none is: there
// are unsigned entries and either cfg.Every of them, or the last checkpoint
// (if any) is cfg.Interval old, or dated after now (the database's clock
// went back since: its age says nothing, and waiting for the clock to
// catch up would leave entries unsigned for as long).
func checkpointDue(head, last int64, lastAt *time.Time, now time.Time, cfg CheckpointConfig) string {
	switch {
	case head <= last:
		return ""
	case head-last >= cfg.Every:
		return ReasonCount
	case lastAt == nil || lastAt.After(now) || now.Sub(*lastAt) >= cfg.Interval:
		return ReasonInterval
	}
	return ""
}
