package dlq

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// busyAttempts is how many times in a row a statement may fail for a
// reason not its data (Busy) before the ingester looks for the record
// that causes it.
const busyAttempts = 3

// storeBatch inserts recs (made from batch), retrying the whole batch with
// backoff while PostgreSQL is unreachable or busy (Busy: a statement
// timeout, memory, a lock); false means ctx ended first. A batch busy
// busyAttempts times in a row stores its smallest record alone (probe): if
// that fails too, PostgreSQL is busy for everyone and the batch goes on
// being retried; if it works, the batch is bisected down to the records
// that keep failing, which are deferred (their indexes returned: the
// caller naks them, they come again), never stored in raw form. The
// messages are kept in progress while it retries; after cutOffAfter of
// attempts that found PostgreSQL out of reach (Unreachable) the replica is
// cut off from PostgreSQL (cutOffFromPostgres) and
// storeBatch returns false, as it does at once while the replica is cut
// off; the caller hands the batch back. An attempt that lost a lock race
// (LostRace: a deadlock, a serialization failure) is tried again at once,
// then after a backoff of its own; it is counted apart (StoreConflicts),
// neither as a store error nor toward cutOffAfter: PostgreSQL answered. Every row it stored is counted
// (observeBatch, observeStored), those of failed attempts and of the probe
// included, whether it returns true or false: a later insert of the same
// records finds them stored and does not report them.
func (in *Ingester) storeBatch(ctx context.Context, batch []item, recs []Record) (InsertResult, []int, bool) {
	backoff := 100 * time.Millisecond
	var inserted []Inserted // rows a failed attempt stored: the retry skips them
	// giveUp counts the rows failed attempts stored before the batch is
	// handed back: its redelivery finds them stored and never counts them.
	giveUp := func() (InsertResult, []int, bool) {
		in.metrics.observeStored(inserted)
		return InsertResult{}, nil, false
	}
	busy := 0
	var unreachable time.Time // since the first of the attempts in a row PostgreSQL was out of reach
	var raceBackoff time.Duration
	for attempt := 1; ; attempt++ {
		start := time.Now()
		res, err := in.store.Insert(ctx, recs)
		inserted = append(inserted, res.Inserted...)
		in.metrics.IsolationStatements.Add(float64(res.Statements - 1))
		if err == nil {
			res.Inserted = inserted
			in.metrics.observeBatch(len(recs), time.Since(start), inserted)
			return res, nil, true
		}
		if ctx.Err() != nil {
			return giveUp()
		}
		if LostRace(err) {
			// PostgreSQL answered and rolled the attempt back; the other
			// transaction (retention emptying a day, a writer of the same
			// rows) goes on, and this one, tried again, waits for it.
			in.metrics.StoreConflicts.Inc()
			unreachable = time.Time{}
			in.log.Info("storing dead letters lost a lock race in PostgreSQL; trying again",
				"batch", len(recs), "attempt", attempt, "retry_in", raceBackoff, "err", err)
			if raceBackoff > 0 {
				for _, it := range batch {
					_ = it.msg.InProgress()
				}
				if !sleep(ctx, raceBackoff) {
					return giveUp()
				}
			}
			raceBackoff = min(max(2*raceBackoff, 10*time.Millisecond), 5*time.Second)
			continue
		}
		raceBackoff = 0
		busy++
		if !Busy(err) {
			busy = 0
		}
		if busy >= busyAttempts {
			probed := true
			var probe InsertResult
			if len(recs) > 1 {
				probe, probed = in.probe(ctx, recs)
				// The bisection finds the probe's row stored and does not
				// report it: it is counted from the probe's result.
				inserted = append(inserted, probe.Inserted...)
			}
			if probed {
				res, deferred, ok := in.split(ctx, recs, 0)
				inserted = append(inserted, res.Inserted...)
				if ok {
					res.Inserted, res.Raw = inserted, withRefused(res.Raw, probe.Raw)
					in.metrics.observeBatch(len(recs), time.Since(start), inserted)
					return res, deferred, true
				}
			}
			if ctx.Err() != nil {
				return giveUp()
			}
		}
		in.metrics.StoreErrors.Inc()
		// Only PostgreSQL out of reach cuts the replica off: a statement
		// that times out or waits for a lock (Busy) is what the probe and
		// the bisection above are for, after busyAttempts, and with a
		// statement timeout of a minute they come long after cutOffAfter.
		switch {
		case !Unreachable(err):
			unreachable = time.Time{}
		case unreachable.IsZero():
			unreachable = start
		}
		if !unreachable.IsZero() && time.Since(unreachable) >= cutOffAfter {
			in.cutOffFromPostgres(err)
		}
		if in.cutOff.Load() {
			in.log.Warn("storing dead letters failed; handing them back", "batch", len(recs), "attempt", attempt, "err", err)
			return giveUp()
		}
		in.log.Warn("storing dead letters failed; will retry, messages stay unacked",
			"batch", len(recs), "attempt", attempt, "retry_in", backoff, "err", err)
		for _, it := range batch {
			_ = it.msg.InProgress() // keep them ours while we wait; if lost, redelivery is deduplicated
		}
		if !sleep(ctx, backoff) {
			return giveUp()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// sleep waits d and a jitter of up to half of it; false when ctx ended
// first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d + rand.N(d/2)):
		return true
	case <-ctx.Done():
		return false
	}
}

// probe stores the smallest record of recs alone and reports whether that
// worked: when even it fails, what fails is PostgreSQL, not a record. It
// returns what the insert did, with the indexes of recs: a row it stored
// is found stored by every later insert of the batch, which does not
// report it, so the caller counts it from this result.
func (in *Ingester) probe(ctx context.Context, recs []Record) (InsertResult, bool) {
	size := func(r Record) int { return len(r.Payload) + len(r.HeaderBlock) }
	i := 0
	for j := range recs {
		if size(recs[j]) < size(recs[i]) {
			i = j
		}
	}
	res, err := in.store.Insert(ctx, recs[i:i+1])
	in.metrics.IsolationStatements.Add(float64(res.Statements))
	for k := range res.Raw {
		res.Raw[k].Index = i
	}
	for k := range res.Unstorable {
		res.Unstorable[k].Index = i
	}
	return res, err == nil
}

// withRefused is raw with the records of more whose index it does not
// hold yet: a record the probe stored in its raw form is reported by the
// bisection again only when its parsed form is refused again.
func withRefused(raw, more []Refused) []Refused {
	for _, m := range more {
		if !slices.ContainsFunc(raw, func(r Refused) bool { return r.Index == m.Index }) {
			raw = append(raw, m)
		}
	}
	return raw
}

// bisect stores recs (recs[0] is index base of the batch) in one
// statement, and splits them when it fails for a reason not their data;
// a record that fails alone is retried busyAttempts times with backoff,
// then deferred. It reports false, with what it stored, when PostgreSQL turns
// unreachable or ctx ends: the caller retries the whole batch.
func (in *Ingester) bisect(ctx context.Context, recs []Record, base int) (InsertResult, []int, bool) {
	res, err := in.store.Insert(ctx, recs)
	in.metrics.IsolationStatements.Add(float64(res.Statements))
	backoff := 100 * time.Millisecond
	for attempt := 1; err != nil && Busy(err) && len(recs) == 1 && attempt < busyAttempts; attempt++ {
		if !sleep(ctx, backoff) {
			return res, nil, false
		}
		backoff *= 2
		var again InsertResult
		again, err = in.store.Insert(ctx, recs)
		in.metrics.IsolationStatements.Add(float64(again.Statements))
		again.Inserted = append(res.Inserted, again.Inserted...)
		res = again
	}
	switch {
	case err == nil:
		for i := range res.Raw {
			res.Raw[i].Index += base
		}
		for i := range res.Unstorable {
			res.Unstorable[i].Index += base
		}
		return res, nil, true
	case !Busy(err) || ctx.Err() != nil:
		return res, nil, false
	case len(recs) == 1:
		return res, []int{base}, true
	}
	return in.split(ctx, recs, base)
}

// split bisects each half of recs (recs[0] is index base of the batch),
// or the one record, and puts the results together.
func (in *Ingester) split(ctx context.Context, recs []Record, base int) (InsertResult, []int, bool) {
	if len(recs) == 1 {
		return in.bisect(ctx, recs, base)
	}
	mid := len(recs) / 2
	left, ldef, ok := in.bisect(ctx, recs[:mid], base)
	if !ok {
		return left, nil, false
	}
	right, rdef, ok := in.bisect(ctx, recs[mid:], base+mid)
	right.Inserted = append(left.Inserted, right.Inserted...)
	right.Raw, right.Unstorable = append(left.Raw, right.Raw...), append(left.Unstorable, right.Unstorable...)
	return right, append(ldef, rdef...), ok
}
