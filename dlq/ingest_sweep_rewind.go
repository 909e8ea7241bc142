package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// sweepProbe is the last message of a stream as a sweep saw it (its
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
// a server's sync interval (moveProbe). Found, the sequences the loss may
// have reused are proven by each message's own source key (sweepStrict,
// sweepByKey), whatever the clocks say.
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

// rewindMargin is how far behind the lost probe's a server's clock may
// have stored the first new messages for rewoundFrom to find them (a VM
// reverted to a snapshot, whose clock resumes behind until synced; a
// replaced node's). Kept messages stored within it before the probe are
// proven again by key: each a read and a lookup of its key that finds it
// stored, never a second row. New messages stored by a clock further
// behind, at sequences before the probe's, are taken for kept ones.
const rewindMargin = time.Hour

// rewoundFrom is, of a stream rewound past probe, the first sequence the
// loss may have reused: the first whose message was stored after
// rewindMargin before the lost probe's stored time (every message kept
// from before the loss was stored no later than the probe, every new one
// after it by a clock not that far behind), and never past the probe's
// sequence, whose message is new (rewound), nor past the one after the
// stream's last. A binary search of the stream's sequences, each read the
// first message at or after one; a read that fails for that message's own
// reasons counts it as new: the sweep then proves more by key, never
// less.
func (in *Ingester) rewoundFrom(ctx context.Context, stream string, si *jetstream.StreamInfo, probe sweepProbe) (uint64, error) {
	after := probe.at.Add(-rewindMargin)
	lo, hi := firstSeq(si), min(si.State.LastSeq+1, uint64(*probe.seq))
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := readStored(ctx, in.js, stream, mid, true)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			hi = mid
		case err != nil && sweepWide(err):
			return 0, fmt.Errorf("look for where %s was rewound: %w", stream, err)
		case err != nil, m.Seq >= hi, m.Time.After(after):
			hi = mid
		default:
			lo = m.Seq + 1
		}
	}
	return lo, nil
}

// The last sequence of the stream ($1) a row stored since $2 names: of
// the DLQ stream, its source_seq; of the advisory stream, its delivery's
// (as sweepStoredAdvisory reads them). On the (dead_lettered_at,
// source_key) index, read once when a stream is found rewound.
const (
	lastRowSeqDLQ = `SELECT coalesce(max(source_seq), 0) FROM dead_letters
WHERE dead_lettered_at >= $2 AND source_kind = 'dlq' AND source_stream = $1`
	lastRowSeqAdvisory = `SELECT coalesce(max(p.seq), 0) FROM dead_letters d CROSS JOIN LATERAL quarantine_delivery_position(d.delivery) p
WHERE d.dead_lettered_at >= $2 AND d.source_kind = 'advisory' AND starts_with(d.delivery, $1 || ' #') AND p.stream = $1`
)

// lastRowSeq is the last sequence of stream (dlq: the DLQ stream, else
// the advisory stream) a row stored since names: a message lost after the
// sweep last saw the stream (its probe) has its row all the same, stored
// by its delivery, and the new message at its sequence is proven by key
// too (review round 41).
func lastRowSeq(ctx context.Context, tx boundedTx, stream string, dlq bool, since time.Time) (uint64, error) {
	q := lastRowSeqAdvisory
	if dlq {
		q = lastRowSeqDLQ
	}
	var seq int64
	if err := tx.QueryRow(ctx, q, stream, since).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read the last sequence of %s its rows name: %w", stream, err)
	}
	return uint64(max(seq, 0)), nil
}

// sweepStrict are the sequences of a stream found rewound that the loss
// may have reused (from through to; both nil: none), proven by key
// (sweepByKey): a row of the same sequence may be the lost message's.
type sweepStrict struct {
	from, to *int64
}

// with is s grown to take in from through to.
func (s sweepStrict) with(from, to uint64) sweepStrict {
	f, t := int64(from), int64(max(from, to))
	if s.from != nil {
		f, t = min(f, *s.from), max(t, *s.to)
	}
	return sweepStrict{from: &f, to: &t}
}

// step is the end of a step from start that stays on one side of s's
// bounds (to, at most), and whether it is proven by key.
func (s sweepStrict) step(start, to uint64) (uint64, bool) {
	switch {
	case s.from == nil || start > uint64(*s.to):
		return to, false
	case start < uint64(*s.from):
		return min(to, uint64(*s.from)-1), false
	}
	return min(to, uint64(*s.to)), true
}

// past is s once the sweep has proven through provenTo: none when that is
// past its end.
func (s sweepStrict) past(provenTo uint64) sweepStrict {
	if s.from != nil && provenTo >= uint64(*s.to) {
		return sweepStrict{}
	}
	return s
}

func (s sweepStrict) equal(o sweepStrict) bool {
	return (s.from == nil) == (o.from == nil) && (s.from == nil || (*s.from == *o.from && *s.to == *o.to))
}

// sweepByKey proves stream's sequences from through to by each message's
// own source key: every message the stream holds there is read, its key
// (its sequence and stored time, storedDelivery) looked up as the insert
// looks a batch's up (storedAlready), and only those not stored are
// stored, as sweepRange stores a missing one; the rest are counted found
// stored (already_stored). A new message at a lost one's sequence has a
// key of its own, which no row holds. A kept message is never handed to
// sweepStore: it would judge it again before the insert finds it stored,
// and hold an advisory of a stream another replica watches (left to it)
// for sweeps, warned of as acked without a row (review round 42). A
// sequence the stream holds no message at is skipped (deleted, or never
// one: nothing to count). Sequences a loss may have reused go from the
// first rewoundFrom finds through the last the sweep had seen, proven, or
// a row names (lastRowSeq). Each message is read once; one not stored is
// read again whole to store it (sweepStore): only after a loss, and only
// these sequences.
func (in *Ingester) sweepByKey(ctx context.Context, stream string, from, to uint64) ([]uint64, uint64, sweepResult, error) {
	res := sweepResult{From: from, To: to}
	var seqs []uint64 // every message the stream holds there, in order
	var read []uint64 // those read whole, and when the stream stored each
	var ats []time.Time
	for seq := from; seq <= to; {
		m, err := readStored(ctx, in.js, stream, seq, true)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			seq = to + 1
		case err != nil && sweepWide(err):
			return nil, from, res, err
		case err != nil:
			// The first message at or after seq failed for its own
			// reasons: seq itself is it, or a gap before it (skipped).
			// Its key unknown, sweepStore holds it.
			if _, err := readStored(ctx, in.js, stream, seq, false); !errors.Is(err, jetstream.ErrMsgNotFound) {
				seqs = append(seqs, seq)
			}
			seq++
		case m.Seq > to:
			seq = to + 1
		default:
			seqs, read, ats = append(seqs, m.Seq), append(read, m.Seq), append(ats, m.Time)
			seq = m.Seq + 1
		}
	}
	if len(seqs) == 0 {
		return nil, 0, res, nil
	}
	stored, err := in.storedAlready(ctx, stream, read, ats)
	if err != nil {
		return nil, from, res, err
	}
	res.AlreadyStored = uint64(len(stored))
	missing := slices.DeleteFunc(slices.Clone(seqs), func(seq uint64) bool { return stored[seq] })
	held, stop, fields, err := in.storeSwept(ctx, stream, from, to, missing, &res, "read", len(seqs))
	if res.Stored == 0 {
		in.log.Debug("the sweep proved by key the sequences the stream's loss may have reused: every message there was stored", fields...)
	} else {
		in.log.Warn("dead letters at sequences the stream's loss reused had no row (acked by another client, or by a late ack of the lost message's delivery): "+
			"the sweep stored them from the stream", fields...)
	}
	return held, stop, res, err
}

// storedAlready are the sequences among seqs of stream's messages (each
// stored at its ats) whose source key is stored, as the insert finds one
// (unstored): a row, or a key retention kept, under its stored time
// (storedKeys), or under the midnight of any day (keptUnderAnyDay: a
// message stored by an implausible clock is kept under the day it
// arrived). A key names its message's stored time: found, it is that
// message's own row, never a lost one's at the same sequence.
func (in *Ingester) storedAlready(ctx context.Context, stream string, seqs []uint64, ats []time.Time) (map[uint64]bool, error) {
	stored := map[uint64]bool{}
	if len(seqs) == 0 {
		return stored, nil
	}
	keys := make([][]byte, len(seqs))
	nums := make([]int64, len(seqs))
	for i, seq := range seqs {
		key := SourceKey(storedDelivery(stream, seq, ats[i]))
		keys[i], nums[i] = key[:], int64(seq)
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	kept := map[[32]byte]bool{}
	err := readStoredKeys(ctx, in.store.pool, ats, keys, func(_ time.Time, key []byte) { kept[[32]byte(key)] = true })
	if err == nil {
		err = keptUnderAnyDay(ctx, in.store.pool, stream, keys, nums, kept)
	}
	if err != nil {
		return nil, fmt.Errorf("look up the source keys of %s #%d–#%d: %w", stream, seqs[0], seqs[len(seqs)-1], err)
	}
	for i, seq := range seqs {
		if kept[[32]byte(keys[i])] {
			stored[seq] = true
		}
	}
	return stored, nil
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
