package dlq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// Which replica watches which stream. Every replica pulls from the one
// advisory consumer, so each receives advisories of every stream any
// replica captures, not only of those its own DLQ_WATCH_STREAMS names: in
// a rolling deploy that adds a stream, the replicas still on the old list
// receive the new stream's give-ups; after one that takes a stream off,
// the stream's advisory subjects stay on the advisory stream. Judged by its
// own list alone, a replica stored each such advisory as it came (tenant
// unknown, advisory_unreadable) and acked it: the give-up of a watched
// stream kept as junk for good. So each replica announces its list in
// PostgreSQL (ingest_watchers, migration 0056) with a lease it renews at
// every check, and an advisory of a stream it does not watch is
//   - handed back (nak'd, elsewhereDelay) while a replica watches that
//     stream, for that one to take, at most maxElsewhereDeliveries
//     times (some 10 minutes: a rolling deploy's length): then it is
//     stored as it came, as before, so that it is never lost for good;
//   - acked without a row when no replica lists it: a stream no longer
//     watched, whose give-ups are not captured by configuration (the
//     sweep passes it over as well, outcome not_watched);
// and the advisory subjects of streams no replica lists are taken off the
// advisory stream (dropUnwatched). A replica on the old list keeps its
// lease until it stops, so neither happens before the last replica
// watching a stream is gone: replicas never undo each other. A replica
// gone without a word (killed, crash-looping in a deploy that added a
// stream) cannot be told from a stream taken out of the configuration:
// its list counts for watcherRemembered after its lease ran out, so its
// streams' advisories are stored as they came (at once: not handed back,
// with no live replica to take them) and their subjects stay, rather than
// acked without a row; only a replica that stopped (retireWatch) takes
// its list away at once.

// elsewhereDelay is how long an advisory of a stream another replica
// watches is held back before it is delivered again.
const elsewhereDelay = 2 * time.Second

// maxElsewhereDeliveries is how many deliveries an advisory of a stream
// another replica watches is handed back for before it is stored as it
// came (JetStream's count, the same for every replica): 300 at
// elsewhereDelay, some 10 minutes, longer than a rolling deploy, while a
// replica watching the stream takes it at its first delivery to it.
const maxElsewhereDeliveries = 300

// watcherLease is how long a replica's announced list holds without a
// renewal: many checks (HealthEvery), at least two minutes. Long rather
// than short: while a replica watching a stream is gone without a word
// (killed, or crash-looping in a deploy that added the stream), the others
// hand its stream's advisories back rather than take its subjects off and
// pass them over; a start renews it (Setup).
func (in *Ingester) watcherLease() time.Duration {
	return max(24*in.cfg.HealthEvery, 2*time.Minute)
}

// watcherRemembered is how long after its lease ran out the list of a
// replica gone without a word still counts as watching its streams
// (watchedByListed): a day, longer than a deploy is likely to be left
// crash-looping unattended, while the rows of replicas gone for good (each
// start is a new replica) do not pile up. A stream taken out of the
// configuration while a replica listing it was killed goes on being
// captured for that day, its advisories stored as they came.
const watcherRemembered = 24 * time.Hour

// Queries on ingest_watchers (migration 0056). The lease's clock is
// PostgreSQL's, for every replica alike.
const (
	// announceWatch renews this replica's list and lease, and removes the
	// lists of replicas gone without a word watcherRemembered ago ($5,
	// seconds).
	announceWatch = `
WITH gone AS (
  DELETE FROM ingest_watchers WHERE advisory_stream = $1 AND expires_at < now() - make_interval(secs => $5)
)
INSERT INTO ingest_watchers (advisory_stream, replica, streams, expires_at)
VALUES ($1, $2, $3, now() + make_interval(secs => $4))
ON CONFLICT (advisory_stream, replica) DO UPDATE SET streams = EXCLUDED.streams, expires_at = EXCLUDED.expires_at`
	// watchedByListed: the streams some replica watches through advisory
	// stream $1: its lease running, or run out less than watcherRemembered
	// ago ($2, seconds): gone without a word, it may be crash-looping, and
	// its streams' give-ups are not to be acked without a row meanwhile.
	// live: some replica listing it has its lease running.
	watchedByListed = `
SELECT s, bool_or(expires_at > now()) AS live FROM ingest_watchers, unnest(streams) AS s
WHERE advisory_stream = $1 AND expires_at > now() - make_interval(secs => $2)
GROUP BY s`
	// retireWatch removes this replica's list when it stops: it no longer
	// takes anything, and its streams may be dropped at once.
	retireWatch = `DELETE FROM ingest_watchers WHERE advisory_stream = $1 AND replica = $2`
)

// newReplicaID names this ingester in ingest_watchers: the host, and a
// random part so that two processes on one host differ.
func newReplicaID() string {
	host, _ := os.Hostname() // a name for people to read; the random part is what makes it unique
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return strings.TrimPrefix(host+"-", "-") + hex.EncodeToString(b)
}

// errNotAnnounced says this replica's watched streams could not be
// recorded in ingest_watchers (announceWatch).
var errNotAnnounced = errors.New("announce the watched streams (ingest_watchers)")

// announceWatch records (or renews) this replica's DLQ_WATCH_STREAMS in
// PostgreSQL. Setup calls it before the advisory stream takes the
// subjects of its streams, so that no replica ever receives one of their
// advisories without knowing a replica watches them. Nothing without a
// store (tests of the streams alone). Every statement on ingest_watchers
// is given up as the ingester's others are (Store.within): it runs where
// a hang would hold much more (Run's setting up again, the advisory
// puller's one callback, the sweep, the checks).
func (in *Ingester) announceWatch(ctx context.Context) error {
	if in.store == nil || len(in.cfg.Watch) == 0 {
		return nil
	}
	names := make([]string, len(in.cfg.Watch))
	for i, w := range in.cfg.Watch {
		names[i] = w.Name
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	if _, err := in.store.pool.Exec(ctx, announceWatch, in.cfg.AdvisoryStream, in.replica, names, in.watcherLease().Seconds(), watcherRemembered.Seconds()); err != nil {
		return fmt.Errorf("%w: %w", errNotAnnounced, err)
	}
	return nil
}

// retireWatch removes this replica's announced list (Run, when it stops).
func (in *Ingester) retireWatch() {
	if in.store == nil || len(in.cfg.Watch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx, cancelStmt := in.store.within(ctx)
	defer cancelStmt()
	if _, err := in.store.pool.Exec(ctx, retireWatch, in.cfg.AdvisoryStream, in.replica); err != nil {
		in.log.Warn("stopping: the watched streams this replica announced could not be withdrawn; they count until their lease runs out",
			"advisory_stream", in.cfg.AdvisoryStream, "lease", in.watcherLease(), "err", err)
	}
}

// watchedByAny returns the streams some replica watches (its own among
// them once announced; one gone without a word among them for
// watcherRemembered: watchedByListed).
func (in *Ingester) watchedByAny(ctx context.Context) ([]string, error) {
	return in.watchedThrough(ctx, in.cfg.AdvisoryStream)
}

// watchedThrough returns the streams some replica of this deployment
// watches through advisory stream name (watchedByListed).
func (in *Ingester) watchedThrough(ctx context.Context, name string) ([]string, error) {
	listed, _, err := in.listedThrough(ctx, name)
	return listed, err
}

// listedThrough returns the streams some replica of this deployment lists
// through advisory stream name (watchedByListed), and of those the ones
// a replica with its lease running lists (live).
func (in *Ingester) listedThrough(ctx context.Context, name string) (listed, live []string, err error) {
	if in.store == nil {
		return nil, nil, errors.New("no store to read the replicas' watched streams from")
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	rows, err := in.store.pool.Query(ctx, watchedByListed, name, watcherRemembered.Seconds())
	if err != nil {
		return nil, nil, fmt.Errorf("read the streams the replicas watch (ingest_watchers): %w", err)
	}
	var stream string
	var running bool
	if _, err := pgx.ForEachRow(rows, []any{&stream, &running}, func() error {
		listed = append(listed, stream)
		if running {
			live = append(live, stream)
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read the streams the replicas watch (ingest_watchers): %w", err)
	}
	return listed, live, nil
}

// watcherVerdict is what becomes of an advisory of a stream this replica
// does not watch.
type watcherVerdict int

const (
	ours             watcherVerdict = iota // a watched stream, or not a real give-up's shape: stored here
	watchedElsewhere                       // another replica watches it: handed back for it
	watchedByNone                          // nobody watches it: acked (or passed over) without a row
)

// errNotWatched says that an advisory's stream is watched by no live
// replica: not captured, by configuration (the sweep passes it over).
var errNotWatched = errors.New("advisory of a stream no replica watches")

// whoseAdvisory judges an advisory (subject, data) by the streams the
// replicas watch. Only one whose JSON names the stream its subject does
// (a real give-up's shape) is anything but ours: any other is kept as it
// came, as before. When the replicas' lists cannot be read, another
// replica may watch it: watchedElsewhere, so that it is neither stored as
// junk nor dropped now.
func (in *Ingester) whoseAdvisory(ctx context.Context, subject string, data []byte) (watcherVerdict, string) {
	adv, err := parseAdvisoryJSON(data)
	if err != nil || in.checkAdvisoryStream(subject, adv) == nil {
		return ours, adv.Stream
	}
	if !slices.ContainsFunc([]string{AdvisoryMaxDeliveries, AdvisoryTerminated}, func(p string) bool {
		return strings.HasPrefix(subject, p+"."+adv.Stream+".")
	}) {
		return ours, adv.Stream // names another stream than its subject's: kept as it came
	}
	names, live, err := in.listedThrough(ctx, in.cfg.AdvisoryStream)
	switch {
	case err != nil:
		in.log.Warn("advisory of a stream this replica does not watch, and the replicas' watched streams could not be read: handed back", "stream", adv.Stream, "err", err)
		return watchedElsewhere, adv.Stream
	case slices.Contains(live, adv.Stream):
		return watchedElsewhere, adv.Stream
	case slices.Contains(names, adv.Stream):
		// Listed only by replicas gone without a word (their leases ran
		// out less than watcherRemembered ago): one may be crash-looping.
		// Stored here as it came, at once: handed back delivery after
		// delivery, every such advisory would sit unacked for some ten
		// minutes, and a busy stream's would fill the advisory consumer's
		// MaxAckPending, stopping every stream's advisories.
		in.log.Warn("advisory of a stream only replicas gone without a word watch (their leases ran out): stored here as it came",
			"stream", adv.Stream, "advisory_stream", in.cfg.AdvisoryStream)
		return ours, adv.Stream
	}
	// No replica of this deployment watches it: nobody's only on an
	// advisory stream this deployment certainly has to itself. One that
	// does not record it as its owner now may be another deployment's
	// too, whose replicas take it (handed back, and stored as it came if
	// none does).
	switch ours, err := in.advisoryStreamOurs(ctx); {
	case err != nil:
		in.log.Warn("advisory of a stream no replica watches, and whether the advisory stream is this deployment's alone could not be read: handed back", "stream", adv.Stream, "err", err)
		return watchedElsewhere, adv.Stream
	case !ours:
		in.log.Warn("advisory of a stream no replica of this deployment watches, on an advisory stream that does not record this deployment as its owner: another deployment may share it; handed back, not acked",
			"stream", adv.Stream, "advisory_stream", in.cfg.AdvisoryStream)
		return watchedElsewhere, adv.Stream
	}
	return watchedByNone, adv.Stream
}

// notOurs settles a delivered advisory of a stream this replica does not
// watch (whoseAdvisory) and reports whether it did: handed back while
// another replica watches the stream (at most maxElsewhereDeliveries
// times; then it is left to be stored as it came), acked without a row
// when none does.
func (in *Ingester) notOurs(ctx context.Context, m jetstream.Msg) bool {
	verdict, stream := in.whoseAdvisory(ctx, m.Subject(), m.Data())
	switch verdict {
	case watchedElsewhere:
		md, err := m.Metadata()
		if err != nil || md.NumDelivered >= maxElsewhereDeliveries {
			in.log.Warn("advisory of a stream another replica watches was handed back for it delivery after delivery: stored here as it came",
				"stream", stream, "deliveries", maxElsewhereDeliveries)
			return false
		}
		if err := m.NakWithDelay(elsewhereDelay); err != nil && !errors.Is(err, errRetired) {
			in.log.Debug("hand back an advisory of a stream another replica watches", "stream", stream, "err", err)
		}
		return true
	case watchedByNone:
		if err := m.Ack(); err != nil && !errors.Is(err, errRetired) {
			in.log.Debug("ack an advisory of a stream no replica watches", "stream", stream, "err", err)
		}
		in.log.Info("advisory of a stream no replica watches (DLQ_WATCH_STREAMS): not captured; its subjects are taken off the advisory stream",
			"stream", stream, "advisory_stream", in.cfg.AdvisoryStream)
		return true
	}
	return false
}

// keepWatchers renews this replica's lease and takes the advisory
// subjects of streams no replica lists off the advisory stream
// (dropUnwatched, which reads the list again after the stream: the one
// read here only says whether there may be any); run at every check.
func (in *Ingester) keepWatchers(ctx context.Context) {
	if in.store == nil || len(in.cfg.Watch) == 0 {
		return
	}
	if err := in.announceWatch(ctx); err != nil {
		in.log.Warn("renew the watched streams' lease", "err", err)
		return
	}
	names, err := in.watchedByAny(ctx)
	if err != nil {
		in.log.Warn("read the streams the replicas watch", "err", err)
		return
	}
	if err := in.dropUnwatched(ctx, names); err != nil && ctx.Err() == nil {
		in.log.Warn("take the subjects of streams no replica watches off the advisory stream", "stream", in.cfg.AdvisoryStream, "err", err)
	}
}

// advisoryStreamOfSubject returns the stream an advisory subject of the
// console's shape (AdvisoryMaxDeliveries or AdvisoryTerminated, then the
// stream, then "*") is for; ok false for any other subject (one an
// operator added for something else stays).
func advisoryStreamOfSubject(subject string) (stream string, ok bool) {
	for _, p := range []string{AdvisoryMaxDeliveries + ".", AdvisoryTerminated + "."} {
		if rest, found := strings.CutPrefix(subject, p); found {
			stream, star, _ := strings.Cut(rest, ".")
			return stream, star == "*"
		}
	}
	return "", false
}

// advisorySubjects are the advisory subjects the advisory stream takes
// for watched stream name (advisoryStreamOfSubject reads them back).
func advisorySubjects(name string) []string {
	return []string{AdvisoryMaxDeliveries + "." + name + ".*", AdvisoryTerminated + "." + name + ".*"}
}

// unwatchedSubjects splits subjects into those kept and the advisory
// subjects of streams not in watched (dropped).
func unwatchedSubjects(subjects, watched []string) (keep, dropped []string) {
	for _, subj := range subjects {
		if stream, ok := advisoryStreamOfSubject(subj); ok && !slices.Contains(watched, stream) {
			dropped = append(dropped, subj)
			continue
		}
		keep = append(keep, subj)
	}
	return keep, dropped
}

// dropUnwatched takes off the advisory stream the advisory subjects of
// streams no replica lists. watched, the list as the caller read
// it, only says whether there may be any: the stream is read first, then
// the list again (watchedByAny), and only the subjects of streams not in
// that second read go, and only from a stream recording this deployment as
// its owner (recordsUs). A replica announces its list before it puts its
// subjects on the stream (setUp): subjects on the stream as read were
// announced before that second read, and are kept. JetStream has no
// compare-and-set on a stream's configuration (an update sets all of it):
// a replica that announces after the second read and puts its subjects on
// the stream before this update has them taken off by it. So the list is
// read a third time after the update, and the subjects of a stream in it
// that the update left off are put back (putWatchedBack): whoever
// announced before that read is kept, whoever announces after it reads
// the stream as this update left it.
func (in *Ingester) dropUnwatched(ctx context.Context, watched []string) error {
	s, err := in.js.Stream(ctx, in.cfg.AdvisoryStream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if _, dropped := unwatchedSubjects(cfg.Subjects, watched); len(dropped) == 0 || !in.recordsUs(cfg) {
		return nil // nothing to drop, or the stream may be shared: a subject no replica of this deployment watches may be another's
	}
	if watched, err = in.watchedByAny(ctx); err != nil {
		return err
	}
	keep, dropped := unwatchedSubjects(cfg.Subjects, watched)
	if len(dropped) == 0 || len(keep) == 0 {
		return nil
	}
	if in.beforeStreamUpdate != nil {
		in.beforeStreamUpdate()
	}
	cfg.Subjects = keep
	if _, err := in.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("update stream %s: %w", cfg.Name, err)
	}
	in.log.Info("took the subjects of streams no replica watches (DLQ_WATCH_STREAMS) off the advisory stream: their give-ups are no longer captured",
		"stream", cfg.Name, "subjects", dropped)
	return in.putWatchedBack(ctx, keep)
}

// putWatchedBack puts back on the advisory stream the subjects of the
// streams replicas list that are not in written, what dropUnwatched
// just set: those of a replica that announced while it did.
func (in *Ingester) putWatchedBack(ctx context.Context, written []string) error {
	watched, err := in.watchedByAny(ctx)
	if err != nil {
		return fmt.Errorf("read the streams the replicas watch after taking subjects off: %w", err)
	}
	var missing []string
	for _, name := range watched {
		for _, subj := range advisorySubjects(name) {
			if !slices.Contains(written, subj) {
				missing = append(missing, subj)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	s, err := in.js.Stream(ctx, in.cfg.AdvisoryStream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if err := in.ownedElsewhere(cfg, in.advisoryStreamConfig()); err != nil {
		return err
	}
	add := slices.DeleteFunc(missing, func(subj string) bool { return slices.Contains(cfg.Subjects, subj) })
	if len(add) == 0 {
		return nil // put there again since, by the replica that watches them
	}
	cfg.Subjects = append(cfg.Subjects, add...)
	if _, err := in.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("put back on stream %s the subjects of streams a replica announced meanwhile: %w", cfg.Name, err)
	}
	in.log.Info("put back on the advisory stream the subjects of streams a replica announced while others were taken off",
		"stream", cfg.Name, "subjects", add)
	return nil
}
