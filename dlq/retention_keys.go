package dlq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// Retention keeps the source key of every dead letter it removes
// (dead_letters_purged), so that a redelivery of its message is not stored
// again. A key stands for one stream message: its stream, sequence and
// stored time (setDelivery). Once that message is gone from its stream it
// can never be delivered again, and its key guards nothing: the keeper
// removes, per stream, the keys below the first sequence the stream holds
// (trimPurgedKeys), in bounded batches, each in one transaction with its
// audit row (ActionTrimKeys).
//
// The stream's first sequence, not its oldest stored time, decides: a key's
// dead_lettered_at is the stored time as the NATS server's clock had it,
// kept under the day it arrived when that clock was implausible
// (checkStoredAt), and a clock that went back (a new leader) stores later
// sequences at earlier times; only the sequence orders a stream's messages.
//
// Nothing goes on doubt. A stream that cannot be read (JetStream does not
// answer, the account may not ask) keeps all its keys until it can. A
// stream that does not exist keeps them too: a stream restored from a
// backup under its name holds its messages again, with their sequences and
// stored times, so their keys again (an operator removes the keys of a
// stream gone for good: ForgetStream, console retention forget-stream). Keys of a stream made again (its
// sequences restarting at 1) that lie at or above the new stream's first
// sequence stay until it passes them. And the keeper removes keys only
// below the first sequence the same stream (same creation time) had at a
// look of an earlier pass at least max(Every, AckWait) old (10 minutes by
// default): a message the stream delivered just before it let it go may be
// in an ingester's batch, not yet stored, and its key must still be there
// when the batch asks (storedKeys). A batch holds its messages for up to
// the ack wait, and longer while its writer keeps them in progress with
// PostgreSQL unreachable or busy (keepInProgress): a message stored past
// the margin is flagged, not dropped (flagTrimmed). The margin is measured from when each
// look happened, not counted in passes: a ticker that fell behind fires
// passes back to back. A console's first passes, and the first after a
// stream was made again, only look.

// ActionTrimKeys is the audit action of a batch of purged source keys
// removed because their messages are gone from their stream.
const ActionTrimKeys = "retention.trim_keys"

// maxTrimBatch is the most keys one trim run removes (the database
// function caps it too).
const maxTrimBatch = 10_000

// The streams purged keys name, by a walk of their index (one probe per
// stream, however many keys).
const selectPurgedStreams = `
WITH RECURSIVE s(stream) AS (
    SELECT min(stream) FROM dead_letters_purged WHERE stream IS NOT NULL
    UNION ALL
    SELECT (SELECT min(p.stream) FROM dead_letters_purged p WHERE p.stream > s.stream) FROM s WHERE s.stream IS NOT NULL
)
SELECT stream FROM s WHERE stream IS NOT NULL LIMIT 1000`

// TrimRun is one batch of purged source keys removed.
type TrimRun struct {
	Stream string
	// Below is the stream's first sequence the keys were below.
	Below uint64
	// Keys counts what was removed; FromSeq and ToSeq are their lowest
	// and highest sequence.
	Keys           int64
	FromSeq, ToSeq uint64
}

// trimPurgedKeys removes the purged source keys of every stream the keys
// name that lie below the stream's first sequence, as a look old enough
// saw it (firstSeq), in runs of at most batch keys, at most maxRuns in
// all. Streams it cannot read are returned in kept, with why, and lose
// nothing.
func (k *Keeper) trimPurgedKeys(ctx context.Context, conn *pgx.Conn, batch, maxRuns int) (runs []TrimRun, kept map[string]error, err error) {
	if k.cfg.JetStream == nil {
		return nil, nil, nil
	}
	rows, err := conn.Query(ctx, selectPurgedStreams)
	if err != nil {
		return nil, nil, fmt.Errorf("read purged keys' streams: %w", err)
	}
	streams, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("read purged keys' streams: %w", err)
	}
	batch = min(max(batch, 1), maxTrimBatch)
	kept = map[string]error{}
	for _, name := range streams {
		first, err := k.firstSeq(ctx, name)
		if err != nil {
			kept[name] = err
			continue
		}
		for len(runs) < maxRuns {
			run, err := trimKeys(ctx, conn, name, first, batch, keeperTrimEntry)
			if err != nil {
				return runs, kept, err
			}
			if run.Keys == 0 {
				break
			}
			runs = append(runs, run)
			if run.Keys < int64(batch) {
				break
			}
		}
	}
	return runs, kept, nil
}

// firstSeq is the sequence below which the keys of stream name may go: the
// stream's first sequence as the newest look at least keyMargin old saw it
// (the stream holds nothing below it now either: a stream's first sequence
// only grows); 0 (nothing goes) when no look is that old, and when the
// stream's first sequence went back or its creation time changed (it was
// made again: the looks start afresh). It asks JetStream at most 10
// seconds; a stream it cannot read is an error, and so is one that does
// not exist.
func (k *Keeper) firstSeq(ctx context.Context, name string) (uint64, error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := k.cfg.JetStream.Stream(sctx, name)
	if err != nil {
		delete(k.firstSeen, name) // made again later: seen afresh
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	now := streamLook{first: info.State.FirstSeq, created: info.Created, at: k.cfg.Now()}
	looks := k.firstSeen[name]
	if n := len(looks); n > 0 && (!looks[n-1].created.Equal(now.created) || now.first < looks[n-1].first) {
		// A stream made again since (its sequences restarted): what lies
		// below now may have left it after any earlier look.
		looks = nil
	}
	var below uint64
	margin := k.keyMargin()
	for i := len(looks) - 1; i >= 0; i-- {
		if !now.at.Before(looks[i].at.Add(margin)) {
			below, looks = looks[i].first, looks[i:] // older ones are no longer needed
			break
		}
	}
	looks = append(looks, now)
	if len(looks) > maxStreamLooks {
		looks = append(looks[:1], looks[len(looks)-maxStreamLooks+1:]...) // passes back to back: keep the oldest
	}
	k.firstSeen[name] = looks
	return below, nil
}

// keyMargin is how old a look at a stream must be before the keys below
// the first sequence it saw may go: a pass's interval, and at least the
// ingest consumers' ack wait.
func (k *Keeper) keyMargin() time.Duration { return max(k.cfg.Every, k.cfg.AckWait) }

// maxStreamLooks bounds the looks kept of one stream.
const maxStreamLooks = 64

// streamLook is what a keeper pass saw of a stream: its first sequence,
// when it was made (a stream made again is another stream), and when the
// pass looked (the keeper's clock, after JetStream answered).
type streamLook struct {
	first   uint64
	created time.Time
	at      time.Time
}

// trimKeys removes at most limit purged keys of stream below first, in one
// transaction with the audit row entry makes of what went (the keeper's,
// keeperTrimEntry; an operator's, ForgetStream); a run that found none
// changes nothing. The database function records each removal in
// dead_letters_purged_trims (migration 0030), by which ingest flags a
// message of stream at or below what went that is stored again
// (flagTrimmed).
func trimKeys(ctx context.Context, conn *pgx.Conn, stream string, first uint64, limit int, entry func(TrimRun) audit.Event) (TrimRun, error) {
	run := TrimRun{Stream: stream, Below: first}
	if first <= 1 {
		return run, nil // nothing lies below the first message
	}
	below := int64(min(first, math.MaxInt64))
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var from, to *int64
		if err := tx.QueryRow(ctx, `SELECT keys, from_seq, to_seq FROM quarantine_purged_keys_trim($1, $2, $3)`, stream, below, limit).
			Scan(&run.Keys, &from, &to); err != nil {
			return err
		}
		if run.Keys == 0 {
			return nil
		}
		run.FromSeq, run.ToSeq = uint64(*from), uint64(*to)
		_, err := audit.Append(ctx, tx, entry(run))
		return err
	})
	if err != nil {
		return TrimRun{}, fmt.Errorf("trim purged keys of stream %s: %w", stream, err)
	}
	return run, nil
}

// keeperTrimEntry is the audit row of a keeper's run: the stream holds
// none of the messages whose keys went.
func keeperTrimEntry(run TrimRun) audit.Event {
	return audit.Event{
		Actor:  quarantine.Actor{Subject: "retention"},
		Action: ActionTrimKeys, Outcome: audit.OutcomeOK, ObjectType: "dead_letters_purged", ObjectID: run.Stream,
		Reason: fmt.Sprintf("%d source keys of dead letters retention removed, of messages %d to %d of stream %s: it holds none below %d any more, so they cannot be delivered again",
			run.Keys, run.FromSeq, run.ToSeq, run.Stream, run.Below),
		After: map[string]any{"stream": run.Stream, "first_seq": run.Below, "keys": run.Keys, "from_seq": run.FromSeq, "to_seq": run.ToSeq},
	}
}

// streamMissing reports whether err says the stream does not exist.
func streamMissing(err error) bool { return errors.Is(err, jetstream.ErrStreamNotFound) }
