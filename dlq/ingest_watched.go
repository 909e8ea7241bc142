package dlq

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchedWarnEvery is how often a watched stream that stays missing is
// logged again (the gauge and the alert say it meanwhile).
const watchedWarnEvery = 10 * time.Minute

// DefaultWatchGrace is the WatchGrace serve uses: a stream made within a
// minute of the console's start (make run's demo makes its streams a few
// seconds after) is not warned of.
const DefaultWatchGrace = time.Minute

// watchedState is what the checks found of one watched stream.
type watchedState struct {
	missing  bool
	existed  bool      // a check found it: missing now, it was deleted
	since    time.Time // missing since, at the first check that found it so
	warnedAt time.Time
}

// checkWatched looks up each stream DLQ_WATCH_STREAMS names (Watch). One
// that does not exist (a misspelt name, a stream renamed or in another
// account) has none of its give-ups captured: its advisories are published
// on subjects that carry its name, so the advisory stream is made on
// subjects nothing publishes to, and nothing else shows it. It is logged
// as a warning naming it and the setting (once it has been missing for
// WatchGrace, and every watchedWarnEvery while it stays so; before that,
// once at INFO) and exported
// (quarantine_ingest_watched_stream_missing, alert
// DeadLetterWatchedStreamMissing). It is not refused: a stream may be
// made after the console, whose advisories are captured from then on.
// One a check found before is said to be no longer there (deleted), not
// not there yet. A lookup that fails otherwise leaves what the last one
// found.
func (in *Ingester) checkWatched(ctx context.Context) {
	for _, w := range in.cfg.Watch {
		_, err := in.js.Stream(ctx, w.Name)
		missing := errors.Is(err, jetstream.ErrStreamNotFound)
		if err != nil && !missing {
			in.log.Debug("look up a watched stream", "stream", w.Name, "err", err)
			continue
		}
		was, warn := in.metrics.health.setWatched(w.Name, missing, time.Now(), in.cfg.WatchGrace)
		existed := in.metrics.health.watchedExisted(w.Name)
		switch {
		case missing && !was && !warn && existed:
			in.log.Info("a stream DLQ_WATCH_STREAMS names no longer exists (deleted?): its give-ups are captured again once it is made again",
				"stream", w.Name, "warn_after", in.cfg.WatchGrace)
		case missing && !was && !warn:
			in.log.Info("a stream DLQ_WATCH_STREAMS names does not exist yet: its give-ups are captured once it is made",
				"stream", w.Name, "warn_after", in.cfg.WatchGrace)
		case warn && existed:
			in.log.Warn("a stream DLQ_WATCH_STREAMS names no longer exists (deleted, or renamed?): none of its consumers' give-ups is captured; "+
				"make it again, or take it out of DLQ_WATCH_STREAMS",
				"stream", w.Name, "setting", "DLQ_WATCH_STREAMS")
		case warn:
			in.log.Warn("a stream DLQ_WATCH_STREAMS names does not exist: none of its consumers' give-ups is captured "+
				"(a misspelt name, a stream renamed or in another account?); fix DLQ_WATCH_STREAMS, or make the stream",
				"stream", w.Name, "setting", "DLQ_WATCH_STREAMS")
		case was && !missing:
			in.log.Info("a watched stream that did not exist does now: its give-ups are captured from now on", "stream", w.Name)
		}
	}
}

// setWatched records whether the watched stream is missing, and reports
// whether it was before and whether to warn now (missing for grace or
// longer, and not warned of within watchedWarnEvery).
func (b *healthBoard) setWatched(stream string, missing bool, now time.Time, grace time.Duration) (was, warn bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, known := b.watched[stream]
	was = known && s.missing
	if !missing {
		b.watched[stream] = watchedState{existed: true}
		return was, false
	}
	if !was {
		s.since = now
	}
	warn = now.Sub(s.since) >= grace && (s.warnedAt.IsZero() || now.Sub(s.warnedAt) >= watchedWarnEvery)
	s.missing = true
	if warn {
		s.warnedAt = now
	}
	b.watched[stream] = s
	return was, warn
}

// watchedExisted reports whether a check found the watched stream
// (setWatched), now or before.
func (b *healthBoard) watchedExisted(stream string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.watched[stream].existed
}

// watchedMissing is, for each watched stream checked, whether it was
// missing at the last check.
func (b *healthBoard) watchedMissing() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]bool, len(b.watched))
	for k, s := range b.watched {
		out[k] = s.missing
	}
	return out
}
