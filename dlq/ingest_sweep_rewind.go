package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// sweepProbe is the last message of a stream as a sweep step saw it (its
// sequence and stored time, from the stream's info; both nil: none seen,
// migration 0079), read again at every sweep (rewound). A stream can lose
// the last messages it stored and keep its name and creation time: a
// server that crashed before it wrote them (a single node syncs every two
// minutes by default), a volume or VM restored from a snapshot, an R1
// stream's node replaced. JetStream then numbers the next dead letters
// with the lost ones' sequences, and resets the ingest consumer's ack
// floor to match; the sweep had proven those sequences, or would prove
// them by the lost messages' rows, and a new dead letter acked there
// without a row (an on-call's `nats consumer next`, a late ack of the lost
// one's delivery) was never stored (review round 41). A loss that the
// probe outlived (only messages stored after a sweep last saw the stream
// lost) is not seen: the sweeps every SweepEvery keep that short, next to
// a server's sync interval (moveProbe).
type sweepProbe struct {
	seq *int64
	at  *time.Time
}

// next is the probe a step leaves: the stream's last message as si shows
// it, or p when it shows none (an empty stream's).
func (p sweepProbe) next(si *jetstream.StreamInfo) sweepProbe {
	if si.State.LastSeq == 0 || si.State.LastTime.IsZero() || si.State.LastSeq < firstSeq(si) {
		return p
	}
	seq, at := int64(si.State.LastSeq), si.State.LastTime.UTC().Truncate(time.Microsecond)
	return sweepProbe{seq: &seq, at: &at}
}

func (p sweepProbe) equal(o sweepProbe) bool {
	return (p.seq == nil) == (o.seq == nil) && (p.seq == nil || *p.seq == *o.seq) && equalTimes(p.at, o.at)
}

// equalTimes reports whether a and b are both nil or the same instant.
func equalTimes(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// rewound reports whether stream (as si shows it) lost the message probe
// names and numbered another with its sequence, or has not reached its
// sequence again: its last sequence is before it, or its message there
// was stored at another time. A probe the stream deleted since (its
// limits, a purge, a delete) tells nothing, nor does a read that fails
// for that message's own reasons.
func (in *Ingester) rewound(ctx context.Context, stream string, si *jetstream.StreamInfo, probe sweepProbe) (bool, error) {
	if probe.seq == nil || probe.at == nil {
		return false, nil
	}
	seq := uint64(*probe.seq)
	if si.State.LastSeq < seq {
		return true, nil
	}
	if seq < firstSeq(si) {
		return false, nil
	}
	m, err := readStored(ctx, in.js, stream, seq, false)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	case err != nil && sweepWide(err):
		return false, fmt.Errorf("read %s #%d, the last message the sweep saw: %w", stream, seq, err)
	case err != nil:
		return false, nil
	}
	return !m.Time.UTC().Truncate(time.Microsecond).Equal(*probe.at), nil
}

// rewoundFrom is, of a rewound stream, the first sequence whose message
// was stored after before (the lost probe's stored time: every message
// kept from before the loss was stored no later, every one since after),
// and that message's stored time; when the stream holds none yet, the one
// after its last, and now (the new ones are stored after it). A binary
// search of the stream's sequences, each read the first message at or
// after one; a read that fails for that message's own reasons counts it
// as new: the sweep then proves more again, never less.
func (in *Ingester) rewoundFrom(ctx context.Context, stream string, si *jetstream.StreamInfo, before time.Time) (uint64, time.Time, error) {
	lo, hi := firstSeq(si), si.State.LastSeq+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := readStored(ctx, in.js, stream, mid, true)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			hi = mid
		case err != nil && sweepWide(err):
			return 0, time.Time{}, fmt.Errorf("look for where %s was rewound: %w", stream, err)
		case err != nil, m.Seq >= hi, m.Time.After(before):
			hi = mid
		default:
			lo = m.Seq + 1
		}
	}
	m, err := readStored(ctx, in.js, stream, lo, true)
	switch {
	case err == nil:
		return lo, m.Time.UTC().Truncate(time.Microsecond), nil
	case !errors.Is(err, jetstream.ErrMsgNotFound) && sweepWide(err):
		return 0, time.Time{}, fmt.Errorf("look for where %s was rewound: %w", stream, err)
	}
	// None yet, or that message's own failure: now. A row of a new one
	// stored before it by the server's clock is read again, and found
	// stored (already_stored).
	return lo, time.Now().UTC().Truncate(time.Microsecond), nil
}

// moveProbe moves stream's probe on to its last message (si), as a sweep
// that proved nothing leaves it: the sweep then sees a loss of every
// message stored before it, not only of those before the last step.
func (in *Ingester) moveProbe(ctx context.Context, stream string, si *jetstream.StreamInfo, probe sweepProbe) error {
	next := probe.next(si)
	if next.equal(probe) {
		return nil
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	if _, err := in.store.pool.Exec(ctx, moveSweepProbe, stream, next.seq, next.at, streamCreated(si)); err != nil {
		return fmt.Errorf("move the sweep's probe of %s: %w", stream, err)
	}
	return nil
}
