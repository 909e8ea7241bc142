package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// IngestHealth is how far behind ingest is: for the DLQ stream (and the
// advisory stream, when streams are watched), what the console's durable
// consumer has not yet stored and acked, as of its last check. Every replica
// sees the same consumer, so every replica reports the same.
type IngestHealth struct {
	Streams []StreamHealth
	// StallAfter is how long dead letters may wait with no progress before
	// Stalled reports it; 0 or less: never.
	StallAfter time.Duration
}

// StreamHealth is one consumer's state at its last check.
type StreamHealth struct {
	Stream    string
	CheckedAt time.Time // zero: not checked yet
	CheckErr  string    // the last check failed (the figures are from the one before)
	// FailingSince is when checks started to fail; zero when the last one
	// worked.
	FailingSince time.Time
	// Pending are messages not yet delivered to the console, Unacked those
	// delivered and not yet stored and acked. Pending counts the stream's
	// messages after the last one delivered, whatever the consumer's
	// filter (JetStream's own pending count leaves out what a filter does
	// not take).
	Pending uint64
	Unacked int
	// AckFloor is the stream sequence up to which everything is acked;
	// OldestSeq and OldestAt are the message after it (the oldest one not
	// yet stored) and when JetStream stored it, on the console's clock
	// (the server's time plus Skew).
	AckFloor  uint64
	OldestSeq uint64
	OldestAt  time.Time
	// Skew is how far the console's clock is ahead of the NATS server's,
	// as measured at the last check (up to the request's round trip):
	// the times JetStream gives (OldestAt, FirstAt) are moved by it, so
	// that ages are never one machine's clock against the other's.
	Skew time.Duration
	// ConsumerDrift says how the consumer's settings differ from the
	// console's when the check could not put them back (JetStream refuses
	// to change them on an existing consumer, or the update failed); empty
	// when they are the console's. Settings it put back are only logged
	// and counted (quarantine_ingest_consumer_repaired_total).
	ConsumerDrift string
	// StreamDrift says how the stream's settings differ from the
	// console's where the check did not put them back (discard policy, a
	// sealed or memory stream, an update that failed), with what to run;
	// empty when they are the console's. Settings it put back are only
	// logged and counted (quarantine_dlq_stream_repaired_total).
	StreamDrift string
	// seen: a check read the stream; made again after, it was deleted.
	seen bool
	// redeliverFrom is the first sequence a consumer changed since the
	// last check may have passed over: the ack floor, plus one, at the
	// last check that found its settings the console's. 0: unknown.
	redeliverFrom uint64
	// Settled counts the messages the consumer has delivered and that are
	// no longer waiting for an ack (stored and acked by any replica, or
	// gone from the stream): the last delivered stream sequence less the
	// unacked count (settled). It grows with every ack, whether or not the
	// ack floor moves.
	Settled uint64
	// ProgressAt is the last check at which Settled had grown (or the ack
	// floor moved), or nothing was waiting.
	ProgressAt time.Time
	// The stream itself: what it holds (Bytes, Msgs, FirstAt: when its
	// oldest message was stored, on the console's clock) and its limits
	// (0: none), past which JetStream discards its oldest messages.
	Bytes, Msgs uint64
	FirstAt     time.Time
	MaxBytes    int64
	MaxAge      time.Duration
	// WaitingMean is the mean size of a few of the dead letters not yet
	// stored, read at the last check (sampleWaiting: the oldest, the
	// newest and some between); 0 when none was read. The stream's own
	// mean prices a backlog of large dead letters behind many small ones
	// stored at next to nothing.
	WaitingMean float64
	// sampledAt is when WaitingMean was read: again when the ack floor
	// moved, or a resampleEvery later.
	sampledAt time.Time
}

// resampleEvery is how long a sample of the waiting dead letters' sizes
// holds while the ack floor stands (sampleWaiting reads whole messages).
const resampleEvery = 30 * time.Second

// LimitWarnAt is the share of a stream limit the dead letters not yet
// stored may take before the console warns (metric, alert, dashboard):
// JetStream discards the oldest messages past a limit, stored or not.
const LimitWarnAt = 0.5

// LimitRisk is how much of the stream's limits the dead letters not yet
// stored take at now: the oldest one's age as a share of MaxAge, and their
// bytes as a share of MaxBytes: Waiting times the larger of the stream's
// mean message size and WaitingMean, at most all the stream holds; 0 for a
// limit not set. At 1 JetStream discards dead letters the console has not
// stored yet.
func (s StreamHealth) LimitRisk(now time.Time) (age, bytes float64) {
	if s.MaxAge > 0 {
		age = s.Lag(now).Seconds() / s.MaxAge.Seconds()
	}
	if s.MaxBytes > 0 && s.Msgs > 0 {
		mean := max(float64(s.Bytes)/float64(s.Msgs), s.WaitingMean)
		bytes = min(float64(s.Waiting())*mean, float64(s.Bytes)) / float64(s.MaxBytes)
	}
	return age, bytes
}

// waitingSamples is how many of the dead letters not yet stored a check
// reads for their size (sampleWaiting), when the stream has a size limit.
const waitingSamples = 4

// sampleWaiting returns the mean size (subject, header block, payload) of
// up to waitingSamples messages of stream spread evenly from oldest, the
// oldest not yet stored, to last, the stream's last; 0 when none could be
// read. Only a stream with a size limit and a backlog is read: a few
// direct reads a check, while dead letters wait.
func (in *Ingester) sampleWaiting(ctx context.Context, stream string, oldest, last uint64) float64 {
	if oldest == 0 || last < oldest {
		return 0
	}
	var sum, n float64
	seen := map[uint64]bool{}
	for i := range uint64(waitingSamples) {
		seq := oldest + (last-oldest)*i/(waitingSamples-1)
		st, err := readStored(ctx, in.js, stream, seq, true)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if seen[st.Seq] {
			continue
		}
		seen[st.Seq] = true
		sum += float64(storedSize(st))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// storedSize is the size of stored message st as a stream counts it, near
// enough: its subject, header block and payload.
func storedSize(st *storedMsg) int {
	size := len(st.Subject) + len(st.Header) + len(st.Data)
	if st.Header == nil && len(st.Headers) > 0 { // read as a NATS message: its block as clients write it
		size += headerBlockLen(st.Headers)
	}
	return size
}

// LimitWarnings returns a sentence for each stream whose LimitRisk reaches
// LimitWarnAt; none when every backlog is well within its limits.
func (h IngestHealth) LimitWarnings(now time.Time) []string {
	var out []string
	for _, s := range h.Streams {
		age, bytes := s.LimitRisk(now)
		if age >= LimitWarnAt {
			out = append(out, fmt.Sprintf("%s: the oldest dead letter not yet stored is %s old, %.0f%% of the stream's age limit (%s); past it JetStream discards it",
				s.Stream, s.Lag(now).Round(time.Second), 100*age, s.MaxAge))
		}
		if bytes >= LimitWarnAt {
			out = append(out, fmt.Sprintf("%s: the dead letters not yet stored take about %.0f%% of the stream's size limit (%d bytes); past it JetStream discards the oldest",
				s.Stream, 100*bytes, s.MaxBytes))
		}
	}
	return out
}

// settled is Settled of a consumer's state. It is the consumer's progress
// signal, not the ack floor: one dead letter that cannot be stored (nak'd
// every RetryUnstorable) holds the floor where it is however many others
// are stored after it, and the dashboard would call ingest stalled while
// ingest works. A message delivered and not acked adds one to both terms,
// a redelivery to neither, an ack takes one from the unacked count.
func settled(info *jetstream.ConsumerInfo) uint64 {
	unacked := uint64(max(info.NumAckPending, 0))
	if unacked > info.Delivered.Stream {
		return 0
	}
	return info.Delivered.Stream - unacked
}

// Waiting is how many dead letters the stream holds that are not yet rows.
func (s StreamHealth) Waiting() uint64 { return s.Pending + uint64(max(s.Unacked, 0)) }

// Lag is how long the oldest dead letter not yet stored has waited at now;
// 0 when none waits. This is the DLQ lag the alerts watch.
func (s StreamHealth) Lag(now time.Time) time.Duration {
	if s.Waiting() == 0 || s.OldestAt.IsZero() {
		return 0
	}
	return max(now.Sub(s.OldestAt), 0)
}

// NoProgress is how long dead letters have waited at now with none stored
// (Settled standing still); 0 when nothing waits.
func (s StreamHealth) NoProgress(now time.Time) time.Duration {
	if s.Waiting() == 0 || s.ProgressAt.IsZero() {
		return 0
	}
	return max(now.Sub(s.ProgressAt), 0)
}

// Waiting sums Waiting over the streams.
func (h IngestHealth) Waiting() uint64 {
	var n uint64
	for _, s := range h.Streams {
		n += s.Waiting()
	}
	return n
}

// Lag is the largest Lag of the streams.
func (h IngestHealth) Lag(now time.Time) time.Duration {
	var d time.Duration
	for _, s := range h.Streams {
		d = max(d, s.Lag(now))
	}
	return d
}

// Stall is how long, at now, the stream has counted towards a stall: dead
// letters waiting with no progress, or checks failing.
func (s StreamHealth) Stall(now time.Time) time.Duration {
	if !s.FailingSince.IsZero() {
		return max(now.Sub(s.FailingSince), 0)
	}
	return s.NoProgress(now)
}

// StalledStreams returns the streams whose Stall is longer than StallAfter
// (none when StallAfter is 0 or less).
func (h IngestHealth) StalledStreams(now time.Time) []StreamHealth {
	var out []StreamHealth
	for _, s := range h.Streams {
		if h.StallAfter > 0 && s.Stall(now) > h.StallAfter {
			out = append(out, s)
		}
	}
	return out
}

// Stalled returns, for each of StalledStreams, a sentence saying why, and
// one for each stream whose consumer has settings the console could not
// put back (ConsumerDrift), or that has such settings itself
// (StreamDrift), at once: dead letters may then wait unseen by every
// figure, or be refused or deleted before they are stored. None when
// ingest is moving.
func (h IngestHealth) Stalled(now time.Time) []string {
	var out []string
	for _, s := range h.Streams {
		if s.ConsumerDrift != "" {
			out = append(out, fmt.Sprintf("%s: the ingest consumer's settings are not the console's and could not be put back, so dead letters may never be delivered: %s",
				s.Stream, s.ConsumerDrift))
		}
		if s.StreamDrift != "" {
			out = append(out, fmt.Sprintf("%s: the stream's settings are not the console's and were not put back, so dead letters may be refused or deleted before they are stored: %s",
				s.Stream, s.StreamDrift))
		}
	}
	for _, s := range h.StalledStreams(now) {
		switch {
		case !s.FailingSince.IsZero():
			out = append(out, fmt.Sprintf("%s: the ingest consumer could not be checked for %s (the log says why)",
				s.Stream, now.Sub(s.FailingSince).Round(time.Second)))
		default:
			waiting := fmt.Sprintf("%d dead letters wait", s.Waiting())
			if s.Waiting() == 1 {
				waiting = "1 dead letter waits"
			}
			out = append(out, fmt.Sprintf("%s: no dead letter has been stored for %s while %s; the oldest not stored (#%d) arrived %s ago",
				s.Stream, s.NoProgress(now).Round(time.Second), waiting, s.OldestSeq, s.Lag(now).Round(time.Second)))
		}
	}
	return out
}

// healthBoard holds the last check of each stream; Metrics owns it so the
// gauges read it at scrape time.
type healthBoard struct {
	mu         sync.Mutex
	streams    map[string]StreamHealth
	stallAfter time.Duration
	skew       time.Duration // the Skew of the last check that measured one
	// streamRepaired counts, by stream, the times this process put a
	// stream's settings back or made a deleted stream again.
	streamRepaired map[string]float64
	// watched is what the checks found of each watched stream
	// (checkWatched).
	watched map[string]watchedState
	// belowFloor is, by stream (the DLQ stream), which of its limits
	// setups and checks found below their floors (holdFloor).
	belowFloor map[string]limitFloor
}

func newHealthBoard() *healthBoard {
	return &healthBoard{streams: map[string]StreamHealth{}, streamRepaired: map[string]float64{}, watched: map[string]watchedState{},
		belowFloor: map[string]limitFloor{}}
}

// exportRepaired starts streamRepaired at 0 for streams, so that the
// first repair (at Setup too, before any check) is an increase.
func (b *healthBoard) exportRepaired(streams []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, stream := range streams {
		if _, ok := b.streamRepaired[stream]; !ok {
			b.streamRepaired[stream] = 0
		}
	}
}

func (b *healthBoard) countStreamRepaired(stream string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streamRepaired[stream]++
}

// repairedStreams is streamRepaired, copied.
func (b *healthBoard) repairedStreams() map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]float64, len(b.streamRepaired))
	for k, v := range b.streamRepaired {
		out[k] = v
	}
	return out
}

func (b *healthBoard) setStallAfter(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stallAfter = d
}

func (b *healthBoard) snapshot() IngestHealth {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := IngestHealth{StallAfter: b.stallAfter}
	for _, s := range b.streams {
		h.Streams = append(h.Streams, s)
	}
	slices.SortFunc(h.Streams, func(a, b StreamHealth) int { return cmp.Compare(a.Stream, b.Stream) })
	return h
}

func (b *healthBoard) get(stream string) StreamHealth {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.streams[stream]
	if !ok {
		s = StreamHealth{Stream: stream}
	}
	return s
}

func (b *healthBoard) put(s StreamHealth) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streams[s.Stream] = s
}

func (b *healthBoard) setSkew(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.skew = d
}

// lastSkew is how far the console's clock was ahead of the NATS server's
// at the last check; 0 before one.
func (b *healthBoard) lastSkew() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.skew
}

// Health returns how ingest stands as of the last checks.
func (in *Ingester) Health() IngestHealth { return in.metrics.health.snapshot() }

// monitor checks the consumers every HealthEvery, and at once when asked
// (checkSoon), until ctx ends. A consumer or stream found missing makes
// Run set them up again; a consumer or stream whose settings someone
// changed has them put back (putBack, keepStream).
func (in *Ingester) monitor(ctx context.Context) {
	streams := []string{in.cfg.Stream}
	if len(in.cfg.Watch) > 0 {
		streams = append(streams, in.cfg.AdvisoryStream)
	}
	t := time.NewTicker(in.cfg.HealthEvery)
	defer t.Stop()
	for {
		for _, stream := range streams {
			in.check(ctx, stream)
		}
		if len(in.cfg.Watch) > 0 {
			cctx, cancel := context.WithTimeout(ctx, max(in.cfg.HealthEvery, 5*time.Second))
			in.checkWatched(cctx)
			in.keepWatchers(cctx)
			cancel()
		}
		select {
		case <-t.C:
		case <-in.recheck:
		case <-ctx.Done():
			return
		}
	}
}

// check reads one consumer's state, and its stream's, into the board.
func (in *Ingester) check(ctx context.Context, stream string) {
	cctx, cancel := context.WithTimeout(ctx, max(in.cfg.HealthEvery, 5*time.Second))
	defer cancel()
	s := in.metrics.health.get(stream)
	now := time.Now()
	info, err := in.consumerInfo(cctx, stream)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			in.requestReset()
		}
		s.CheckErr = err.Error()
		if s.FailingSince.IsZero() {
			s.FailingSince = now
			in.log.Warn("checking the ingest consumer failed; will retry", "stream", stream, "err", err)
		}
		s.CheckedAt = now
		in.metrics.health.put(s)
		return
	}
	if !s.FailingSince.IsZero() {
		in.log.Info("checking the ingest consumer works again", "stream", stream, "failed_for", now.Sub(s.FailingSince).Round(time.Second))
	}
	in.compareIncarnation(stream, info, now)
	in.sawConsumer(stream, info.Config)
	in.keepSettings(cctx, stream, info, &s)
	// The stream's state: its last sequence bounds what the consumer has
	// not delivered, and its answer carries the server's time.
	var last, first uint64
	if st, err := in.js.Stream(cctx, stream); err != nil {
		in.log.Debug("read the stream's state", "stream", stream, "err", err)
	} else {
		si := st.CachedInfo()
		if !si.TimeStamp.IsZero() {
			s.Skew = time.Since(si.TimeStamp)
			in.metrics.health.setSkew(s.Skew)
		}
		last, first = si.State.LastSeq, si.State.FirstSeq
		s.Bytes, s.Msgs, s.FirstAt = si.State.Bytes, si.State.Msgs, time.Time{}
		if !si.State.FirstTime.IsZero() {
			s.FirstAt = si.State.FirstTime.Add(s.Skew)
		}
		cfg := in.keepStream(cctx, stream, si.Config, &s)
		if stream == in.cfg.Stream {
			in.holdFloor(cfg, false)
		}
		s.MaxBytes, s.MaxAge = max(cfg.MaxBytes, 0), cfg.MaxAge
	}
	moved := info.AckFloor.Stream != s.AckFloor
	done := settled(info)
	s.CheckedAt, s.CheckErr, s.FailingSince = now, "", time.Time{}
	s.Pending, s.Unacked = max(info.NumPending, undelivered(last, first, info.Delivered.Stream)), info.NumAckPending
	if s.Waiting() == 0 || moved || done > s.Settled || s.ProgressAt.IsZero() {
		s.ProgressAt = now
	}
	s.Settled = done // also when it shrinks: the consumer was made again
	if s.Waiting() == 0 {
		s.OldestSeq, s.OldestAt = 0, time.Time{}
	} else if moved || s.OldestAt.IsZero() {
		// The first message after the ack floor is the oldest not acked.
		// Read only when the floor moved: a stalled floor costs nothing.
		st, err := readStored(cctx, in.js, stream, info.AckFloor.Stream+1, true)
		switch {
		case err == nil:
			s.OldestSeq, s.OldestAt = st.Seq, st.Time.Add(s.Skew)
		case errors.Is(err, jetstream.ErrMsgNotFound):
			s.OldestSeq, s.OldestAt = 0, time.Time{}
		default:
			in.log.Debug("read the oldest unacked dead letter", "stream", stream, "err", err)
		}
	}
	switch {
	case s.MaxBytes <= 0 || s.Waiting() == 0:
		s.WaitingMean, s.sampledAt = 0, time.Time{}
	case moved || now.Sub(s.sampledAt) >= resampleEvery:
		s.WaitingMean, s.sampledAt = in.sampleWaiting(cctx, stream, info.AckFloor.Stream+1, last), now
	}
	s.AckFloor = info.AckFloor.Stream
	in.metrics.health.put(s)
}

// undelivered is how many messages a stream whose sequences run from
// first to last holds after delivered, whatever a consumer's filter
// takes (a message deleted in between counts until it is passed).
func undelivered(last, first, delivered uint64) uint64 {
	from := max(delivered, first-min(first, 1))
	if last <= from {
		return 0
	}
	return last - from
}

// keepSettings compares the settings of stream's consumer (info) with the
// console's and puts them back (putBack), from the first sequence the
// consumer may have passed over since the last check that found them
// right. What it could not put back is s's ConsumerDrift, logged when it
// changes.
func (in *Ingester) keepSettings(ctx context.Context, stream string, info *jetstream.ConsumerInfo, s *StreamHealth) {
	right, err := in.putBack(ctx, stream, info, s.redeliverFrom)
	if right {
		s.redeliverFrom = info.AckFloor.Stream + 1
	}
	was := s.ConsumerDrift
	s.ConsumerDrift = ""
	if err != nil && ctx.Err() == nil {
		s.ConsumerDrift = err.Error()
	}
	if s.ConsumerDrift != was && s.ConsumerDrift != "" {
		in.log.Error("the ingest consumer's settings are not the console's and could not be put back: dead letters may never be delivered",
			"stream", stream, "consumer", in.cfg.Durable, "err", err)
	}
}

// compareIncarnation compares the consumer found (asked for at asked)
// with the one the current session reads: one made at another time (by
// another replica, after the stream or the consumer was deleted) retires
// the session's incarnation, lest its acks settle the new consumer's
// messages, and makes Run consume anew.
func (in *Ingester) compareIncarnation(stream string, info *jetstream.ConsumerInfo, asked time.Time) {
	if inc := in.incarnationOf(stream); inc != nil {
		in.judgeIncarnation(inc, info, asked)
	}
}

// judgeIncarnation records what asking for inc's consumer at asked found
// (info; nil: no such consumer or stream): the one inc started on
// confirms it; one made at another time, or none, retires inc (its acks
// would settle the new consumer's messages) and makes Run consume anew.
func (in *Ingester) judgeIncarnation(inc *incarnation, info *jetstream.ConsumerInfo, asked time.Time) {
	if info != nil && info.Created.Equal(inc.created) {
		inc.confirmed(asked)
		return
	}
	if !inc.isRetired() {
		var created time.Time
		if info != nil {
			created = info.Created
		}
		in.log.Warn("the ingest consumer was made again: what the old one delivered is stored and no longer acked",
			"stream", inc.stream, "consumer", in.cfg.Durable, "created", created, "was_created", inc.created)
	}
	inc.retire()
	in.requestReset()
}

func (in *Ingester) consumerInfo(ctx context.Context, stream string) (*jetstream.ConsumerInfo, error) {
	cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", in.cfg.Durable, stream, err)
	}
	return cons.CachedInfo(), nil
}

// healthCollector exports the board as gauges, computed at scrape time.
type healthCollector struct {
	board                        *healthBoard
	pending, unacked, age, stuck *prometheus.Desc
	bytes, maxBytes, maxAge      *prometheus.Desc
	firstAge, risk, drift        *prometheus.Desc
	streamRepaired, streamDrift  *prometheus.Desc
	watchedMissing, belowFloor   *prometheus.Desc
}

func newHealthCollector(b *healthBoard) *healthCollector {
	l := []string{"stream"}
	return &healthCollector{
		board: b,
		pending: prometheus.NewDesc("quarantine_ingest_pending_messages",
			"Dead letters in the stream not yet stored and acked by the console's consumer (undelivered plus unacked), as of the last check.", l, nil),
		unacked: prometheus.NewDesc("quarantine_ingest_unacked_messages",
			"Dead letters delivered to the console and not yet stored and acked, as of the last check.", l, nil),
		age: prometheus.NewDesc("quarantine_ingest_oldest_unacked_age_seconds",
			"Age of the oldest dead letter in the stream not yet stored (since JetStream stored it); 0 when none waits. The DLQ lag.", l, nil),
		stuck: prometheus.NewDesc("quarantine_ingest_no_progress_seconds",
			"How long dead letters have waited with none stored and acked by the consumer (the ack floor may stand still behind one that cannot be stored while others are); 0 when none waits.", l, nil),
		bytes: prometheus.NewDesc("quarantine_dlq_stream_bytes",
			"Bytes the stream holds, stored dead letters included, as of the last check.", l, nil),
		maxBytes: prometheus.NewDesc("quarantine_dlq_stream_max_bytes",
			"The stream's size limit (DLQ_MAX_BYTES); 0 when it has none.", l, nil),
		maxAge: prometheus.NewDesc("quarantine_dlq_stream_max_age_seconds",
			"The stream's age limit (DLQ_MAX_AGE); 0 when it has none.", l, nil),
		firstAge: prometheus.NewDesc("quarantine_dlq_stream_first_age_seconds",
			"Age of the stream's oldest message, stored or not.", l, nil),
		risk: prometheus.NewDesc("quarantine_dlq_stream_limit_risk_ratio",
			"Share of the stream's limit the dead letters not yet stored take (limit=age: the oldest one's age over DLQ_MAX_AGE; limit=bytes: their estimated bytes over DLQ_MAX_BYTES); at 1 JetStream discards them unstored. 0 when the limit is not set.",
			[]string{"stream", "limit"}, nil),
		drift: prometheus.NewDesc("quarantine_ingest_consumer_drift",
			"1 while the console's ingest consumer has settings the console could not put back (made by hand with another deliver policy or start, or the update failed): dead letters may never be delivered; the dashboard and the log say which.", l, nil),
		streamRepaired: prometheus.NewDesc("quarantine_dlq_stream_repaired_total",
			"Times this console found the stream's settings changed (by hand?) and put its own back (subjects, limits lowered or set, retention), or found it deleted and made it again; the log says what, with both values.", l, nil),
		streamDrift: prometheus.NewDesc("quarantine_dlq_stream_drift",
			"1 while the stream has settings the console does not put back (discard policy, sealed, memory storage, work queue retention, or the update failed): dead letters may be refused or deleted before they are stored; the dashboard and the log say which and what to run.", l, nil),
		watchedMissing: prometheus.NewDesc("quarantine_ingest_watched_stream_missing",
			"1 while a stream DLQ_WATCH_STREAMS names does not exist (a misspelt name, a stream renamed or in another account): none of its consumers' give-ups is captured; 0 once it does. Checked at setup and at every check.", l, nil),
		belowFloor: prometheus.NewDesc("quarantine_dlq_stream_limit_below_floor",
			"1 while the DLQ stream's own limit is below the least the console takes at start (limit=age: under 15m, where DeadLetterStreamNearLimit cannot fire before JetStream discards, or under four of the DLQ consumer's ack waits, where a killed replica's batch may be discarded before it is delivered again; limit=bytes: under twice the NATS server's max_payload, where JetStream may discard the largest dead letters unstored, with no figure showing it): a setting of 0 keeps the stream's own limit, and a max_payload raised since leaves a limit below it. Ingest goes on; the log gives the nats stream edit that raises it.",
			[]string{"stream", "limit"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.unacked
	ch <- c.age
	ch <- c.stuck
	ch <- c.bytes
	ch <- c.maxBytes
	ch <- c.maxAge
	ch <- c.firstAge
	ch <- c.risk
	ch <- c.drift
	ch <- c.streamRepaired
	ch <- c.streamDrift
	ch <- c.watchedMissing
	ch <- c.belowFloor
}

// Collect implements prometheus.Collector. Streams not checked yet are
// left out.
func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range c.board.snapshot().Streams {
		if s.CheckedAt.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Waiting()), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.unacked, prometheus.GaugeValue, float64(s.Unacked), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, s.Lag(now).Seconds(), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, s.NoProgress(now).Seconds(), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(s.Bytes), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.maxBytes, prometheus.GaugeValue, float64(s.MaxBytes), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.maxAge, prometheus.GaugeValue, s.MaxAge.Seconds(), s.Stream)
		first := 0.0
		if !s.FirstAt.IsZero() && s.Msgs > 0 {
			first = max(now.Sub(s.FirstAt).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.firstAge, prometheus.GaugeValue, first, s.Stream)
		age, bytes := s.LimitRisk(now)
		ch <- prometheus.MustNewConstMetric(c.risk, prometheus.GaugeValue, age, s.Stream, "age")
		ch <- prometheus.MustNewConstMetric(c.risk, prometheus.GaugeValue, bytes, s.Stream, "bytes")
		ch <- prometheus.MustNewConstMetric(c.drift, prometheus.GaugeValue, gaugeOf(s.ConsumerDrift != ""), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.streamDrift, prometheus.GaugeValue, gaugeOf(s.StreamDrift != ""), s.Stream)
	}
	for stream, f := range c.board.floors() {
		ch <- prometheus.MustNewConstMetric(c.belowFloor, prometheus.GaugeValue, gaugeOf(f.age), stream, "age")
		ch <- prometheus.MustNewConstMetric(c.belowFloor, prometheus.GaugeValue, gaugeOf(f.bytes), stream, "bytes")
	}
	for stream, missing := range c.board.watchedMissing() {
		ch <- prometheus.MustNewConstMetric(c.watchedMissing, prometheus.GaugeValue, gaugeOf(missing), stream)
	}
	// From 0 for each stream the ingester reads (exportRepaired).
	for stream, n := range c.board.repairedStreams() {
		ch <- prometheus.MustNewConstMetric(c.streamRepaired, prometheus.CounterValue, n, stream)
	}
}

// gaugeOf is a condition as a gauge: 1 while it holds, else 0.
func gaugeOf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
