package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The sweep. The console acks a dead letter only once its row is
// committed, but the ingest consumer's ack floor moves for anyone's ack:
// an on-call who peeks with `nats consumer next DLQ quarantine-ingest`
// (which acks), any client bound to the durable that acks or terms, a
// filter or max deliver set and taken off by hand between two checks
// (putBack never sees it, nothing is owed, the consumer passed dead
// letters over). Such a dead letter is never delivered again, and the
// stream's age limit later deletes it, never stored. So every SweepEvery
// one replica per stream proves that every message the stream holds up to
// the consumer's ack floor is stored, from a watermark kept in PostgreSQL
// (ingest_sweep_watermark, migration 0040): a row, a source key retention
// removed (dead_letters_purged: what retention removed stays removed), or
// gone from the stream. A message with none of these is read from the
// stream by its sequence and stored through Store.Insert with the source
// key its delivery would have had (setDelivery: stream, sequence, stored
// time), so a delivery of it later is deduplicated; hostile ones are kept
// and flagged as ingest keeps them. Nothing of this runs per message on
// the ingest path: a sweep that finds the watermark at the ack floor reads
// one row, asks NATS twice and reads the stream's message it saw last
// again (sweepProbe; moving it on, when the stream grew, is one update).

// Bounds of a sweep. A step proves at most sweepStep sequences, with one
// query that reads the rows stored in their time range (and at most that
// many messages read from the stream, the missing ones); a sweep takes at
// most sweepSteps steps, the next sweep goes on. 100,000 sequences a
// sweep, every 30 s, is some 3,300 dead letters a second, which a stream
// with a backlog proven for the first time catches up at; a console that
// keeps up sweeps what arrived since the last sweep, in one step or a few.
const (
	sweepStep  = 10_000
	sweepSteps = 10
)

// sweepSlop widens the stored-time range a step looks for rows in: a
// row's dead_lettered_at is the time the stream stored its message (to
// the microsecond), and after a leader change in a cluster the new
// leader's clock may be behind the old one's by a few milliseconds (NTP
// keeps them that close). The range never starts before the stream was made. A row
// outside it costs its message a read and an insert that finds it stored
// (already_stored), never a second row.
const sweepSlop = 100 * time.Millisecond

// sweepResult is what a sweep of a stream did.
type sweepResult struct {
	From, To uint64 // the sequences checked lie From through To; none when To < From
	Missing  uint64 // those found without a row or a purged key
	// What became of the missing ones: stored from the stream, found
	// stored when stored (a delivery stored it meanwhile, or its row lay
	// outside the time range looked in), deleted from the stream before
	// the sweep read them.
	Stored, AlreadyStored, Deleted uint64
	Busy                           bool // another replica was sweeping the stream
	// NotWatched are advisories of streams no replica watches
	// (ingest_watchers.go): not captured, by configuration.
	NotWatched uint64
}

func (r *sweepResult) add(o sweepResult) {
	if r.From == 0 || (o.From != 0 && o.From < r.From) {
		r.From = o.From
	}
	r.To = max(r.To, o.To)
	r.Missing += o.Missing
	r.Stored += o.Stored
	r.AlreadyStored += o.AlreadyStored
	r.Deleted += o.Deleted
	r.NotWatched += o.NotWatched
	r.Busy = r.Busy || o.Busy
}

// sweepState is what the sweep keeps between sweeps in memory; where it
// has proven a stream up to, and what it holds, is in PostgreSQL
// (ingest_sweep_watermark, migrations 0040 and 0043).
type sweepState struct {
	mu sync.Mutex
	// retries counts, by stream message, the sweeps that found an
	// advisory's original unreadable: it is stored flagged
	// original_unreadable after maxHeaderRereads of them, as a delivery is.
	retries map[sweepSeq]int
	// failed counts, by stream message, the sweeps that could not store a
	// held one for a reason of its own (sweepFailed): its position form
	// is stored after sweepHeldTries of them.
	failed map[sweepSeq]int
	// counted is, by stream, when the stream the counts above are of was
	// made (sweepCountsOf).
	counted map[string]time.Time
	// during, when set (tests), runs in each step while it holds the
	// stream's watermark locked.
	during func()
}

// sweepHeldMax is the most dead letters the sweep holds (tries again at
// every sweep) after its watermark. Past that it stops going on until
// some are stored: trying them all again costs every sweep that much. A
// dead letter that holds itself (hostile: unreadable, or refused for its
// content) is held at most sweepHeldTries sweeps, then its position form
// is stored (ingest_sweep_held.go): so many held for longer means
// PostgreSQL refuses every row, not a dead letter, and a hundred hostile
// ones pause the sweep for sweepHeldTries sweeps, never for good.
const sweepHeldMax = 100

// ingestStreams are the streams the ingester reads.
func (in *Ingester) ingestStreams() []string {
	if len(in.cfg.Watch) > 0 {
		return []string{in.cfg.Stream, in.cfg.AdvisoryStream}
	}
	return []string{in.cfg.Stream}
}

// sweepLoop sweeps every stream the ingester reads every SweepEvery until
// ctx ends (the first sweep one interval after start: at start the
// consumer is catching up anyway). A replica cut off from PostgreSQL
// skips its turn.
func (in *Ingester) sweepLoop(ctx context.Context) {
	t := time.NewTicker(in.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if in.cutOff.Load() {
			continue
		}
		for _, stream := range in.ingestStreams() {
			if _, err := in.sweep(ctx, stream); err != nil && ctx.Err() == nil {
				in.log.Warn("sweeping the stream for dead letters acked without a row failed; the next sweep goes on from where it stopped",
					"stream", stream, "consumer", in.cfg.Durable, "err", err)
			}
		}
	}
}

// The watermark (migration 0040).
const (
	readSweep = `SELECT stream_created, swept_to, probe_seq, probe_at FROM ingest_sweep_watermark WHERE stream = $1`
	// A new stream's watermark starts before its first sequence.
	startSweep = `INSERT INTO ingest_sweep_watermark (stream, stream_created, swept_to) VALUES ($1, $2, $3) ON CONFLICT (stream) DO NOTHING`
	// SKIP LOCKED: one replica at a time sweeps a stream; another finds
	// it locked and leaves it to that one.
	lockSweep = `SELECT stream_created, swept_to, proven_to, held, probe_seq, probe_at, strict_from, strict_to FROM ingest_sweep_watermark WHERE stream = $1 FOR UPDATE SKIP LOCKED`
	// swept_at moves when the watermark does: standing still, it says a
	// held dead letter holds it (DeadLetterSweepStuck).
	advanceSweep = `UPDATE ingest_sweep_watermark SET stream_created = $2, swept_to = $3, proven_to = $4, held = $5,
    probe_seq = $6, probe_at = $7, strict_from = $8, strict_to = $9,
    swept_at = CASE WHEN stream_created = $2 AND swept_to = $3 THEN swept_at ELSE now() END WHERE stream = $1`
	// The probe (sweepProbe) moves on to the stream's last message between
	// steps too (a sweep with nothing to prove); never back. Outside the
	// row's lock: run just after a step that found the stream rewound and
	// set its own, it can put the probe back on a lost message, and the
	// next sweep finds the stream rewound again and proves by key once
	// more (reads, never a loss).
	moveSweepProbe = `UPDATE ingest_sweep_watermark SET probe_seq = $2, probe_at = $3
    WHERE stream = $1 AND stream_created = $4 AND (probe_seq IS NULL OR probe_seq < $2)`
)

// sweepStoredDLQ are the sequences from $3 through $4 of the DLQ stream
// $5 that have a row, or whose row retention removed (its key kept), among
// those stored between $1 and $2 (sweepStoredAdvisory: the same for the
// advisory stream). The time range is what keeps them cheap:
// dead_lettered_at is the stored time of the message, so
// dead_letters_source_key_idx (dead_lettered_at, source_key) reads only
// the rows of the step's messages (and sweepSlop's worth on either side),
// and partition pruning leaves the other days out; no index is added to
// dead_letters for the sweep (every index costs ingest,
// docs/BENCHMARKS.md). A DLQ message's row names it in source_stream and
// source_seq; an advisory's names the original in the watched stream
// there, and the advisory only in its delivery ("<stream> #<seq> stored
// <time>", quarantine_delivery_position, as retention's kept keys do),
// read only for the rows whose delivery starts with the stream's name.
// The kept keys are looked up by dead_letters_purged_stream_idx; the time
// range leaves out the keys of a stream made before under the same name,
// whose sequences were the same numbers.
const (
	sweepStoredDLQ = `
SELECT d.source_seq FROM dead_letters d
WHERE d.dead_lettered_at BETWEEN $1 AND $2 AND d.source_kind = 'dlq' AND d.source_stream = $5 AND d.source_seq BETWEEN $3 AND $4
UNION ALL ` + sweepStoredPurged
	sweepStoredAdvisory = `
SELECT p.seq FROM dead_letters d CROSS JOIN LATERAL quarantine_delivery_position(d.delivery) p
WHERE d.dead_lettered_at BETWEEN $1 AND $2 AND d.source_kind = 'advisory' AND starts_with(d.delivery, $5 || ' #')
  AND p.stream = $5 AND p.seq BETWEEN $3 AND $4
UNION ALL ` + sweepStoredPurged
	sweepStoredPurged = `
SELECT k.stream_seq FROM dead_letters_purged k
WHERE k.stream = $5 AND k.stream_seq BETWEEN $3 AND $4 AND k.dead_lettered_at BETWEEN $1 AND $2`
)

// sweep proves stream's messages stored up to its consumer's ack floor,
// from where the last sweep stopped, at most sweepSteps steps of
// sweepStep sequences (sweepStep). It stores what it finds missing, logs
// it, and counts it (quarantine_ingest_swept_total). Busy in the result
// says another replica was sweeping the stream. A failure to read the
// rows or the stream, or to insert, ends the sweep with what it proved
// recorded; the next sweep goes on from there.
//
// A dead letter the sweep cannot store on its own (PostgreSQL refuses it
// in every form, its read from the stream or its advisory's original's
// fails) is held, for at most sweepHeldTries sweeps when that is its own
// doing (ingest_sweep_held.go): the watermark stays before the first held
// one, and every sweep tries each held one again first (sweepHeld); but it does
// not hold the rest: the steps go on after the last sequence looked at
// (proven_to), so what lies after it is proven and stored. Both are kept
// with the watermark (migration 0043): a console restarted, or another
// replica, goes on where the last stopped.
// quarantine_ingest_sweep_behind_sequences says how far the watermark is
// behind the ack floor after the sweep.
func (in *Ingester) sweep(ctx context.Context, stream string) (sweepResult, error) {
	var total sweepResult
	if in.store == nil {
		return total, nil
	}
	// The look most sweeps end with: the watermark at the ack floor of the
	// same stream.
	var created time.Time
	var sweptTo int64
	var probe sweepProbe
	rctx, cancel := in.store.within(ctx)
	err := in.store.pool.QueryRow(rctx, readSweep, stream).Scan(&created, &sweptTo, &probe.seq, &probe.at)
	cancel()
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return total, fmt.Errorf("read the sweep's watermark of %s: %w", stream, err)
	}
	have := err == nil
	cons, si, err := in.sweepState(ctx, stream)
	if err != nil {
		return total, err
	}
	if have && created.Equal(streamCreated(si)) && uint64(sweptTo) >= cons.AckFloor.Stream {
		rewound, err := in.rewound(ctx, stream, si, probe)
		if err != nil {
			return total, err
		}
		if !rewound { // else the steps find it again, under the lock
			in.metrics.SweepBehind.WithLabelValues(stream).Set(0)
			return total, in.moveProbe(ctx, stream, si, probe)
		}
	}
	if !have {
		sctx, cancel := in.store.within(ctx)
		_, err := in.store.pool.Exec(sctx, startSweep, stream, streamCreated(si), int64(firstSeq(si)-1))
		cancel()
		if err != nil {
			return total, fmt.Errorf("start the sweep's watermark of %s: %w", stream, err)
		}
	}
	for i := range sweepSteps {
		st, err := in.sweepStep(ctx, stream, i == 0)
		total.add(st.res)
		if !st.res.Busy && st.ackFloor != 0 {
			in.metrics.SweepBehind.WithLabelValues(stream).Set(float64(st.ackFloor - min(st.sweptTo, st.ackFloor)))
		}
		if err != nil || !st.more {
			return total, err
		}
	}
	return total, nil
}

// stepOut is what a step did and found.
type stepOut struct {
	res  sweepResult
	more bool // the ack floor is past what the step looked at
	// sweptTo is the watermark the step left, ackFloor the consumer's ack
	// floor it read (0: it read none).
	sweptTo, ackFloor uint64
}

// sweepMark is a stream's row of ingest_sweep_watermark: every sequence
// up to sweptTo is proven, and every one after it up to provenTo but
// those held.
type sweepMark struct {
	sweptTo, provenTo uint64
	held              []uint64 // in order
}

func (w sweepMark) equal(o sweepMark) bool {
	return w.sweptTo == o.sweptTo && w.provenTo == o.provenTo && slices.Equal(w.held, o.held)
}

// sweepState reads stream's consumer and the stream.
func (in *Ingester) sweepState(ctx context.Context, stream string) (*jetstream.ConsumerInfo, *jetstream.StreamInfo, error) {
	cons, err := in.consumerInfo(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	s, err := in.js.Stream(ctx, stream)
	if err != nil {
		return nil, nil, fmt.Errorf("look up stream %s: %w", stream, err)
	}
	return cons, s.CachedInfo(), nil
}

// streamCreated is when the stream was made, as PostgreSQL keeps it.
func streamCreated(si *jetstream.StreamInfo) time.Time { return si.Created.Truncate(time.Microsecond) }

// firstSeq is the first sequence the stream holds, or would hold next
// (an empty stream's first is past its last; a stream that never held
// one's is 0).
func firstSeq(si *jetstream.StreamInfo) uint64 { return max(si.State.FirstSeq, 1) }

// sweepStep, holding stream's watermark locked, tries the held dead
// letters again when retry (the first step of a sweep: sweepHeld), then
// proves the next at most sweepStep sequences after the last looked at
// (proven_to) up to the consumer's ack floor (both read once the lock is
// held: another replica may have moved them), and records what it did:
// the watermark before the first still held, or at what it proved.
func (in *Ingester) sweepStep(ctx context.Context, stream string, retry bool) (out stepOut, err error) {
	var stepErr error
	res := &out.res
	err = in.store.inTx(ctx, func(tx boundedTx) error {
		var created time.Time
		var sweptTo, provenTo int64
		var held []int64
		var probe sweepProbe
		var strict sweepStrict
		switch err := tx.QueryRow(ctx, lockSweep, stream).Scan(&created, &sweptTo, &provenTo, &held, &probe.seq, &probe.at, &strict.from, &strict.to); {
		case errors.Is(err, pgx.ErrNoRows):
			res.Busy = true
			return nil
		case err != nil:
			return err
		}
		if in.sweeping.during != nil {
			in.sweeping.during()
		}
		cons, si, err := in.sweepState(ctx, stream)
		if err != nil {
			stepErr = err
			return nil
		}
		out.sweptTo, out.ackFloor = uint64(sweptTo), cons.AckFloor.Stream
		in.sweepCountsOf(stream, streamCreated(si))
		was := sweepMark{sweptTo: uint64(sweptTo), provenTo: max(uint64(provenTo), uint64(sweptTo))}
		for _, h := range held {
			was.held = append(was.held, uint64(h))
		}
		w := was
		w.held = slices.Clone(was.held)
		madeAgain := !created.Equal(streamCreated(si))
		first := firstSeq(si)
		if madeAgain {
			// Its sequences were another stream's: from the first again.
			in.log.Warn("the stream was made again since the last sweep: sweeping it from its first sequence",
				"stream", stream, "consumer", in.cfg.Durable, "from_seq", first, "swept_to_before", sweptTo)
			w = sweepMark{sweptTo: first - 1, provenTo: first - 1} // its counts forgotten (sweepCountsOf)
			probe, strict = sweepProbe{}, sweepStrict{}
		}
		wasProbe, wasStrict := probe, strict
		switch rewound, err := in.rewound(ctx, stream, si, probe); {
		case err != nil:
			stepErr = err
			return nil
		case rewound:
			from, err := in.rewoundFrom(ctx, stream, si, probe)
			if err != nil {
				stepErr = err
				return nil
			}
			rowsTo, err := lastRowSeq(ctx, tx, stream, stream == in.cfg.Stream, probe.at.Add(-rewindMargin))
			if err != nil {
				stepErr = err
				return nil
			}
			strict = strict.with(from, max(uint64(*probe.seq), w.provenTo, rowsTo))
			in.log.Warn("the stream lost messages it had stored (a server that crashed before writing them, or restored from a copy) and numbers new ones with their sequences: "+
				"sweeping again from where the loss may begin, each message by its own source key up to the last one the sweep had seen or a row names",
				"stream", stream, "consumer", in.cfg.Durable, "from_seq", from, "strict_to_seq", *strict.to, "probe_seq", *probe.seq, "last_seq", si.State.LastSeq,
				"swept_to_before", sweptTo)
			w.provenTo = min(w.provenTo, from-1)
			w.held = slices.DeleteFunc(w.held, func(seq uint64) bool { return seq >= from })
			in.sweepForget(stream, func(seq uint64) bool { return seq < from })
			probe = sweepProbe{}
		}
		if w.provenTo+1 < first {
			in.log.Warn("the stream deleted messages before the sweep came to them (its limits, a purge): whether each was stored, the sweep cannot tell",
				"stream", stream, "consumer", in.cfg.Durable, "from_seq", w.provenTo+1, "to_seq", first-1)
			w.provenTo = first - 1
		}
		if gone := len(w.held) - len(dropBelow(w.held, first)); gone > 0 {
			in.log.Warn("dead letters the sweep held (it could not store them) were deleted from the stream before it could: never stored",
				"stream", stream, "consumer", in.cfg.Durable, "seqs", w.held[:gone])
			res.Deleted += uint64(gone)
			in.metrics.Swept.WithLabelValues(stream, sweptDeleted).Add(float64(gone))
			w.held = dropBelow(w.held, first)
		}
		if retry && len(w.held) > 0 {
			stepErr = in.sweepHeld(ctx, stream, &w, res)
		}
		if cons.AckFloor.Stream > si.State.LastSeq {
			// Reset forward past the stream's end (a consumer reset to a
			// sequence one digit too long, or made by hand so): the
			// sequences between are the stream's to come, never delivered
			// by the consumer. The sweep proves only what the stream
			// assigned, and stores the dead letters that arrive there as
			// it comes to them.
			in.log.Warn("the ingest consumer's ack floor is past the stream's last sequence: the dead letters the stream stores up to it are never delivered, and are stored by the sweep",
				"stream", stream, "consumer", in.cfg.Durable, "ack_floor", cons.AckFloor.Stream, "last_seq", si.State.LastSeq)
		}
		// Never past the stream's last sequence: one it has not assigned
		// yet is no message gone (TestRev40SweepProvesNothingPastTheStreamsEnd).
		if start, to := w.provenTo+1, min(cons.AckFloor.Stream, si.State.LastSeq, w.provenTo+sweepStep); stepErr == nil && len(w.held) < sweepHeldMax && to >= start {
			var r sweepResult
			var more []uint64
			var stop uint64
			to, byKey := strict.step(start, to)
			if byKey {
				more, stop, r, stepErr = in.sweepByKey(ctx, stream, start, to)
			} else {
				more, stop, r, stepErr = in.sweepRange(ctx, stream, si, start, to)
			}
			res.add(r)
			w.held, w.provenTo = append(w.held, more...), to
			if stop != 0 {
				w.provenTo = stop - 1
			}
			if len(w.held) > sweepHeldMax {
				// Looked at again once some are stored.
				w.provenTo, w.held = w.held[sweepHeldMax]-1, w.held[:sweepHeldMax]
			}
		}
		out.more = stepErr == nil && w.provenTo < cons.AckFloor.Stream && len(w.held) < sweepHeldMax
		w.sweptTo = w.provenTo
		if len(w.held) > 0 {
			w.sweptTo = w.held[0] - 1
		}
		out.sweptTo = w.sweptTo
		// What is no longer held is stored or gone: its counts go. Those
		// past what was looked at keep theirs (held past sweepHeldMax).
		in.sweepForget(stream, func(seq uint64) bool { return seq > w.provenTo || slices.Contains(w.held, seq) })
		probe, strict = probe.next(si), strict.past(w.provenTo)
		if !madeAgain && w.equal(was) && probe.equal(wasProbe) && strict.equal(wasStrict) {
			return nil
		}
		keep := make([]int64, len(w.held))
		for i, h := range w.held {
			keep[i] = int64(h)
		}
		_, err = tx.Exec(ctx, advanceSweep, stream, streamCreated(si), int64(w.sweptTo), int64(w.provenTo), keep, probe.seq, probe.at, strict.from, strict.to)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("advance the sweep's watermark of %s: %w", stream, err)
	}
	return out, stepErr
}

// dropBelow returns the sequences of seqs (in order) from first on.
func dropBelow(seqs []uint64, first uint64) []uint64 {
	i, _ := slices.BinarySearch(seqs, first)
	return seqs[i:]
}

// sweepHeld tries the dead letters w holds again, each by its sequence,
// and keeps in w those it still cannot store. One stored meanwhile (a
// delivery of it) is found stored by its source key (already_stored).
func (in *Ingester) sweepHeld(ctx context.Context, stream string, w *sweepMark, res *sweepResult) error {
	held := w.held
	res.From, res.To, res.Missing = held[0], held[len(held)-1], uint64(len(held))
	var r sweepResult
	still, stop, err := in.sweepStore(ctx, stream, held, &r)
	if stop != 0 {
		still = append(still, dropBelow(held, stop)...)
	}
	w.held = still
	in.countSwept(stream, r)
	res.Stored, res.AlreadyStored, res.Deleted = res.Stored+r.Stored, res.AlreadyStored+r.AlreadyStored, res.Deleted+r.Deleted
	if r.Stored > 0 || r.Deleted > 0 {
		in.log.Warn("dead letters the sweep held (it could not store them before) tried again: stored those the stream still held; deleted ones were gone from the stream, never stored",
			"stream", stream, "consumer", in.cfg.Durable, "held", len(held), "first_held_seq", held[0], "last_held_seq", held[len(held)-1],
			"stored", r.Stored, "already_stored", r.AlreadyStored, "deleted", r.Deleted, "still_held", len(still))
	}
	return err
}

// countSwept counts what a sweep did with the missing dead letters in
// quarantine_ingest_swept_total.
func (in *Ingester) countSwept(stream string, r sweepResult) {
	in.metrics.Swept.WithLabelValues(stream, sweptStored).Add(float64(r.Stored))
	in.metrics.Swept.WithLabelValues(stream, sweptAlreadyStored).Add(float64(r.AlreadyStored))
	in.metrics.Swept.WithLabelValues(stream, sweptDeleted).Add(float64(r.Deleted))
	in.metrics.Swept.WithLabelValues(stream, sweptNotWatched).Add(float64(r.NotWatched))
}

// storeSwept stores the messages at seqs of stream that a step of from
// through to looked at (sweepStore), counts what became of them, and
// returns the fields of the step's log line: the step, what (the caller's
// own), and what became of them.
func (in *Ingester) storeSwept(ctx context.Context, stream string, from, to uint64, seqs []uint64, res *sweepResult, what ...any) (held []uint64, stop uint64, fields []any, err error) {
	held, stop, err = in.sweepStore(ctx, stream, seqs, res)
	in.countSwept(stream, *res)
	fields = append([]any{"stream", stream, "consumer", in.cfg.Durable, "from_seq", from, "to_seq", to}, what...)
	fields = append(fields, "stored", res.Stored, "already_stored", res.AlreadyStored, "deleted", res.Deleted, "held", len(held))
	if stop != 0 {
		fields = append(fields, "stopped_at_seq", stop)
	}
	return held, stop, fields, err
}

// sweepRange proves stream's sequences from through to. It returns those
// it holds (could not store, in order), and stop, the first sequence from
// which on it proved nothing (0: it went through to): a read from the
// stream or of the rows, or an insert, that failed, with err.
func (in *Ingester) sweepRange(ctx context.Context, stream string, si *jetstream.StreamInfo, from, to uint64) (held []uint64, stop uint64, res sweepResult, err error) {
	res.From, res.To = from, to
	// The stored times of the first message of the range and of the first
	// after it bound those of the range's.
	first, err := readStored(ctx, in.js, stream, from, true)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && first.Seq > to):
		return nil, 0, res, nil // the stream holds none of them
	case err != nil && sweepWide(err):
		return nil, from, res, err
	case err != nil:
		// That message's own failure (sweepStore holds it): the rows are
		// looked for from when the stream was made, a longer range read
		// only then, rather than the range never being proven.
		first, err = &storedMsg{Seq: from, Time: streamCreated(si)}, nil
	}
	// Never before the stream was made: a stream made again under the
	// same name numbers from 1 again, and the rows of the one before, of
	// the same sequences, may lie within sweepSlop.
	lower, upper := first.Time.Add(-sweepSlop), si.State.LastTime.Add(sweepSlop)
	if created := streamCreated(si); lower.Before(created) {
		lower = created
	}
	switch after, err := readStored(ctx, in.js, stream, to+1, true); {
	case err == nil:
		upper = after.Time.Add(sweepSlop)
	case sweepWide(err):
		return nil, from, res, err
	} // not found, or that message's own failure: up to the stream's last
	if upper.Before(first.Time) {
		upper = first.Time.Add(sweepSlop)
	}
	missing, err := in.sweepMissing(ctx, stream, lower, upper, first.Seq, to)
	if err != nil {
		return nil, from, res, err
	}
	res.Missing = uint64(len(missing))
	if len(missing) == 0 {
		return nil, 0, res, nil
	}
	held, stop, fields, err := in.storeSwept(ctx, stream, from, to, missing, &res,
		"missing", res.Missing, "first_missing_seq", missing[0], "last_missing_seq", missing[len(missing)-1])
	if res.Stored == 0 && res.Deleted == 0 {
		in.log.Debug("the sweep found rows for dead letters it had not found in the time range it looked in", fields...)
		return held, stop, res, err
	}
	in.log.Warn("dead letters acked on the ingest consumer had no row (taken off it by another client, or passed over by a setting changed by hand): "+
		"the sweep stored those the stream still held from it; deleted ones were gone from the stream, never stored", fields...)
	return held, stop, res, err
}

// sweepMissing returns the sequences from through to of stream that have
// no row and no purged key among those stored between lower and upper.
func (in *Ingester) sweepMissing(ctx context.Context, stream string, lower, upper time.Time, from, to uint64) ([]uint64, error) {
	query := sweepStoredDLQ
	if stream != in.cfg.Stream {
		query = sweepStoredAdvisory
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	rows, err := in.store.pool.Query(ctx, query, lower, upper, int64(from), int64(to), stream)
	if err != nil {
		return nil, fmt.Errorf("read the rows of %s #%d–#%d: %w", stream, from, to, err)
	}
	stored := make([]bool, to-from+1)
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&seq}, func() error {
		stored[uint64(seq)-from] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the rows of %s #%d–#%d: %w", stream, from, to, err)
	}
	var missing []uint64
	for i, ok := range stored {
		if !ok {
			missing = append(missing, from+uint64(i))
		}
	}
	return missing, nil
}

// sweepStore reads the missing sequences (in order) from the stream and
// stores them, in batches of at most BatchSize records and MaxBatchBytes.
// A sequence the stream no longer holds is counted deleted: it is not the
// sweep's to store. One that cannot be read for a reason of its own (or
// whose advisory's original cannot, sweptRecord), and one PostgreSQL
// refuses in every form, are held: returned, in order, for the next
// sweeps to try again, each counted (sweepFailed) until its position form
// is stored instead (ingest_sweep_held.go); however many there are, the
// others are stored. A read's failure is its message's own only while
// another read of the stream gives a message (sweepAnswers). A read that
// fails for every message (sweepWide), or an insert that fails
// (PostgreSQL unreachable or busy), ends it with its error and stop, the
// first missing sequence it did not prove (0: it went through them all).
func (in *Ingester) sweepStore(ctx context.Context, stream string, missing []uint64, res *sweepResult) (held []uint64, stop uint64, err error) {
	setStop := func(seq uint64) {
		if stop == 0 || seq < stop {
			stop = seq
		}
	}
	var recs []Record
	var seqs []uint64
	size := 0
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		refused, err := in.sweepInsert(ctx, stream, recs, seqs, res)
		if err != nil {
			setStop(seqs[0])
		}
		held = append(held, refused...)
		recs, seqs, size = recs[:0], seqs[:0], 0
		return err
	}
	add := func(rec Record, seq uint64) error {
		recs, seqs = append(recs, rec), append(seqs, seq)
		size += len(rec.Payload) + len(rec.HeaderBlock)
		if len(recs) >= in.cfg.BatchSize || size >= in.cfg.MaxBatchBytes {
			return flush()
		}
		return nil
	}
	answered := false // a read of the stream in this step gave a message
	hold := func(seq uint64, why error) {
		in.log.Warn("dead letter the sweep found acked without a row not stored yet: it (or its advisory's original) could not be read; the watermark stays before it and the next sweep tries it again",
			"stream", stream, "consumer", in.cfg.Durable, "seq", seq, "err", why)
		held = append(held, seq)
	}
	for i := 0; i < len(missing) && err == nil; {
		// The first message at or after the next missing one: whatever
		// lies before it is gone from the stream.
		var st *storedMsg
		st, err = readStored(ctx, in.js, stream, missing[i], true)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			res.Deleted += uint64(len(missing) - i)
			err = nil
			break
		}
		if err != nil && !sweepWide(err) && !answered {
			// The message's own only while the stream gives others.
			why := err
			if err = in.sweepAnswers(ctx, stream, missing[i], why); err == nil {
				answered, err = true, why
			}
		}
		if err != nil {
			if sweepWide(err) {
				setStop(missing[i])
				continue
			}
			seq, why := missing[i], err
			i, err = i+1, nil
			if !in.sweepFailed(stream, seq) {
				hold(seq, why)
				continue
			}
			in.log.Error("dead letter the sweep found acked without a row not read from the stream in sweep after sweep: stored where it lies, flagged message_unreadable",
				"stream", stream, "consumer", in.cfg.Durable, "seq", seq, "sweeps", sweepHeldTries, "err", why)
			err = add(unreadForm(in.sweptKind(stream), stream, seq, why), seq)
			continue
		}
		answered = true
		for i < len(missing) && missing[i] < st.Seq {
			res.Deleted++
			i++
		}
		if i == len(missing) || missing[i] != st.Seq {
			continue // stored: on to the next missing one
		}
		i++
		rec, later := in.sweptRecord(ctx, stream, st)
		switch {
		case errors.Is(later, errNotWatched):
			res.NotWatched++ // not captured, by configuration: nothing to store
		case later != nil && sweepWide(later):
			setStop(st.Seq)
			err = later
		case later != nil:
			hold(st.Seq, later)
		default:
			err = add(rec, st.Seq)
		}
	}
	if ferr := flush(); err == nil {
		err = ferr
	}
	slices.Sort(held)
	if stop != 0 {
		held = held[:len(held)-len(dropBelow(held, stop))]
	}
	return held, stop, err
}

// sweepInsert stores recs (made from the stream messages seqs) through
// Store.Insert, as a batch of deliveries is stored, and counts them as
// ingest does, but not in quarantine_ingest_lag_seconds (observeSwept).
// It returns the sequences PostgreSQL refused in every form (logged and
// counted as the writers do), for the next sweeps to try again; none
// stored when the insert failed. One refused so in sweepHeldTries sweeps
// (sweepFailed) is tried whole once more and, refused again, stored in
// its position form instead (storeRefusedWholeOrPosition,
// contentRefusedForm), and returned only when PostgreSQL refuses that
// too. Those kept under another day (sweepUnkept) are counted found
// stored, not inserted.
func (in *Ingester) sweepInsert(ctx context.Context, stream string, recs []Record, seqs []uint64, res *sweepResult) ([]uint64, error) {
	recs, seqs, err := in.sweepUnkept(ctx, stream, recs, seqs, res)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	ins, err := in.sweepInsertCounted(ctx, recs, res)
	var deferred []int
	if err != nil && (Busy(err) || LostRace(err)) {
		ins, deferred, err = in.sweepNarrow(ctx, recs, res, ins, err)
	}
	if err != nil {
		return nil, err
	}
	var refused, dueSeqs []uint64
	var due []Record
	for _, i := range deferred {
		// As a writer defers it (storeBatch): PostgreSQL, not its data,
		// fails it, so it is never stored in position form for that;
		// the others are stored, and the next sweep tries it again.
		in.metrics.Deferred.Inc()
		in.log.Warn("dead letter swept from the stream not stored yet: PostgreSQL kept failing its statement for a reason not its data (a timeout, memory, a lock); the next sweep tries it again",
			logFields(&recs[i])...)
		refused = append(refused, seqs[i])
	}
	for _, u := range ins.Unstorable {
		r := &recs[u.Index]
		in.metrics.Unstorable.Inc()
		if in.sweepFailed(stream, seqs[u.Index]) {
			due, dueSeqs = append(due, *r), append(dueSeqs, seqs[u.Index])
			continue
		}
		in.log.Error("dead letter swept from the stream not stored: PostgreSQL refused it in parsed and in raw form; the next sweep tries again",
			append(logFields(r), "err", u.Err)...)
		refused = append(refused, seqs[u.Index])
	}
	for _, rf := range ins.Raw {
		in.storedRaw("dead letter swept from the stream", &recs[rf.Index], rf.Err)
	}
	if len(due) == 0 {
		return refused, nil
	}
	got, err := storeRefusedWholeOrPosition(due, func(i int, cause error) Record {
		return contentRefusedForm(due[i], cause, fmt.Sprintf("in %d sweeps running", sweepHeldTries), stream, dueSeqs[i])
	}, func(recs []Record) (InsertResult, error) { return in.sweepInsertCounted(ctx, recs, res) })
	if err != nil {
		return nil, err
	}
	for _, rf := range got.Raw {
		in.storedRaw("dead letter swept from the stream", &due[rf.Index], rf.Err)
	}
	for _, p := range got.Positions {
		in.log.Error("dead letter swept from the stream refused by PostgreSQL in parsed and in raw form in sweep after sweep: stored without its content, flagged content_refused",
			append(logFields(&due[p.Index]), "sweeps", sweepHeldTries, "err", p.Err)...)
	}
	for _, u := range got.Unstored {
		// Nothing of the message's is left in it: PostgreSQL refuses
		// every row, and the message is held as the rest would be.
		in.log.Error("dead letter swept from the stream not stored: PostgreSQL refused even its position form; the next sweep tries again",
			append(logFields(&due[u.Index]), "err", u.Err)...)
		refused = append(refused, dueSeqs[u.Index])
	}
	return refused, nil
}

// sweepNarrow narrows a swept batch whose insert failed for a reason not
// its data (failErr: Busy, a lost lock race; failed is what that insert
// stored) down to the records that keep failing, as a writer's storeBatch
// does: when PostgreSQL takes a dead letter of its own (Store.Canary), the
// batch is bisected (split), the others are stored and the records that
// fail alone are returned deferred (their indexes). Otherwise PostgreSQL
// is busy for everyone and the insert's error ends the sweep's step, as
// before: one dead letter whose statement always times out no longer
// stops every sweep of its stream at it.
func (in *Ingester) sweepNarrow(ctx context.Context, recs []Record, res *sweepResult, failed InsertResult, failErr error) (InsertResult, []int, error) {
	if ctx.Err() != nil {
		return failed, nil, failErr
	}
	if cerr := in.store.Canary(ctx); cerr != nil {
		return failed, nil, failErr
	}
	got, deferred, err := in.split(ctx, recs, 0)
	in.metrics.countStored(got.Inserted, false)
	res.Stored += uint64(len(got.Inserted))
	got.Raw = addRaw(failed.Raw, got.Raw)
	if err != nil {
		return got, nil, fmt.Errorf("store %d dead letters swept from the stream: %w", len(recs), err)
	}
	// What the failed insert stored, the bisection found stored: this
	// sweep stored it (counted above, in sweepInsertCounted).
	res.AlreadyStored += uint64(len(recs) - len(failed.Inserted) - len(got.Inserted) - len(got.Unstorable) - len(deferred))
	return got, deferred, nil
}

// sweepInsertCounted stores recs through Store.Insert and counts what it
// did: stored, found already stored, the statements it took.
func (in *Ingester) sweepInsertCounted(ctx context.Context, recs []Record, res *sweepResult) (InsertResult, error) {
	start := time.Now()
	ins, err := in.store.Insert(ctx, recs)
	in.metrics.IsolationStatements.Add(float64(max(ins.Statements-1, 0)))
	in.metrics.observeSwept(len(recs), time.Since(start), ins.Inserted)
	res.Stored += uint64(len(ins.Inserted))
	if err != nil {
		in.metrics.countStoreFailure(err)
		return ins, fmt.Errorf("store %d dead letters swept from the stream: %w", len(recs), err)
	}
	res.AlreadyStored += uint64(len(recs) - len(ins.Inserted) - len(ins.Unstorable))
	return ins, nil
}

// sweptKind is the source kind of the rows made from stream's messages.
func (in *Ingester) sweptKind(stream string) string {
	if stream == in.cfg.Stream {
		return SourceDLQ
	}
	return SourceAdvisory
}

// sweepKeptUnderADay are the source keys among $1 of a row kept under the
// midnight (UTC) of any day dead_letters has a partition for, or of a key
// retention kept for stream $2's sequences $3. Ingest keeps a dead letter
// JetStream stored by an implausible clock under the day it arrived
// (checkStoredAt), outside the stored-time range sweepMissing looks in,
// and the sweep's record of it goes under the day of the sweep: the
// source key's unique index, with dead_lettered_at, would take it as a
// second row. Asked only for what sweepMissing found missing (and, after
// a loss, what sweepByKey read: storedAlready), one index probe per key
// and partition (the nested loop prunes to the day's partition at each
// day), and for the kept keys through dead_letters_purged_stream_idx; no
// index is added to dead_letters, and ingest does nothing more per
// message.
const sweepKeptUnderADay = `
SELECT d.source_key FROM (` + dayPartitions + `) p
CROSS JOIN LATERAL (SELECT d.source_key FROM dead_letters d WHERE d.dead_lettered_at = p.lo AND d.source_key = ANY($1)) d
UNION ALL
SELECT k.source_key FROM dead_letters_purged k WHERE k.stream = $2 AND k.stream_seq = ANY($3) AND k.source_key = ANY($1)`

// keptUnderAnyDay adds to kept the keys among keys (of stream's messages
// seqs) that sweepKeptUnderADay finds: a row under any day's midnight, or a
// key retention kept.
func keptUnderAnyDay(ctx context.Context, q queryer, stream string, keys [][]byte, seqs []int64, kept map[[32]byte]bool) error {
	rows, err := q.Query(ctx, sweepKeptUnderADay, keys, stream, seqs)
	if err != nil {
		return err
	}
	var key []byte
	_, err = pgx.ForEachRow(rows, []any{&key}, func() error {
		kept[[32]byte(key)] = true
		return nil
	})
	return err
}

// sweepUnkept returns recs (made from stream's messages seqs) without
// those whose source key is kept under another day (sweepKeptUnderADay),
// which it counts as found stored.
func (in *Ingester) sweepUnkept(ctx context.Context, stream string, recs []Record, seqs []uint64, res *sweepResult) ([]Record, []uint64, error) {
	keys := make([][]byte, len(recs))
	nums := make([]int64, len(seqs))
	for i := range recs {
		keys[i], nums[i] = recs[i].SourceKey[:], int64(seqs[i])
	}
	qctx, cancel := in.store.within(ctx)
	defer cancel()
	kept := map[[32]byte]bool{}
	if err := keptUnderAnyDay(qctx, in.store.pool, stream, keys, nums, kept); err != nil {
		return nil, nil, fmt.Errorf("look up the source keys of %d dead letters swept from the stream: %w", len(recs), err)
	}
	if len(kept) == 0 {
		return recs, seqs, nil
	}
	var outRecs []Record
	var outSeqs []uint64
	for i := range recs {
		if kept[recs[i].SourceKey] {
			res.AlreadyStored++
			continue
		}
		outRecs, outSeqs = append(outRecs, recs[i]), append(outSeqs, seqs[i])
	}
	return outRecs, outSeqs, nil
}

// sweptRecord makes the record of stream message st as a delivery of it
// makes it: ParseDLQ of what the NATS client would have received (records,
// clientReadWhole) for the DLQ stream, advisoryRecord for the advisory
// stream. later is set when an advisory's original could not be read and
// the message should rather be tried again at the next sweep (at most
// maxHeaderRereads sweeps, then it is stored flagged, as a delivery is;
// a failure sweepWide takes as NATS's, not the advisory's, of the original
// of an advisory read from the advisory stream counts as that advisory's,
// for maxWideDeliveries more sweeps). An advisory of a stream this replica does not watch is judged
// as a delivery is (whoseAdvisory): held as later while another running
// replica watches its stream (as many sweeps, then stored as it came),
// errNotWatched when none does (passed over, counted not_watched).
func (in *Ingester) sweptRecord(ctx context.Context, stream string, st *storedMsg) (rec Record, later error) {
	if stream != in.cfg.Stream {
		switch verdict, _ := in.whoseAdvisory(ctx, st.Subject, st.Data); verdict {
		case watchedElsewhere:
			if in.sweepRetry(stream, st.Seq) {
				return Record{}, fmt.Errorf("advisory %s #%d is of a stream another replica watches: left to it", stream, st.Seq)
			}
		case watchedByNone:
			return Record{}, errNotWatched
		}
		via := sweptReceived(stream, st)
		via.HeaderBlock = nil // the advisory path reads the headers the client read
		rec, _, err := in.advisoryRecord(ctx, via, st.Subject, st.Data)
		switch {
		case err == nil:
		case sweepWide(err) && in.sweepRetryUpTo(stream, st.Seq, maxHeaderRereads+maxWideDeliveries):
			// The advisory stream answered; the watched stream its
			// original is in (or its consumer) did not: one stream
			// without a leader, or its reads refused. Held as this
			// advisory's own (not wide: the step goes on to the others,
			// other watched streams' among them), for as many sweeps as
			// a delivery waits NATS out, then stored flagged
			// original_unreadable, as a delivery is. Were NATS itself
			// not answering, the next read of the advisory stream stops
			// the step. (TestRev37UnservedWatchedStreamHoldsOnlyItsAdvisories)
			return rec, fmt.Errorf("read the original of advisory %s #%d: its stream did not answer (%v)", stream, st.Seq, err)
		case !sweepWide(err) && in.sweepRetry(stream, st.Seq):
			return rec, fmt.Errorf("read the original of advisory %s #%d: %w", stream, st.Seq, err)
		}
		in.sweepRetried(stream, st.Seq)
		return rec, nil
	}
	via := sweptReceived(stream, st)
	replaced := strings.ContainsRune(st.Subject, utf8.RuneError)
	if replaced {
		subject, err := in.deliveredSubject(ctx, stream, st.Seq)
		if err == nil {
			via.Subject, replaced = subject, false
		} else {
			in.log.Warn("the subject of a dead letter the sweep stores holds U+FFFD, and a delivery of it (which gives its bytes) could not be had: stored with the subject JetStream's API gave, flagged",
				"stream", stream, "consumer", in.cfg.Durable, "seq", st.Seq, "err", err)
		}
	}
	rec = ParseDLQ(in.cfg.Prefix, via)
	if replaced {
		rec.flag("not_utf8:subject", "the subject %s holds U+FFFD, as JetStream's API (which the sweep read this dead letter with) writes each byte "+
			"that is not valid UTF-8: it may have been published to other bytes", short(st.Subject))
	}
	return rec, nil
}

// deliveredSubject is the subject of stream message seq as a delivery
// gives it: its bytes, where JetStream's API (readStored) gives U+FFFD
// for each byte that is not valid UTF-8, so that the sweep's record of
// it is flagged as a delivery's is (not_utf8:subject, not_utf8:item_type,
// the same reasons). Asked only for a subject holding U+FFFD: a consumer
// of its own delivers the one message (readByConsumer).
func (in *Ingester) deliveredSubject(ctx context.Context, stream string, seq uint64) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := in.js.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("read %s #%d by a delivery: %w", stream, seq, err)
	}
	st, _, err := readByConsumer(ctx, in.js, s.CachedInfo(), seq)
	switch {
	case err != nil:
		return "", fmt.Errorf("read %s #%d by a delivery: %w", stream, seq, err)
	case st.Seq != seq: // deleted since: the consumer started at the next
		return "", fmt.Errorf("read %s #%d by a delivery: %w", stream, seq, jetstream.ErrMsgNotFound)
	}
	return st.Subject, nil
}

// sweptReceived is stream message st as the ingester receives it from a
// delivery: the headers the NATS client reads of its header block and,
// when the client does not read it whole (clientReadWhole) or it has
// none, the block as stored (records reads it again from the stream then),
// as setStored takes a stored copy into a delivery. Its subject is as
// JetStream's API gives it: U+FFFD for each byte that is not valid UTF-8.
func sweptReceived(stream string, st *storedMsg) Received {
	r := Received{Subject: st.Subject, Stream: stream, Seq: st.Seq, Time: st.Time}
	if h, err := nats.DecodeHeadersMsg(st.Header); err == nil {
		r.Header = h // what the client of a delivery reads of the block, whole or not
	}
	if st.Headers != nil {
		r.Header = st.Headers // read as a NATS message: read whole
	}
	r.setStored(st, false, true)
	return r
}

// sweepRetry counts a sweep that could not read stream #seq's original and
// reports whether the next should try again.
func (in *Ingester) sweepRetry(stream string, seq uint64) bool {
	return in.sweepRetryUpTo(stream, seq, maxHeaderRereads)
}

// sweepRetryUpTo is sweepRetry for up to n sweeps.
func (in *Ingester) sweepRetryUpTo(stream string, seq uint64, n int) bool {
	in.sweeping.mu.Lock()
	defer in.sweeping.mu.Unlock()
	if in.sweeping.retries == nil {
		in.sweeping.retries = map[sweepSeq]int{}
	}
	key := sweepSeq{stream, seq}
	in.sweeping.retries[key]++
	return in.sweeping.retries[key] < n
}

// sweepRetried forgets the retries of stream #seq.
func (in *Ingester) sweepRetried(stream string, seq uint64) {
	in.sweeping.mu.Lock()
	defer in.sweeping.mu.Unlock()
	delete(in.sweeping.retries, sweepSeq{stream, seq})
}
