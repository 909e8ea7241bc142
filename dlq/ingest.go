package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// IngestConfig says where dead letters come from and how they are batched.
type IngestConfig struct {
	Prefix         string        // DLQ subject prefix; default "dlq"
	Stream         string        // DLQ stream; default "DLQ"
	Durable        string        // pull consumer on it; default "quarantine-ingest"
	AdvisoryStream string        // stream capturing advisories; default "DLQ_ADVISORIES"
	Replicas       int           // stream replicas when created; default 1
	BatchSize      int           // rows per insert; default 1000
	MaxWait        time.Duration // longest a message waits for its batch to fill; default 50ms
	MaxBatchBytes  int           // payload bytes per insert; default 16 MiB
	Workers        int           // concurrent batch writers; default 2
	AckWait        time.Duration // redelivery of unacked messages; default 1 minute
	Watch          []WatchStream // streams whose give-ups are captured from advisories
}

func (c *IngestConfig) defaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultSubjectPrefix
	}
	if c.Stream == "" {
		c.Stream = "DLQ"
	}
	if c.Durable == "" {
		c.Durable = "quarantine-ingest"
	}
	if c.AdvisoryStream == "" {
		c.AdvisoryStream = "DLQ_ADVISORIES"
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 50 * time.Millisecond
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 16 << 20
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.AckWait <= 0 {
		c.AckWait = time.Minute
	}
}

// Ingester moves dead letters from JetStream into PostgreSQL: it stores a
// batch, commits, and only then acks, so a message is never acked before it
// is a row. Redelivery is harmless (the source key is unique).
type Ingester struct {
	cfg     IngestConfig
	js      jetstream.JetStream
	store   *Store
	metrics *Metrics
	log     *slog.Logger

	streamsMu sync.Mutex
	streams   map[string]jetstream.Stream

	// afterCommit, when set (tests), runs after a batch is stored and
	// before it is acked; returning false skips the acks, as a crash there would.
	afterCommit func(n int) bool
}

type item struct {
	msg jetstream.Msg
	rec *Record // set for advisories; DLQ messages are parsed by the writer
}

// NewIngester returns an Ingester; call Setup once, then Run.
func NewIngester(cfg IngestConfig, js jetstream.JetStream, store *Store, metrics *Metrics, log *slog.Logger) *Ingester {
	cfg.defaults()
	return &Ingester{cfg: cfg, js: js, store: store, metrics: metrics, log: log, streams: map[string]jetstream.Stream{}}
}

// Config returns the configuration with defaults applied.
func (in *Ingester) Config() IngestConfig { return in.cfg }

// Setup creates, when missing, the DLQ stream (limits retention, file
// storage) and the advisory capture stream, and creates or updates the
// durable pull consumers on them.
func (in *Ingester) Setup(ctx context.Context) error {
	if err := in.ensureStream(ctx, jetstream.StreamConfig{
		Name:        in.cfg.Stream,
		Description: "Dead letters for the Quarantine console",
		Subjects:    []string{in.cfg.Prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    in.cfg.Replicas,
		Duplicates:  2 * time.Minute,
	}); err != nil {
		return err
	}
	if err := in.ensureConsumer(ctx, in.cfg.Stream); err != nil {
		return err
	}
	if len(in.cfg.Watch) == 0 {
		return nil
	}
	var subjects []string
	for _, w := range in.cfg.Watch {
		subjects = append(subjects, AdvisoryMaxDeliveries+"."+w.Name+".*", AdvisoryTerminated+"."+w.Name+".*")
	}
	if err := in.ensureStream(ctx, jetstream.StreamConfig{
		Name:        in.cfg.AdvisoryStream,
		Description: "MAX_DELIVERIES and MSG_TERMINATED advisories captured for the Quarantine console",
		Subjects:    subjects,
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    in.cfg.Replicas,
		MaxAge:      30 * 24 * time.Hour,
	}); err != nil {
		return err
	}
	return in.ensureConsumer(ctx, in.cfg.AdvisoryStream)
}

// ensureStream creates the stream when missing. An existing stream keeps
// its settings (an operator may have tuned them); only missing subjects are
// added.
func (in *Ingester) ensureStream(ctx context.Context, want jetstream.StreamConfig) error {
	s, err := in.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = in.js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil // another replica created it first
		}
		if err != nil {
			return fmt.Errorf("create stream %s: %w", want.Name, err)
		}
		in.log.Info("created stream", "stream", want.Name, "subjects", want.Subjects)
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", want.Name, err)
	}
	cfg := s.CachedInfo().Config
	have := map[string]bool{}
	for _, sub := range cfg.Subjects {
		have[sub] = true
	}
	changed := false
	for _, sub := range want.Subjects {
		if !have[sub] {
			cfg.Subjects = append(cfg.Subjects, sub)
			changed = true
		}
	}
	if changed {
		if _, err := in.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("add subjects to stream %s: %w", want.Name, err)
		}
		in.log.Info("added subjects to stream", "stream", want.Name, "subjects", cfg.Subjects)
	}
	return nil
}

func (in *Ingester) ensureConsumer(ctx context.Context, stream string) error {
	_, err := in.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable:       in.cfg.Durable,
		Description:   "Quarantine console ingest: acked only after the row is committed",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       in.cfg.AckWait,
		MaxDeliver:    -1, // a dead letter is never given up on
		MaxAckPending: 20 * in.cfg.BatchSize,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", in.cfg.Durable, stream, err)
	}
	return nil
}

// Run consumes until ctx ends. Messages in flight when it ends are not
// acked and will be delivered again.
func (in *Ingester) Run(ctx context.Context) (err error) {
	defer func() {
		if ctx.Err() != nil {
			err = nil // stopped, not failed
		}
	}()
	items := make(chan item, 2*in.cfg.BatchSize)
	stop, err := in.consume(ctx, in.cfg.Stream, func(m jetstream.Msg) {
		select {
		case items <- item{msg: m}:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	if len(in.cfg.Watch) > 0 {
		stopAdv, err := in.consume(ctx, in.cfg.AdvisoryStream, func(m jetstream.Msg) { in.handleAdvisory(ctx, m, items) })
		if err != nil {
			return err
		}
		defer stopAdv()
	}
	var wg sync.WaitGroup
	for range in.cfg.Workers {
		wg.Go(func() { in.writeLoop(ctx, items) })
	}
	in.log.Info("ingesting", "stream", in.cfg.Stream, "consumer", in.cfg.Durable, "workers", in.cfg.Workers)
	wg.Wait()
	return nil
}

func (in *Ingester) consume(ctx context.Context, stream string, handle jetstream.MessageHandler) (func(), error) {
	cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
	if err != nil {
		return nil, fmt.Errorf("open consumer %s on %s: %w", in.cfg.Durable, stream, err)
	}
	cc, err := cons.Consume(handle,
		jetstream.PullMaxMessagesWithBytesLimit(2*in.cfg.BatchSize, 4*in.cfg.MaxBatchBytes),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if ctx.Err() == nil {
				in.log.Warn("consume", "stream", stream, "err", err)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", stream, err)
	}
	return cc.Stop, nil
}

// writeLoop gathers a batch (up to BatchSize messages or MaxBatchBytes, or
// whatever came within MaxWait of the first) and stores it.
func (in *Ingester) writeLoop(ctx context.Context, items <-chan item) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var batch []item
		select {
		case it := <-items:
			batch = append(batch, it)
		case <-ctx.Done():
			return
		}
		size := len(batch[0].msg.Data())
		timer.Reset(in.cfg.MaxWait)
	fill:
		for len(batch) < in.cfg.BatchSize && size < in.cfg.MaxBatchBytes {
			select {
			case it := <-items:
				batch = append(batch, it)
				size += len(it.msg.Data())
			case <-timer.C:
				break fill
			case <-ctx.Done():
				return
			}
		}
		timer.Stop()
		in.flush(ctx, batch)
	}
}

// flush stores the batch, retrying with backoff while PostgreSQL is away,
// and acks only what is committed. It gives up only when ctx ends; the
// messages are then delivered again later.
func (in *Ingester) flush(ctx context.Context, batch []item) {
	recs := make([]Record, len(batch))
	for i, it := range batch {
		if it.rec != nil {
			recs[i] = *it.rec
			continue
		}
		recs[i] = ParseDLQ(in.cfg.Prefix, in.received(it.msg))
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		start := time.Now()
		inserted, err := in.store.Insert(ctx, recs)
		if err == nil {
			in.metrics.observeBatch(len(recs), time.Since(start), inserted)
			if in.afterCommit != nil && !in.afterCommit(len(recs)) {
				return
			}
			for _, it := range batch {
				if err := it.msg.Ack(); err != nil {
					in.log.Debug("ack after commit failed; redelivery will be deduplicated", "err", err)
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		in.metrics.StoreErrors.Inc()
		in.log.Warn("storing dead letters failed; will retry, messages stay unacked",
			"batch", len(recs), "attempt", attempt, "retry_in", backoff, "err", err)
		for _, it := range batch {
			_ = it.msg.InProgress() // keep them ours while we wait; if lost, redelivery is deduplicated
		}
		select {
		case <-time.After(backoff + rand.N(backoff/2)):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (in *Ingester) received(m jetstream.Msg) Received {
	r := Received{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Stream: in.cfg.Stream, Time: time.Now()}
	if md, err := m.Metadata(); err == nil {
		r.Stream, r.Seq, r.Time = md.Stream, md.Sequence.Stream, md.Timestamp
	}
	return r
}

// handleAdvisory fetches the message an advisory points at and queues the
// record. When the fetch fails for a reason other than "gone", the advisory
// is redelivered later.
func (in *Ingester) handleAdvisory(ctx context.Context, m jetstream.Msg, items chan<- item) {
	adv, perr := parseAdvisoryJSON(m.Data())
	var rec Record
	if perr != nil {
		rec = unreadableAdvisory(in.received(m), perr)
	} else {
		w := in.watchFor(adv.Stream)
		orig, err := in.fetchOriginal(ctx, adv)
		if err != nil {
			in.log.Warn("fetch original for advisory; will retry", "stream", adv.Stream, "seq", adv.StreamSeq, "err", err)
			_ = m.NakWithDelay(2 * time.Second)
			return
		}
		raw := json.RawMessage(m.Data())
		rec = ParseAdvisory(w, adv, orig, raw)
	}
	select {
	case items <- item{msg: m, rec: &rec}:
	case <-ctx.Done():
	}
}

func (in *Ingester) watchFor(stream string) WatchStream {
	for _, w := range in.cfg.Watch {
		if w.Name == stream {
			return w
		}
	}
	ws, _ := ParseWatchStreams(stream) // a stream name alone always parses
	return ws[0]
}

// fetchOriginal returns the message, nil when it is gone, or an error.
func (in *Ingester) fetchOriginal(ctx context.Context, adv Advisory) (*Original, error) {
	in.streamsMu.Lock()
	s, ok := in.streams[adv.Stream]
	in.streamsMu.Unlock()
	if !ok {
		var err error
		s, err = in.js.Stream(ctx, adv.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		in.streamsMu.Lock()
		in.streams[adv.Stream] = s
		in.streamsMu.Unlock()
	}
	raw, err := s.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Original{Subject: raw.Subject, Header: raw.Header, Data: raw.Data, Time: raw.Time}, nil
}
