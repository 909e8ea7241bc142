package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
		value: func(c *jetstream.ConsumerConfig) string { return c.AckWait.String() },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.AckWait = src.AckWait },
		below: func(have, want *jetstream.ConsumerConfig) bool { return limitBelow(have.AckWait, want.AckWait) }},
	{name: "backoff",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.BackOff) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.BackOff = slices.Clone(src.BackOff) }},
	{name: "max_ack_pending",
		value: func(c *jetstream.ConsumerConfig) string { return fmt.Sprint(c.MaxAckPending) },
		put:   func(dst, src *jetstream.ConsumerConfig) { dst.MaxAckPending = src.MaxAckPending },
		below: func(have, want *jetstream.ConsumerConfig) bool {
			return limitBelow(have.MaxAckPending, want.MaxAckPending)
		}},
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

// putBack puts the settings of stream's consumer (have) that differ from
// the console's back, and reports whether it found them all the
// console's with nothing owed. When a changed setting may have let the
// consumer pass dead letters over (a filter, a delivery limit), it moves
// the consumer back to from, the first sequence that may have been passed
// over (0: the stream's first): what is stored already is skipped when it
// comes again, what was passed over is stored. That move is owed until it
// is done, across calls. Each change is logged with its two values and
// counted (quarantine_ingest_consumer_repaired_total). Settings JetStream
// refuses to change on an existing consumer (a deliver policy, a start
// sequence) come back as errConsumerChanged, with the command that makes
// the consumer again.
func (in *Ingester) putBack(ctx context.Context, stream string, have *jetstream.ConsumerInfo, from uint64) (right bool, err error) {
	d := driftOf(have.Config, in.consumerConfig())
	if len(d.fixable) > 0 {
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
			"stream", stream, "consumer", in.cfg.Durable, "changes", d.fixable)
		if d.mayHaveSkipped {
			in.owe(stream, from)
		}
		if in.beforeMoveBack != nil && !in.beforeMoveBack() {
			return false, nil
		}
	}
	if len(d.stuck) > 0 {
		return false, fmt.Errorf("%w (%s; on %s: %s). Delete it (nats consumer rm %s %s -f): every console makes it again within seconds and it delivers the whole stream again, what is stored already skipped",
			errConsumerChanged, in.cfg.Durable, stream, strings.Join(d.stuck, ", "), stream, in.cfg.Durable)
	}
	owed, ok := in.owedFrom(stream)
	if !ok {
		return len(d.changes) == 0, nil
	}
	if owed == 0 {
		if owed, err = in.firstSeq(ctx, stream); err != nil {
			return false, err
		}
	}
	// Never forward, past what the consumer has not acked: owed may come
	// from a consumer or stream since made again.
	owed = min(owed, have.AckFloor.Stream+1)
	if _, err := in.js.ResetConsumerToSequence(ctx, stream, in.cfg.Durable, max(owed, 1)); err != nil {
		return false, fmt.Errorf("deliver again from #%d on consumer %s on %s: %w", owed, in.cfg.Durable, stream, err)
	}
	in.paid(stream)
	in.log.Warn("the changed ingest consumer may have passed dead letters over: delivering again from where it may have started to; what is stored already is skipped",
		"stream", stream, "consumer", in.cfg.Durable, "from_seq", owed)
	return false, nil
}

// owe records that stream's consumer must be moved back to from (0: the
// stream's first sequence), or to an earlier sequence already owed.
func (in *Ingester) owe(stream string, from uint64) {
	in.owedMu.Lock()
	defer in.owedMu.Unlock()
	if in.owed == nil {
		in.owed = map[string]uint64{}
	}
	if was, ok := in.owed[stream]; ok {
		from = min(was, from)
	}
	in.owed[stream] = from
}

// owedFrom is the sequence stream's consumer must be moved back to, if any.
func (in *Ingester) owedFrom(stream string) (uint64, bool) {
	in.owedMu.Lock()
	defer in.owedMu.Unlock()
	from, ok := in.owed[stream]
	return from, ok
}

// paid records that stream's consumer was moved back.
func (in *Ingester) paid(stream string) {
	in.owedMu.Lock()
	defer in.owedMu.Unlock()
	delete(in.owed, stream)
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
		_, err = in.js.CreateConsumer(ctx, stream, in.consumerConfig())
		if err == nil {
			in.paid(stream) // a new consumer delivers the whole stream
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
	_, err = in.putBack(ctx, stream, cons.CachedInfo(), 0)
	return err
}
