package dlq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// consumerConfig is the configuration the console wants for its durable
// consumer on each stream it reads: every message the stream holds
// (no filter, deliver all), acked only after the row is committed, never
// given up on.
func (in *Ingester) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       in.cfg.Durable,
		Description:   "Quarantine console ingest: acked only after the row is committed",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       in.cfg.AckWait,
		MaxDeliver:    -1, // a dead letter is never given up on
		MaxAckPending: 20 * in.cfg.BatchSize,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// consumerSetting is one setting of the consumer the console holds to
// its own value: someone may change it by hand (nats consumer edit, a
// pause), and most changes would keep dead letters from the console
// without any figure showing it.
type consumerSetting struct {
	name string
	// value is the setting as a log line or a health sentence shows it.
	value func(c *jetstream.ConsumerConfig) string
	// put sets dst's value to src's; nil when JetStream refuses to change
	// it on an existing consumer (the consumer must be made again).
	put func(dst, src *jetstream.ConsumerConfig)
	// skips: while changed, the consumer may have passed over dead letters
	// for good (a filter that left them out, deliveries given up on); once
	// it is put back, the consumer delivers again from where it may have
	// started to.
	skips bool
	// resume: an update does not put it back; resuming the consumer does.
	resume bool
	// below, for a limit that replicas set from their own settings
	// (INGEST_ACK_WAIT, INGEST_BATCH_SIZE): the consumer's value counts as
	// changed only when below this replica's, which it then raises. Two
	// replicas with other values (a rollout) settle on the higher one
	// instead of putting their own back in turn every check; a higher
	// value costs a replica nothing it relies on.
	below func(have, want *jetstream.ConsumerConfig) bool
	// setting, for a limit only raised (below) that comes from the
	// console's settings, names it; edit is the `nats consumer edit`
	// option that sets the consumer's value to want's. A consumer's higher
	// value is logged at setup as the setting not applied
	// (consumerNotApplied).
	setting string
	edit    func(want *jetstream.ConsumerConfig) string
}

// limitBelow reports whether a limit have is below want, where 0 or less
// is no limit.
func limitBelow[T int | int64 | time.Duration](have, want T) bool {
	switch {
	case want <= 0:
		return have > 0
	case have <= 0:
		return false
	}
	return have < want
}

// consumerSettings are the settings checked, every one that decides which
// messages are delivered, when and how whole. Description, metadata,
// replicas, storage and MaxWaiting are left as they are found.
var consumerSettings = []consumerSetting{
	{name: "filter", skips: true,
		value: func(c *jetstream.ConsumerConfig) string {
			f := slices.DeleteFunc(append([]string{c.FilterSubject}, c.FilterSubjects...), func(s string) bool { return s == "" })
			if len(f) == 0 {
				return "none"
			}
			return strings.Join(f, ",")
		},
		put: func(dst, src *jetstream.ConsumerConfig) {
			dst.FilterSubject, dst.FilterSubjects = src.FilterSubject, slices.Clone(src.FilterSubjects)
		}},
	{name: "max_deliver", skips: true,
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(max(c.MaxDeliver, -1)) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxDeliver = src.MaxDeliver }},
	{name: "headers_only",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.HeadersOnly) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.HeadersOnly = src.HeadersOnly }},
	// An update leaves a pause as it is: putBack resumes the consumer.
	{name: "pause_until", resume: true,
		value: func(c *jetstream.ConsumerConfig) string {
			if c.PauseUntil == nil || !c.PauseUntil.After(time.Now()) {
				return "none"
			}
			return c.PauseUntil.UTC().Format(time.RFC3339)
		},
		put: func(dst, src *jetstream.ConsumerConfig) {}},
	{name: "ack_wait",
		value:   func(c *jetstream.ConsumerConfig) string { return c.AckWait.String() },
		put:     func(dst, src *jetstream.ConsumerConfig) { dst.AckWait = src.AckWait },
		below:   func(have, want *jetstream.ConsumerConfig) bool { return limitBelow(have.AckWait, want.AckWait) },
		setting: "INGEST_ACK_WAIT",
		edit:    func(want *jetstream.ConsumerConfig) string { return "--wait " + durationArg(want.AckWait) }},
	{name: "backoff",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.BackOff) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.BackOff = slices.Clone(src.BackOff) }},
	{name: "max_ack_pending",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.MaxAckPending) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxAckPending = src.MaxAckPending },
		below: func(have, want *jetstream.ConsumerConfig) bool {
			return limitBelow(have.MaxAckPending, want.MaxAckPending)
		},
		setting: "max_ack_pending (20 × INGEST_BATCH_SIZE)",
		edit:    func(want *jetstream.ConsumerConfig) string { return "--max-pending " + fmt.Sprint(want.MaxAckPending) }},
	{name: "rate_limit_bps",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.RateLimit) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.RateLimit = src.RateLimit }},
	{name: "inactive_threshold",
		value: func(c *jetstream.ConsumerConfig) string { return c.InactiveThreshold.String() },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.InactiveThreshold = src.InactiveThreshold }},
	// The ingester's pull requests ask for more than a low limit allows,
	// and JetStream refuses each of them.
	{name: "max_batch",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.MaxRequestBatch) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxRequestBatch = src.MaxRequestBatch },
		below: func(have, want *jetstream.ConsumerConfig) bool {
			return limitBelow(have.MaxRequestBatch, want.MaxRequestBatch)
		}},
	{name: "max_bytes",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.MaxRequestMaxBytes) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxRequestMaxBytes = src.MaxRequestMaxBytes },
		below: func(have, want *jetstream.ConsumerConfig) bool {
			return limitBelow(have.MaxRequestMaxBytes, want.MaxRequestMaxBytes)
		}},
	{name: "max_expires",
		value: func(c *jetstream.ConsumerConfig) string { return c.MaxRequestExpires.String() },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxRequestExpires = src.MaxRequestExpires },
		below: func(have, want *jetstream.ConsumerConfig) bool {
			return limitBelow(have.MaxRequestExpires, want.MaxRequestExpires)
		}},
	{name: "priority",
		value: func(c *jetstream.ConsumerConfig) string {
			return fmt.Sprintf("policy %d groups %v", c.PriorityPolicy, c.PriorityGroups)
		},
		put: func(dst, src *jetstream.ConsumerConfig) {
			dst.PriorityPolicy, dst.PriorityGroups, dst.PinnedTTL = src.PriorityPolicy, slices.Clone(src.PriorityGroups), src.PinnedTTL
		}},
	// JetStream refuses to change these on an existing consumer.
	{name: "deliver_policy", value: func(c *jetstream.ConsumerConfig) string { return c.DeliverPolicy.String() }},
	{name: "opt_start_seq", value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.OptStartSeq) }},
	{name: "opt_start_time", value: func(c *jetstream.ConsumerConfig) string {
		if c.OptStartTime == nil {
			return "none"
		}
		return c.OptStartTime.UTC().Format(time.RFC3339)
	}},
	{name: "ack_policy", value: func(c *jetstream.ConsumerConfig) string { return c.AckPolicy.String() }},
	{name: "replay_policy", value: func(c *jetstream.ConsumerConfig) string { return c.ReplayPolicy.String() }},
	{name: "deliver_subject", value: func(c *jetstream.ConsumerConfig) string { return c.DeliverSubject }},
}

// consumerDrift is how a consumer's configuration differs from the
// console's.
type consumerDrift struct {
	fixed          jetstream.ConsumerConfig // the consumer's configuration with what can be put back put back
	changes        []string                 // "name: theirs → ours", every setting that differs
	fixable        []string                 // the same for the settings an update puts back
	stuck          []string                 // the same for those it cannot
	mayHaveSkipped bool                     // a changed setting may have passed dead letters over
	paused         bool                     // the consumer is paused
}

// driftOf compares have with want.
func driftOf(have, want jetstream.ConsumerConfig) consumerDrift {
	d := consumerDrift{fixed: have}
	for _, s := range consumerSettings {
		h, w := s.value(&have), s.value(&want)
		if h == w || (s.below != nil && !s.below(&have, &want)) {
			continue
		}
		change := s.name + ": " + h + " → " + w
		d.changes = append(d.changes, change)
		if s.put == nil {
			d.stuck = append(d.stuck, change)
			continue
		}
		s.put(&d.fixed, &want)
		d.fixable = append(d.fixable, change)
		d.mayHaveSkipped = d.mayHaveSkipped || s.skips
		d.paused = d.paused || s.resume
	}
	return d
}

// errConsumerChanged is a consumer changed, by hand or by another
// program, in a way JetStream does not let the console change back.
var errConsumerChanged = errors.New("the ingest consumer was made with settings the console cannot change back")

// errOwedUnknown is PostgreSQL not telling whether a move-back is owed:
// nothing is moved, and the next check asks again.
var errOwedUnknown = errors.New("could not read whether a move-back of the ingest consumer is owed")

// putBack puts the settings of stream's consumer (have) that differ from
// the console's back, and reports whether it found them all the
// console's with nothing owed. When a changed setting may have let the
// consumer pass dead letters over (a filter, a delivery limit), the
// consumer must be moved back to from, the first sequence that may have
// been passed over (0: the stream's first): what is stored already is
// skipped when it comes again, what was passed over is stored. That
// move-back is recorded in PostgreSQL (owe) before the settings are put
// back, so that a replica dying in between leaves it owed to every other,
// and every check carries out one owed (moveBack), whoever owed it. Each
// change is logged with its two values and counted
// (quarantine_ingest_consumer_repaired_total). Settings JetStream refuses
// to change on an existing consumer (a deliver policy, a start sequence)
// come back as errConsumerChanged, with the command that makes the
// consumer again; a move-back that cannot be recorded leaves the settings
// as they are and comes back as an error.
func (in *Ingester) putBack(ctx context.Context, stream string, have *jetstream.ConsumerInfo, from uint64) (right bool, err error) {
	want := in.consumerConfig()
	if have.Config.InactiveThreshold != want.InactiveThreshold {
		want.InactiveThreshold = in.inactiveLimit(ctx, stream, have.Config.InactiveThreshold)
	}
	d := driftOf(have.Config, want)
	if len(d.fixable) > 0 {
		if d.mayHaveSkipped {
			if err := in.owe(ctx, stream, from, d.fixable); err != nil {
				return false, fmt.Errorf("record the move-back owed on consumer %s on %s before putting its settings back (%s; they stay as they are until it is recorded): %w",
					in.cfg.Durable, stream, strings.Join(d.fixable, ", "), err)
			}
		}
		if _, err := in.js.UpdateConsumer(ctx, stream, d.fixed); err != nil {
			return false, fmt.Errorf("put back the settings of consumer %s on %s (%s): %w", in.cfg.Durable, stream, strings.Join(d.fixable, ", "), err)
		}
		if d.paused {
			if _, err := in.js.ResumeConsumer(ctx, stream, in.cfg.Durable); err != nil {
				return false, fmt.Errorf("resume consumer %s on %s: %w", in.cfg.Durable, stream, err)
			}
		}
		in.metrics.ConsumerRepaired.WithLabelValues(stream).Inc()
		in.log.Warn("the ingest consumer's settings were changed (by hand?): the console put its own back",
			"stream", stream, "consumer", in.cfg.Durable, "changes", d.fixable, "move_back_owed", d.mayHaveSkipped)
		if in.beforeMoveBack != nil && !in.beforeMoveBack() {
			return false, nil
		}
	}
	if len(d.stuck) > 0 {
		return false, fmt.Errorf("%w (%s; on %s: %s). Delete it (nats consumer rm %s %s -f): every console makes it again within seconds and it delivers the whole stream again, what is stored already skipped",
			errConsumerChanged, in.cfg.Durable, stream, strings.Join(d.stuck, ", "), stream, in.cfg.Durable)
	}
	owed, err := in.moveBack(ctx, stream)
	if errors.Is(err, errOwedUnknown) {
		in.log.Debug("the move-back owed on the ingest consumer, if any, is left to the next check", "stream", stream, "consumer", in.cfg.Durable, "err", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(d.changes) == 0 && !owed, nil
}

// inactiveLimit is the inactive threshold the console takes for its
// consumer on stream that has one of have: the stream's consumer limit
// when have is that limit (JetStream gives it to a consumer that asks for
// none: not a hand edit, and put back it comes back at once, the consumer
// "repaired" at every check), else none. A stream not read is taken as
// having no limit. Asked only when the consumer has an inactive
// threshold: a stream read per check for a stream with such a limit
// (reported as drift, streamSettings), none otherwise.
func (in *Ingester) inactiveLimit(ctx context.Context, stream string, have time.Duration) time.Duration {
	s, err := in.js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Config.ConsumerLimits.InactiveThreshold != have {
		return 0
	}
	return have
}

// Owed move-backs (migration 0037). An owe only ever lowers the sequence
// owed (the table's trigger refuses the opposite) and draws a new
// version; a move-back done removes the row only with the version it read.
const (
	oweMoveBack = `
        INSERT INTO ingest_moveback_owed AS o (stream, consumer, from_seq, changes) VALUES ($1, $2, $3, $4)
        ON CONFLICT (stream, consumer) DO UPDATE
            SET from_seq = LEAST(o.from_seq, EXCLUDED.from_seq), version = DEFAULT, owed_at = now(), changes = EXCLUDED.changes`
	// FOR UPDATE: one replica at a time moves the consumer, each from the
	// ack floor it reads once the one before is done, so none moves it
	// forward past what another has just moved it back to.
	lockOwedMoveBack = `SELECT from_seq, version FROM ingest_moveback_owed WHERE stream = $1 AND consumer = $2 FOR UPDATE`
	readOwedMoveBack = `SELECT version FROM ingest_moveback_owed WHERE stream = $1 AND consumer = $2`
	// Only the version read: one owed again since stays owed.
	deleteOwedMoveBack = `DELETE FROM ingest_moveback_owed WHERE stream = $1 AND consumer = $2 AND version = $3`
)

// owe records in PostgreSQL that stream's consumer must be moved back to
// from (0: the stream's first sequence), or to an earlier sequence already
// owed; changes are what was found changed, for the record.
func (in *Ingester) owe(ctx context.Context, stream string, from uint64, changes []string) error {
	if in.store == nil {
		return errors.New("no database to record it in")
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	if _, err := in.store.pool.Exec(ctx, oweMoveBack, stream, in.cfg.Durable, int64(min(from, math.MaxInt64)), strings.Join(changes, ", ")); err != nil {
		return fmt.Errorf("owe a move-back of %s on %s from #%d: %w", in.cfg.Durable, stream, from, err)
	}
	return nil
}

// moveBack carries out the move-back owed on stream's consumer, if one is
// (owe), and reports whether one was. It holds the owed row locked while
// it reads the consumer's ack floor, moves the consumer back to the owed
// sequence or to just after that floor, whichever is earlier (never
// forward past what it has not acked: owed may come from a consumer or
// stream since made again), and removes the row. A consumer made again
// between the read and the move (another replica, or by hand) is moved
// back to its stream's first sequence: a new consumer delivers the whole
// stream anyway. While the consumer still has a setting that passes dead
// letters over, the move waits (moveTo) and the row stays owed. When
// PostgreSQL does not answer the error wraps errOwedUnknown; when the move
// fails, the row stays owed.
func (in *Ingester) moveBack(ctx context.Context, stream string) (owed bool, err error) {
	if in.store == nil {
		return false, nil
	}
	// Most checks find nothing owed: one statement, no transaction.
	var version int64
	rctx, cancel := in.store.within(ctx)
	defer cancel()
	switch err := in.store.pool.QueryRow(rctx, readOwedMoveBack, stream, in.cfg.Durable).Scan(&version); {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: %w", errOwedUnknown, err)
	}
	var seq uint64
	var moveErr error
	err = in.store.inTx(ctx, func(tx boundedTx) error {
		var from, version int64
		switch err := tx.QueryRow(ctx, lockOwedMoveBack, stream, in.cfg.Durable).Scan(&from, &version); {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		owed = true
		if seq, moveErr = in.moveTo(ctx, stream, uint64(from)); moveErr != nil || seq == 0 {
			return moveErr
		}
		_, err := tx.Exec(ctx, deleteOwedMoveBack, stream, in.cfg.Durable, version)
		return err
	})
	switch {
	case moveErr != nil:
		return true, moveErr
	case err != nil:
		return owed, fmt.Errorf("%w: %w", errOwedUnknown, err)
	case owed && seq == 0:
		in.log.Debug("a move-back is owed on the ingest consumer, whose settings are still changed: it waits until they are put back",
			"stream", stream, "consumer", in.cfg.Durable)
	case owed:
		in.log.Warn("the changed ingest consumer may have passed dead letters over: delivering again from where it may have started to; what is stored already is skipped",
			"stream", stream, "consumer", in.cfg.Durable, "from_seq", seq)
	}
	return owed, nil
}

// moveTo moves stream's consumer back to from (0: the stream's first
// sequence) or to just after its ack floor, whichever is earlier, and
// returns where to. While a setting that passes dead letters over is
// still changed (the replica that owed the move-back has not put it back
// yet, or someone changed it again), it moves nothing and returns 0:
// moved now, the consumer would pass them over again, and whoever puts
// the setting back moves it back after.
func (in *Ingester) moveTo(ctx context.Context, stream string, from uint64) (uint64, error) {
	cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
	if err != nil {
		return 0, fmt.Errorf("look up consumer %s on %s to move it back: %w", in.cfg.Durable, stream, err)
	}
	info := cons.CachedInfo()
	if driftOf(info.Config, in.consumerConfig()).mayHaveSkipped {
		return 0, nil
	}
	seq := from
	if seq == 0 {
		if seq, err = in.firstSeq(ctx, stream); err != nil {
			return 0, err
		}
	}
	seq = max(min(seq, info.AckFloor.Stream+1), 1)
	res, err := in.js.ResetConsumerToSequence(ctx, stream, in.cfg.Durable, seq)
	if err != nil {
		return 0, fmt.Errorf("deliver again from #%d on consumer %s on %s: %w", seq, in.cfg.Durable, stream, err)
	}
	if res.ConsumerInfo == nil || res.Created.Equal(info.Created) {
		return seq, nil
	}
	first, err := in.firstSeq(ctx, stream)
	if err == nil {
		_, err = in.js.ResetConsumerToSequence(ctx, stream, in.cfg.Durable, max(first, 1))
	}
	if err != nil {
		return 0, fmt.Errorf("deliver again from the first on consumer %s on %s, made again while it was moved back: %w", in.cfg.Durable, stream, err)
	}
	in.log.Warn("the ingest consumer was made again while it was moved back: it delivers its stream again from the first; what is stored already is skipped",
		"stream", stream, "consumer", in.cfg.Durable, "from_seq", first)
	return max(first, 1), nil
}

// owedVersion is the version of the move-back owed on stream's consumer;
// ok is false when none is, or when PostgreSQL does not say.
func (in *Ingester) owedVersion(ctx context.Context, stream string) (version int64, ok bool) {
	if in.store == nil {
		return 0, false
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	err := in.store.pool.QueryRow(ctx, readOwedMoveBack, stream, in.cfg.Durable).Scan(&version)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		in.log.Debug("read the move-back owed on the ingest consumer", "stream", stream, "consumer", in.cfg.Durable, "err", err)
	}
	return version, err == nil
}

// forgive removes the move-back owed on stream's consumer if it is still
// the one of version: a new consumer delivers the whole stream. Left
// owed (PostgreSQL not answering), it costs a move-back of the new
// consumer to its ack floor at the next check.
func (in *Ingester) forgive(ctx context.Context, stream string, version int64) {
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	if _, err := in.store.pool.Exec(ctx, deleteOwedMoveBack, stream, in.cfg.Durable, version); err != nil {
		in.log.Debug("remove the move-back owed on a consumer made again; the next check does it", "stream", stream, "consumer", in.cfg.Durable, "err", err)
	}
}

// firstSeq is the first sequence stream holds.
func (in *Ingester) firstSeq(ctx context.Context, stream string) (uint64, error) {
	s, err := in.js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("look up stream %s: %w", stream, err)
	}
	return s.CachedInfo().State.FirstSeq, nil
}

// ensureConsumer makes stream's consumer when it is missing, and puts its
// settings back when someone changed them (putBack; not knowing since
// when, from the stream's first sequence).
func (in *Ingester) ensureConsumer(ctx context.Context, stream string) error {
	cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		// Read before: a move-back owed after it was made is another's.
		version, owed := in.owedVersion(ctx, stream)
		_, err = in.js.CreateConsumer(ctx, stream, in.consumerConfig())
		if err == nil {
			if owed {
				in.forgive(ctx, stream, version) // a new consumer delivers the whole stream
			}
			return nil
		}
		if !errors.Is(err, jetstream.ErrConsumerExists) {
			return fmt.Errorf("create consumer %s on %s: %w", in.cfg.Durable, stream, err)
		}
		cons, err = in.js.Consumer(ctx, stream, in.cfg.Durable) // another replica made it first
	}
	if err != nil {
		return fmt.Errorf("look up consumer %s on %s: %w", in.cfg.Durable, stream, err)
	}
	in.sawConsumer(stream, cons.CachedInfo().Config)
	in.consumerNotApplied(stream, cons.CachedInfo().Config)
	_, err = in.putBack(ctx, stream, cons.CachedInfo(), 0)
	return err
}

// consumerNotApplied logs each of the console's settings that stream's
// consumer (have) keeps a higher value of (notApplied): a console raises
// its ack wait and max_ack_pending to its own (below), never lowers them,
// since replicas deployed with other values (a rollout that changes them)
// would each put their own back at every check, the consumer changed
// every few seconds and DeadLetterIngestConsumerChanged firing, where
// the higher value costs none of them anything it relies on. A lowered
// setting thus takes effect only once the consumer is edited, when every
// console runs it.
func (in *Ingester) consumerNotApplied(stream string, have jetstream.ConsumerConfig) {
	want := in.consumerConfig()
	for _, s := range consumerSettings {
		if s.setting == "" || s.value(&have) == s.value(&want) || s.below(&have, &want) {
			continue
		}
		in.notApplied(s.setting, "ingest consumer's "+s.name,
			"replicas deployed with other values would put their own back in turn; a higher value costs none of them anything it relies on",
			"once every console runs it", "nats consumer edit "+stream+" "+in.cfg.Durable+" "+s.edit(&want),
			"stream", stream, "consumer", in.cfg.Durable, s.name, s.value(&want), "consumer_"+s.name, s.value(&have))
	}
}
