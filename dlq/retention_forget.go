package dlq

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// The keeper keeps every source key of a stream that does not exist: a
// stream restored from a backup holds its messages again (retention_keys.go).
// Of a stream gone for good they guard nothing, and only a person can say
// it is gone for good: ForgetStream is that act (console retention
// forget-stream). It removes them through the keeper's own path
// (trimKeys): each batch in one transaction with its audit row, recorded
// in dead_letters_purged_trims, so that if the stream comes back after
// all, a message of it stored again is flagged after_retention_key_trim
// and left out of replays (flagTrimmed), never replayed as new. A raw
// DELETE would leave neither the audit row nor that record.
//
// The audit row is retention.trim_keys, as the keeper's: it is the same
// change (kept keys removed, one dead_letters_purged_trims row each), and
// the rule auditors are given is that a trims row without such an entry
// stands out (docs/access.md, migration 0030). Its actor is the operator,
// its reason theirs, and its After says stream_missing.

// forgetBelow is the sequence ForgetStream removes keys below: all of them
// (a key's sequence has at most 18 digits, migration 0028).
const forgetBelow = math.MaxInt64

// ForgetStream removes every source key retention kept of stream, which
// js must say does not exist, in runs of at most batch keys (at most
// 10,000), each in one transaction with its audit row naming by and
// reason. It looks at the stream before each run, at most 10 seconds a
// look, and removes nothing more once a look fails: a stream that exists
// is refused (quarantine.ECONFLICT: the keeper removes its keys as it lets
// their messages go), and one that cannot be read keeps its keys (the
// error says why). A blank reason is refused (quarantine.EINVALID). It
// returns the runs made, none when the stream has no kept key: running it
// again changes nothing.
func ForgetStream(ctx context.Context, conn *pgx.Conn, js jetstream.JetStream, stream string, by quarantine.Actor, reason string, batch int) ([]TrimRun, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, quarantine.Errorf(quarantine.EINVALID, "say why the keys of stream %s go (--reason): it is recorded in the audit log", stream)
	}
	batch = min(max(batch, 1), maxTrimBatch)
	entry := func(run TrimRun) audit.Event {
		return audit.Event{
			Actor: by, Action: ActionTrimKeys, Outcome: audit.OutcomeOK, ObjectType: "dead_letters_purged", ObjectID: stream,
			Reason: reason,
			After: map[string]any{"stream": stream, "stream_missing": true, "keys": run.Keys, "from_seq": run.FromSeq, "to_seq": run.ToSeq,
				"why": fmt.Sprintf("%d source keys of dead letters retention removed, of messages %d to %d of stream %s: the stream does not exist, and the operator says it is gone for good",
					run.Keys, run.FromSeq, run.ToSeq, stream)},
		}
	}
	var runs []TrimRun
	for {
		if err := streamGone(ctx, js, stream); err != nil {
			return runs, err
		}
		run, err := trimKeys(ctx, conn, stream, forgetBelow, batch, entry)
		if err != nil {
			return runs, err
		}
		if run.Keys == 0 {
			return runs, nil
		}
		runs = append(runs, run)
		if run.Keys < int64(batch) {
			return runs, nil
		}
	}
}

// streamGone returns nil when js says stream does not exist, and why not
// otherwise.
func streamGone(ctx context.Context, js jetstream.JetStream, stream string) error {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := js.Stream(sctx, stream)
	switch {
	case err == nil:
		return quarantine.Errorf(quarantine.ECONFLICT, "stream %s exists: its keys stay, and the keeper removes them as the stream lets their messages go", stream)
	case streamMissing(err):
		return nil
	}
	return fmt.Errorf("stream %s cannot be read, so its keys are all kept: %w", stream, err)
}
