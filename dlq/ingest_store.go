package dlq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// busyAttempts is how many times in a row a statement may fail for a
// reason not its data (Busy) before the ingester looks for the record
// that causes it.
const busyAttempts = 3

// raceAttempts is how many times in a row an insert may lose a lock race
// (LostRace) before the ingester takes its batch as a busy one and looks
// for the record that loses (errLostRaces). A race lost again at once is
// rare: the retry waits in the queue behind the winner (retention emptying
// a day, another writer of the same rows), and InTx, for one person's
// action, gives up after three. Ingest is asked a little more patience,
// five tries within about 100 ms (at once, then 10, 20 and 40 ms and a
// jitter), because narrowing a batch down costs statements and defers a
// record for RetryUnstorable; past that, whatever keeps taking its locks
// in a circle with the batch is not going away, and the one record that
// meets it must not keep its batchmates unstored.
const raceAttempts = 5

// errLostRaces says an insert lost raceAttempts lock races in a row. It is
// Busy: the batch is narrowed down, and a record that loses alone deferred.
var errLostRaces = errors.New("lost a lock race in PostgreSQL every time it was tried")

// storeBatch inserts recs (made from a batch), retrying the whole batch with
// backoff while PostgreSQL is unreachable or busy (Busy: a statement
// timeout, memory, a lock); false means ctx ended first. A batch busy
// busyAttempts times in a row, or that lost raceAttempts lock races in a
// row, asks PostgreSQL whether it takes any dead letter at all (the
// canary, Store.Canary: a dead letter of its own, rolled back): if that
// fails too, PostgreSQL is busy for everyone and the batch goes on being
// retried; if it works, the batch is bisected down to the records that
// keep failing, which are deferred (their indexes returned: the caller
// naks them, they come again), never stored in raw form. No record of the
// batch decides: the one that fails may be any of them, the smallest too.
// The caller keeps the messages in progress meanwhile (keepInProgress:
// during every statement, the narrowing down and the backoff); after cutOffAfter
// of attempts that found PostgreSQL out of reach (Unreachable) the replica
// is cut off from PostgreSQL (cutOffFromPostgres) and storeBatch returns
// false, as it does at once while the replica is cut off; the caller hands
// the batch back. A lost lock race is tried again at once wherever it
// happens, the whole batch's insert or one of the bisection's (tryInsert),
// and counted apart (StoreConflicts), neither as a store error nor toward
// cutOffAfter: PostgreSQL answered. Every row it stored is counted
// (observeBatch, observeStored), those of failed attempts included,
// whether it returns true or false, and so is every raw form among them,
// once (addRaw): a later insert of the same records finds them stored and
// may not report them.
func (in *Ingester) storeBatch(ctx context.Context, recs []Record) (InsertResult, []int, bool) {
	backoff := 100 * time.Millisecond
	var inserted []Inserted // rows a failed attempt stored: the retry skips them
	var raw []Refused       // raw forms among them (addRaw)
	// giveUp counts the rows failed attempts stored before the batch is
	// handed back: its redelivery finds them stored and never counts them.
	giveUp := func() (InsertResult, []int, bool) {
		in.metrics.observeStored(inserted)
		for _, rf := range raw {
			in.storedRaw("dead letter", &recs[rf.Index], rf.Err)
		}
		return InsertResult{}, nil, false
	}
	busy := 0
	var unreachable time.Time // since the first of the attempts in a row PostgreSQL was out of reach
	for attempt := 1; ; attempt++ {
		start := time.Now()
		res, err := in.tryInsert(ctx, recs, true)
		inserted, raw = append(inserted, res.Inserted...), addRaw(raw, res.Raw)
		if err == nil {
			res.Inserted, res.Raw = inserted, raw
			in.metrics.observeBatch(len(recs), time.Since(start), inserted)
			return res, nil, true
		}
		if ctx.Err() != nil {
			return giveUp()
		}
		busy++
		if !Busy(err) {
			busy = 0
		}
		if busy >= busyAttempts || errors.Is(err, errLostRaces) {
			if cerr := in.store.Canary(ctx); cerr != nil && (Busy(cerr) || Unreachable(cerr)) {
				err = cerr // PostgreSQL takes no dead letter now: nothing to narrow down
			} else {
				res, deferred, serr := in.split(ctx, recs, 0)
				inserted, raw = append(inserted, res.Inserted...), addRaw(raw, res.Raw)
				if serr == nil {
					res.Inserted, res.Raw = inserted, raw
					in.metrics.observeBatch(len(recs), time.Since(start), inserted)
					return res, deferred, true
				}
				err = serr
			}
			if ctx.Err() != nil {
				return giveUp()
			}
		}
		in.metrics.StoreErrors.Inc()
		// Only PostgreSQL out of reach cuts the replica off: a statement
		// that times out or waits for a lock (Busy) is what the canary and
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
		if !sleep(ctx, backoff) {
			return giveUp()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// takesWrites asks PostgreSQL, for a replica cut off from it
// (pauseForPostgres), whether it takes a dead letter again: the canary
// (Store.Canary, a dead letter of its own stored as a batch is and rolled
// back), given probeWithin. refused is true while the answer is one a
// batch would be handed back or retried for (Unreachable or Busy, as
// storeBatch judges the canary): no connection, or a server that answers
// but takes no write (read-only, 25006; disk full, 53100; a lock or a
// statement timeout every insert meets). Any other error comes back with
// refused false: PostgreSQL answered, and what it refused is the batch's
// to meet and judge (Insert).
func (in *Ingester) takesWrites(ctx context.Context) (refused bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, probeWithin)
	defer cancel()
	err = in.store.Canary(pctx)
	return err != nil && (Unreachable(err) || Busy(err)), err
}

// probeWithin bounds takesWrites: one tiny dead letter, rolled back.
const probeWithin = 15 * time.Second

// answered reports whether err is PostgreSQL's own answer to a statement
// (a SQLSTATE), not a connection it refused or never made.
func answered(err error) bool {
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	return errors.As(err, &pgErr) && !errors.As(err, &connectErr)
}

// tryInsert inserts recs (in.store.Insert), trying again when PostgreSQL
// rolled the insert back as the loser of a lock race (LostRace: a
// deadlock, a serialization failure): at once, then after 10 ms doubling,
// raceAttempts times in all. PostgreSQL answered: each lost race is
// counted in StoreConflicts and nowhere else, and logged at INFO; the
// other transaction goes on, and the retry waits for it. An insert that
// loses raceAttempts times in a row ends with errLostRaces (Busy, logged
// at WARN), which the caller narrows down like any busy batch. Any other
// outcome is the last try's, with the rows (and raw forms) every try
// stored; the
// statements spent go to IsolationStatements, less the first of each try
// when recs is the whole batch (whole).
func (in *Ingester) tryInsert(ctx context.Context, recs []Record, whole bool) (InsertResult, error) {
	var stored []Inserted
	var raw []Refused
	var wait time.Duration
	for try := 1; ; try++ {
		res, err := in.store.Insert(ctx, recs)
		extra := res.Statements
		if whole {
			extra--
		}
		in.metrics.IsolationStatements.Add(float64(max(extra, 0)))
		stored, raw = append(stored, res.Inserted...), addRaw(raw, res.Raw)
		res.Inserted, res.Raw = stored, raw
		if !LostRace(err) || ctx.Err() != nil {
			return res, err
		}
		in.metrics.StoreConflicts.Inc()
		if try >= raceAttempts {
			in.log.Warn("storing dead letters lost a lock race in PostgreSQL every time; looking for the dead letter that loses",
				"batch", len(recs), "attempts", try, "err", err)
			return res, fmt.Errorf("%w: %w", errLostRaces, err)
		}
		in.log.Info("storing dead letters lost a lock race in PostgreSQL; trying again",
			"batch", len(recs), "attempt", try, "retry_in", wait, "err", err)
		if wait > 0 && !sleep(ctx, wait) {
			return res, err
		}
		wait = max(2*wait, 10*time.Millisecond)
	}
}

// addRaw adds to have the raw forms of more whose records it does not
// hold yet: an insert that failed after storing raw forms reports them
// (Store.Insert), and a retry that finds one stored may report it again;
// quarantine_ingest_raw_form_total counts each once.
func addRaw(have, more []Refused) []Refused {
	for _, rf := range more {
		if !slices.ContainsFunc(have, func(h Refused) bool { return h.Index == rf.Index }) {
			have = append(have, rf)
		}
	}
	return have
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

// bisect stores recs (recs[0] is index base of the batch) in one
// statement (tryInsert: a lost lock race is tried again at once, and
// counted as one), and splits them when it fails for a reason not their
// data (Busy, errLostRaces); a record that fails alone is retried
// busyAttempts times with backoff, then deferred. It returns the error,
// with what it stored, when PostgreSQL turns unreachable or ctx ends: the
// caller retries the whole batch.
func (in *Ingester) bisect(ctx context.Context, recs []Record, base int) (InsertResult, []int, error) {
	res, err := in.tryInsert(ctx, recs, false)
	backoff := 100 * time.Millisecond
	for attempt := 1; err != nil && Busy(err) && len(recs) == 1 && attempt < busyAttempts; attempt++ {
		if !sleep(ctx, backoff) {
			return res, nil, ctx.Err()
		}
		backoff *= 2
		var again InsertResult
		again, err = in.tryInsert(ctx, recs, false)
		again.Inserted, again.Raw = append(res.Inserted, again.Inserted...), addRaw(res.Raw, again.Raw)
		res = again
	}
	for i := range res.Raw {
		res.Raw[i].Index += base
	}
	for i := range res.Unstorable {
		res.Unstorable[i].Index += base
	}
	switch {
	case err == nil:
		return res, nil, nil
	case ctx.Err() != nil:
		return res, nil, ctx.Err()
	case !Busy(err):
		return res, nil, err
	case len(recs) == 1:
		return res, []int{base}, nil
	}
	// The failed statement may have stored some of recs before it failed
	// (Store.Insert isolates a refused record by halves): the halves find
	// those stored and never report them, so they are counted here.
	sub, deferred, err := in.split(ctx, recs, base)
	sub.Inserted, sub.Raw = append(res.Inserted, sub.Inserted...), addRaw(res.Raw, sub.Raw)
	return sub, deferred, err
}

// split bisects each half of recs (recs[0] is index base of the batch),
// or the one record, and puts the results together.
func (in *Ingester) split(ctx context.Context, recs []Record, base int) (InsertResult, []int, error) {
	if len(recs) == 1 {
		return in.bisect(ctx, recs, base)
	}
	mid := len(recs) / 2
	left, ldef, err := in.bisect(ctx, recs[:mid], base)
	if err != nil {
		return left, nil, err
	}
	right, rdef, err := in.bisect(ctx, recs[mid:], base+mid)
	right.Inserted = append(left.Inserted, right.Inserted...)
	right.Raw, right.Unstorable = append(left.Raw, right.Raw...), append(left.Unstorable, right.Unstorable...)
	return right, append(ldef, rdef...), err
}

// keepInProgress keeps the messages of batch in progress (InProgress, one
// for each every AckWait/3, the first AckWait/3 after the oldest of them
// was received) until stop is called or ctx ends, so that JetStream does
// not deliver them again while the writer still works on them: a
// statement that runs to its timeout (DATABASE_WORKER_STATEMENT_TIMEOUT,
// as long as the default AckWait), the canary, a busy batch narrowed down
// (split, bisect, a lone record's busyAttempts tries with backoff), the
// backoff between whole attempts, the confirmation of the consumer and the
// position forms tried after them. A batch delivered again while it is
// being stored would be narrowed down again by another writer, and would
// count its dead letters' deliveries up (positionFormDue). stop waits for
// a round under way to end: nothing is sent after it returns, so the
// caller acks, naks or terms the messages only after stop. A batch stored
// within AckWait/3 costs a timer and no message.
func (in *Ingester) keepInProgress(ctx context.Context, batch []item) (stop func()) {
	every := in.cfg.AckWait / 3
	if len(batch) == 0 || every <= 0 {
		return func() {}
	}
	oldest := time.Now()
	for _, it := range batch {
		if p, ok := it.msg.(pulledMsg); ok && p.received.Before(oldest) {
			oldest = p.received
		}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		timer := time.NewTimer(max(time.Until(oldest.Add(every)), 0))
		defer timer.Stop()
		for {
			select {
			case <-timer.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
			for _, it := range batch {
				if err := it.msg.InProgress(); err != nil && !errors.Is(err, errRetired) {
					in.log.Debug("keeping a dead letter in progress failed; if it is delivered again meanwhile, the redelivery is deduplicated", "err", err)
				}
			}
			timer.Reset(every)
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-stopped
	})
}
