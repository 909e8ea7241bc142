// Package dlqdemo is demo traffic for the console: real JetStream streams,
// real publishers and real consumers whose handlers fail the way production
// ones do. Transient errors are retried, schema-invalid messages are
// dead-lettered at once with their stack trace through the dlq producer
// helper, and poison messages are left to hit MaxDeliver or are terminated,
// so JetStream raises the advisories the console captures.
package dlqdemo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/quarantine-console/quarantine/dlq"
)

// Stream is one of the demo's business streams.
type Stream struct {
	Name    string
	Subject string // filter, e.g. app.*.orders.>
}

// Streams are the demo's streams; serve watches them for advisories
// (DLQ_WATCH_STREAMS) with the default template *.{tenant}.{item_type}.
var Streams = []Stream{
	{"ORDERS", "app.*.orders.>"},
	{"EMAILS", "app.*.email.>"},
	{"SEARCH", "app.*.search.>"},
	{"ANALYTICS", "app.*.analytics.>"},
	{"ACCOUNTS", "app.*.accounts.>"},
}

// WatchList is the DLQ_WATCH_STREAMS value matching Streams.
func WatchList() string {
	names := make([]string, len(Streams))
	for i, s := range Streams {
		names[i] = s.Name
	}
	return strings.Join(names, ",")
}

// MaxDeliver is the demo consumers' delivery limit.
const MaxDeliver = 4

// MarkKey is the metadata key ("quarantine-demo", value "1") of every stream
// and consumer the demo makes. The demo changes only streams and consumers
// that carry it: one of the same name without it is someone else's.
const MarkKey = "quarantine-demo"

// ErrNotTheDemos is returned by Run when a stream or consumer of one of the
// demo's names exists without the demo's mark (MarkKey): the demo would
// replace its subjects and limits and consume its messages.
var ErrNotTheDemos = errors.New("not made by console demo")

func marked(md map[string]string) bool { return md[MarkKey] == "1" }

func durable(s Stream) string { return strings.ToLower(s.Name) + "-worker" }

func streamConfig(s Stream) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: s.Name, Subjects: []string{s.Subject}, Retention: jetstream.LimitsPolicy,
		Storage: jetstream.FileStorage, MaxAge: 7 * 24 * time.Hour, Metadata: map[string]string{MarkKey: "1"},
	}
}

func consumerConfig(s Stream) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: durable(s), AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: MaxDeliver, AckWait: 5 * time.Second, Metadata: map[string]string{MarkKey: "1"},
	}
}

func notTheDemos(what string) error {
	return fmt.Errorf("%s exists and was %w (it has no %q metadata): the demo changes and consumes only what it made; "+
		"run it against a NATS server of its own (one an older console demo made, before it marked them, "+
		"as in make run's .data/nats: delete it and run again)", what, ErrNotTheDemos, MarkKey)
}

// found is what claim found of one of the demo's streams: whether it and
// its consumer exist (each with the demo's mark).
type found struct{ stream, consumer bool }

// claim looks up every stream and consumer of the demo's names before any
// is made or changed, and returns an error wrapping ErrNotTheDemos, naming
// it, for one that exists without the demo's mark, unless takeOver: then
// it is counted as the demo's, and set up marked (Config.TakeOverUnmarked).
func claim(ctx context.Context, js jetstream.JetStream, takeOver bool) ([]found, error) {
	out := make([]found, len(Streams))
	for i, s := range Streams {
		st, err := js.Stream(ctx, s.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look up stream %s: %w", s.Name, err)
		}
		if !takeOver && !marked(st.CachedInfo().Config.Metadata) {
			return nil, notTheDemos("stream " + s.Name)
		}
		out[i].stream = true
		c, err := st.Consumer(ctx, durable(s))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look up consumer %s on %s: %w", durable(s), s.Name, err)
		}
		if !takeOver && !marked(c.CachedInfo().Config.Metadata) {
			return nil, notTheDemos(fmt.Sprintf("consumer %s on stream %s", durable(s), s.Name))
		}
		out[i].consumer = true
	}
	return out, nil
}

// setUp makes the demo's streams and consumers that do not exist, marked
// as the demo's, and brings those it made before (claim) to its
// configuration. Create refuses a stream or consumer made in between with
// another configuration.
func setUp(ctx context.Context, js jetstream.JetStream, takeOver bool) ([]jetstream.Consumer, error) {
	had, err := claim(ctx, js, takeOver)
	if err != nil {
		return nil, err
	}
	out := make([]jetstream.Consumer, len(Streams))
	for i, s := range Streams {
		if had[i].stream {
			_, err = js.UpdateStream(ctx, streamConfig(s))
		} else {
			_, err = js.CreateStream(ctx, streamConfig(s))
		}
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", s.Name, err)
		}
		if had[i].consumer {
			out[i], err = js.UpdateConsumer(ctx, s.Name, consumerConfig(s))
		} else {
			out[i], err = js.CreateConsumer(ctx, s.Name, consumerConfig(s))
		}
		if err != nil {
			return nil, fmt.Errorf("create consumer %s on %s: %w", durable(s), s.Name, err)
		}
	}
	return out, nil
}

// Config says how much traffic to make.
type Config struct {
	Prefix  string   // DLQ subject prefix
	Tenants []string // default acme, globex
	Rate    float64  // originals published per second
	Count   int      // originals to publish; 0 means until ctx ends
	Log     *slog.Logger
	// Ready, when set, is called once the streams and consumers are set
	// up, before the first message is published.
	Ready func()
	// TakeOverUnmarked sets up streams and consumers of the demo's names
	// that carry no mark as the demo's, marking them, instead of refusing
	// them: only for a NATS server of the demo's own whose store an older
	// demo made before it marked what it made (make run's embedded server
	// and its .data/nats).
	TakeOverUnmarked bool
}

// Stats counts what the demo did.
type Stats struct {
	Published, Succeeded, Retried, DeadLettered, Exhausted, Terminated atomic.Int64
}

func (s *Stats) String() string {
	return fmt.Sprintf("published=%d ok=%d retried=%d dead-lettered=%d max-deliver=%d terminated=%d",
		s.Published.Load(), s.Succeeded.Load(), s.Retried.Load(), s.DeadLettered.Load(), s.Exhausted.Load(), s.Terminated.Load())
}

// Run creates the streams and consumers, then publishes and consumes until
// Count messages were handled or ctx ends. It makes only what does not
// exist, marked as the demo's (MarkKey), and updates only what carries the
// mark: a stream or consumer of one of its names without it (a
// deployment's ORDERS, say) makes it return an error wrapping
// ErrNotTheDemos, naming it, before anything was made or changed.
func Run(ctx context.Context, js jetstream.JetStream, cfg Config) (*Stats, error) {
	if len(cfg.Tenants) == 0 {
		cfg.Tenants = []string{"acme", "globex"}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = dlq.DefaultSubjectPrefix
	}
	stats := &Stats{}
	svc := &service{js: js, cfg: cfg, stats: stats}
	consumers, err := setUp(ctx, js, cfg.TakeOverUnmarked)
	if err != nil {
		return nil, err
	}
	for i, cons := range consumers {
		cc, err := cons.Consume(func(m jetstream.Msg) { svc.handle(ctx, m) })
		if err != nil {
			return nil, fmt.Errorf("consume %s: %w", Streams[i].Name, err)
		}
		defer cc.Stop()
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}

	limiter := rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/10)))
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	for n := 0; cfg.Count == 0 || n < cfg.Count; n++ {
		if err := limiter.Wait(ctx); err != nil {
			return stats, nil // ctx ended
		}
		if err := svc.publish(ctx, n); err != nil && ctx.Err() == nil {
			cfg.Log.Warn("demo publish", "err", err)
		}
		select {
		case <-report.C:
			cfg.Log.Info("demo traffic", "stats", stats.String())
		default:
		}
	}
	// Let the consumers finish what is in flight: retries and MaxDeliver take a few seconds.
	deadline := time.After(30 * time.Second)
	for stats.handled() < stats.Published.Load() {
		select {
		case <-ctx.Done():
			return stats, nil
		case <-deadline:
			return stats, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	return stats, nil
}

func (s *Stats) handled() int64 {
	return s.Succeeded.Load() + s.DeadLettered.Load() + s.Exhausted.Load() + s.Terminated.Load()
}

type service struct {
	js    jetstream.JetStream
	cfg   Config
	stats *Stats
}

// itemKinds are the demo item types, one per policy class.
var itemKinds = []string{"orders.refund", "email.send", "search.index_update", "analytics.event", "accounts.permission_grant"}

func (s *service) publish(ctx context.Context, n int) error {
	tenant := s.cfg.Tenants[rand.IntN(len(s.cfg.Tenants))]
	kind := itemKinds[rand.IntN(len(itemKinds))]
	id := fmt.Sprintf("%s-%d-%06d", strings.ReplaceAll(kind, ".", "-"), time.Now().Unix()%100000, n)
	body := samplePayload(kind, n)
	m := &nats.Msg{Subject: "app." + tenant + "." + kind, Data: body, Header: nats.Header{}}
	if n%10 != 3 { // a few producers never set an id: the console derives one
		m.Header.Set("Nats-Msg-Id", id)
	}
	m.Header.Set("Correlation-Id", fmt.Sprintf("req-%08x", rand.Uint32()))
	if kind == "email.send" && n%17 != 5 { // an idempotent operation, except for the odd producer that forgets it
		m.Header.Set("Idempotency-Key", "send-"+id)
	}
	if _, err := s.js.PublishMsg(ctx, m); err != nil {
		return err
	}
	s.stats.Published.Add(1)
	return nil
}

func samplePayload(kind string, n int) []byte {
	var v any
	switch kind {
	case "orders.refund":
		v = map[string]any{"order_id": fmt.Sprintf("ord-%d", 10000+n), "amount_cents": 500 + n%9000, "currency": "EUR", "reason": "damaged in transit"}
	case "email.send":
		subject := "Your receipt"
		if n%23 == 0 {
			subject = `<script>alert("owned")</script> "><img src=x onerror=alert(1)>`
		}
		v = map[string]any{"to": fmt.Sprintf("customer%d@example.com", n%500), "template": "receipt", "subject": subject}
	case "search.index_update":
		v = map[string]any{"index": "products", "doc_id": fmt.Sprintf("sku-%d", n%2000), "version": n}
	case "analytics.event":
		v = map[string]any{"event": "page_view", "user": fmt.Sprintf("u%d", n%800), "path": "/checkout", "ts": time.Now().UTC()}
	default:
		v = map[string]any{"account": fmt.Sprintf("acct-%d", n%300), "grant": "billing:admin", "requested_by": fmt.Sprintf("user:%d", n%40)}
	}
	b, _ := json.Marshal(v) // maps of plain values always marshal
	if n%13 == 7 {
		b = b[:len(b)/2] // a producer bug: truncated JSON
	}
	return b
}

// handle is the demo's business consumer.
func (s *service) handle(ctx context.Context, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	toks := strings.SplitN(m.Subject(), ".", 3) // app.<tenant>.<item type>
	if len(toks) < 3 {
		_ = m.Term()
		return
	}
	tenant, kind := toks[1], toks[2]
	var payload map[string]any
	if err := json.Unmarshal(m.Data(), &payload); err != nil {
		s.deadLetter(ctx, m, tenant, kind, dlq.ClassSchemaInvalid, fmt.Errorf("decode %s: %w", kind, err))
		return
	}
	fate := fnv32(m.Headers().Get("Correlation-Id")) % 100
	switch {
	case fate < 70:
		s.ok(m)
	case fate < 80: // transient: the retry succeeds
		if md.NumDelivered == 1 {
			s.stats.Retried.Add(1)
			_ = m.NakWithDelay(300 * time.Millisecond)
			return
		}
		s.ok(m)
	case fate < 90: // a permanent failure after one retry
		if md.NumDelivered == 1 {
			s.stats.Retried.Add(1)
			_ = m.NakWithDelay(200 * time.Millisecond)
			return
		}
		class, err := businessError(kind, payload)
		s.deadLetter(ctx, m, tenant, kind, class, err)
	case fate < 97: // poison: never acked, JetStream gives up at MaxDeliver
		if md.NumDelivered >= MaxDeliver {
			s.stats.Exhausted.Add(1)
		}
		_ = m.NakWithDelay(100 * time.Millisecond)
	default:
		s.stats.Terminated.Add(1)
		_ = m.TermWithReason(fmt.Sprintf("%s: unsupported payload version for tenant %s", kind, tenant))
	}
}

func (s *service) ok(m jetstream.Msg) {
	s.stats.Succeeded.Add(1)
	_ = m.Ack()
}

func (s *service) deadLetter(ctx context.Context, m jetstream.Msg, tenant, kind string, class dlq.ErrorClass, cause error) {
	md, _ := m.Metadata()
	f := dlq.Failure{
		Err: cause, Class: class, Stack: stackOf(kind), Consumer: md.Consumer,
		FirstFailedAt: md.Timestamp, CorrelationID: m.Headers().Get("Correlation-Id"),
		OperationID: m.Headers().Get("Idempotency-Key"),
	}
	if kind == "accounts.permission_grant" {
		var p struct {
			RequestedBy string `json:"requested_by"`
		}
		if json.Unmarshal(m.Data(), &p) == nil {
			f.Principal = p.RequestedBy
		}
	}
	if err := dlq.Publish(ctx, s.js, s.cfg.Prefix, tenant, kind, m, f); err != nil {
		s.cfg.Log.Warn("dead-letter failed; will be redelivered", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	s.stats.DeadLettered.Add(1)
	_ = m.Ack()
}

func businessError(kind string, p map[string]any) (dlq.ErrorClass, error) {
	switch kind {
	case "orders.refund":
		return dlq.ClassUnknownEffect, fmt.Errorf("refund %v: payment gateway timed out after 30s; refund state unknown", p["order_id"])
	case "email.send":
		return dlq.ClassPermanent, fmt.Errorf("smtp: 550 5.1.1 <%v>: recipient address rejected", p["to"])
	case "search.index_update":
		return dlq.ClassStaleVersion, fmt.Errorf("index products: version conflict for doc %v (have %d, got %v)", p["doc_id"], rand.IntN(90)+10, p["version"])
	case "analytics.event":
		return dlq.ClassTransient, errors.New("analytics sink: context deadline exceeded after 5s")
	default:
		return dlq.ClassPolicy, fmt.Errorf("grant %v to %v: principal %v lacks accounts:grant", p["grant"], p["account"], p["requested_by"])
	}
}

// stackOf returns a real goroutine stack from inside a nested call chain,
// as a consumer would attach it.
func stackOf(kind string) string {
	return handlerFor(kind)
}

//go:noinline
func handlerFor(kind string) string { return decodeAndApply(kind) }

//go:noinline
func decodeAndApply(kind string) string {
	lines := strings.Split(string(debug.Stack()), "\n")
	return strings.Join(lines[:min(len(lines), 16)], "\n")
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
