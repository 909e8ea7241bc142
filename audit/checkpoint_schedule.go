package audit

import (
	"context"
	"fmt"
	"log/slog"
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
type Checkpointer struct {
	db     DB
	signer *Signer
	keys   *KeySet // TrustedKeys(signer, cfg.Trusted)
	cfg    CheckpointConfig
	log    *slog.Logger
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

// Record signs the current head now (see RecordTrusting).
func (c *Checkpointer) Record(ctx context.Context, reason string) (Checkpoint, error) {
	return c.RecordIn(ctx, c.db, reason)
}

// RecordIn is Record in db, the caller's transaction (a purge signs the
// head in the transaction that removes what the log refers to).
func (c *Checkpointer) RecordIn(ctx context.Context, db Beginner, reason string) (Checkpoint, error) {
	return RecordTrusting(ctx, db, c.signer, c.cfg.Trusted, reason)
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
	var (
		head int64
		now  time.Time
	)
	if err := c.db.QueryRow(ctx, selectHeadAndClock).Scan(&head, &now); err != nil {
		return fmt.Errorf("read audit head: %w", err)
	}
	vc, err := LatestVerifiedCheckpoint(ctx, c.db, c.keys)
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
	cp, err := c.Record(ctx, reason)
	if err != nil {
		return err
	}
	c.log.Debug("audit checkpoint recorded", "seq", cp.Seq, "reason", cp.Reason, "key_id", cp.KeyID)
	return nil
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
