package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/semaphore"
)

// DefaultIngestWorkers is how many batch writers ingest runs when its
// config names none; each holds a connection while it inserts.
const DefaultIngestWorkers = 2

// IngestConfig says where dead letters come from and how they are batched.
type IngestConfig struct {
	Prefix         string        // DLQ subject prefix; default "dlq"
	Stream         string        // DLQ stream; default "DLQ"
	Durable        string        // pull consumer on it; default "quarantine-ingest"
	AdvisoryStream string        // stream capturing advisories; default AdvisoryStreamOf(Stream)
	Replicas       int           // stream replicas when created; default 1
	BatchSize      int           // rows per insert; default 1000
	MaxWait        time.Duration // longest a message waits for its batch to fill; default 50ms
	MaxBatchBytes  int           // payload and header bytes per insert; default 16 MiB
	Workers        int           // concurrent batch writers; default DefaultIngestWorkers
	AckWait        time.Duration // redelivery of unacked messages; default 1 minute
	Watch          []WatchStream // streams whose give-ups are captured from advisories
	// UntrustedAdvisories flags every give-up captured from an advisory
	// advisory_unverified (stored, shown, never replayed), for an account
	// whose clients may publish on $JS.EVENT.ADVISORY.>: a forged give-up
	// that names a consumer which did deliver the message (a tenant's own
	// filtered consumer, which acked it) passes every check JetStream
	// allows (checkAdvisoryConsumer), and nothing tells it from a real
	// one. Serve sets it unless DLQ_ADVISORIES_TRUSTED says the account
	// lets no client publish there.
	UntrustedAdvisories bool
	// WatchGrace is how long a watched stream may be missing before it
	// is warned of (checkWatched): producers started with the console
	// often make their streams just after it. Zero: at once. Serve uses
	// DefaultWatchGrace.
	WatchGrace time.Duration

	// MaxBufferedBytes bounds the payload and header bytes received and
	// not yet stored (waiting for a writer, or in its batch); default
	// (Workers+1)·MaxBatchBytes. A message larger than it still goes, alone.
	MaxBufferedBytes int
	// StallAfter is how long dead letters may wait with none stored and
	// acked by the consumer (StreamHealth.Settled standing still) before
	// Health reports ingest stalled (the dashboard says so). Default 2
	// minutes; negative: never.
	StallAfter time.Duration
	// HealthEvery is how often the consumers are checked (pending count,
	// oldest unacked message, whether they still exist, whether their
	// settings, and their streams', are still the console's: see putBack
	// and keepStream). Default 5 seconds.
	HealthEvery time.Duration
	// SweepEvery is how often a replica sweeps the streams for dead
	// letters acked on the ingest consumer without a row (see sweep).
	// Default 30 seconds.
	SweepEvery time.Duration
	// RetryUnstorable is when a dead letter PostgreSQL refused in every
	// form is delivered again. Default 30 seconds.
	RetryUnstorable time.Duration
	// StreamMaxAge and StreamMaxBytes are the DLQ stream's limits
	// (DLQ_MAX_AGE, DLQ_MAX_BYTES): JetStream discards its oldest messages
	// past them. A new stream is made with them (zero: none); an existing
	// one only has a limit raised to them, never lowered nor set where it
	// has none (see limitsNotApplied). Zero leaves an existing stream as it is.
	StreamMaxAge   time.Duration
	StreamMaxBytes int64
	// StatementTimeout is the server's statement_timeout on the store's
	// pool (DATABASE_WORKER_STATEMENT_TIMEOUT). Each statement the
	// ingester runs in PostgreSQL, and each wait for a connection of the
	// pool, is given up statementDeadline after it starts, a little past
	// this: PostgreSQL ends a slow statement itself first (Busy), so only a
	// connection that hangs without an error reaches it; the attempt then
	// fails as if PostgreSQL were out of reach, and its batch is retried or
	// handed back (storeBatch) instead of being kept in progress for ever.
	// Each statement of a transaction has a deadline of its own, the
	// transaction none as a whole (Store.inTx): one of statements that
	// each end inside the server's timeout is answered, however long it
	// takes in all. Default 1 minute, serve's default.
	StatementTimeout time.Duration
}

// statementDeadline is how long after it starts the ingester gives up on
// one statement in PostgreSQL (or on the wait for a connection, never on a
// whole transaction: Store.inTx): the server's statement_timeout
// and a tenth of it more, at least a second more, so that the server's
// own timeout, and its error, come first.
func (c IngestConfig) statementDeadline() time.Duration {
	return c.StatementTimeout + max(c.StatementTimeout/10, time.Second)
}

// AdvisoryStreamOf is the advisory capture stream of the deployment whose
// DLQ stream is stream: "<stream>_ADVISORIES", DLQ_ADVISORIES for the
// default DLQ (its name before it was derived: nothing to rename). Not
// one fixed name: two deployments on one NATS account (each with its own
// DLQ_STREAM and DLQ_SUBJECT_PREFIX) would share one advisory stream and
// its durable consumer, each taking every other give-up of the other's
// watched streams into its own database. The durable keeps its name: a
// consumer's name is its stream's.
func AdvisoryStreamOf(stream string) string { return stream + "_ADVISORIES" }

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
		c.AdvisoryStream = AdvisoryStreamOf(c.Stream)
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
		c.Workers = DefaultIngestWorkers
	}
	if c.MaxBufferedBytes <= 0 {
		c.MaxBufferedBytes = (c.Workers + 1) * c.MaxBatchBytes
	}
	if c.AckWait <= 0 {
		c.AckWait = time.Minute
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = time.Minute
	}
	if c.StallAfter == 0 {
		c.StallAfter = 2 * time.Minute
	}
	if c.HealthEvery <= 0 {
		c.HealthEvery = 5 * time.Second
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = 30 * time.Second
	}
	if c.RetryUnstorable <= 0 {
		c.RetryUnstorable = 30 * time.Second
	}
}

// maxHeaderRereads is how many deliveries a dead letter waits for its
// header block to be read again from the stream before it is stored
// without (flagged header_block_unavailable).
const maxHeaderRereads = 5

// maxWideDeliveries is how many deliveries past maxHeaderRereads a dead
// letter or an advisory may take while the read it waits for fails for a
// reason of NATS's, not its own (sweepWide: no responders, a timeout, no
// quorum, the connection down): a stream's leader being elected, or NATS
// restarting, must not strip the give-ups of those minutes of their
// original, tenant and payload for good, as five quick failures did. With
// rereadDelay's backoff they span some 27 minutes. Past them the record
// is stored flagged, as after maxHeaderRereads: a message whose every read
// times out is not waited for forever. Deliveries are counted by
// JetStream, so no clock is compared; a waiting message keeps its place
// among the consumer's unacknowledged ones meanwhile.
const maxWideDeliveries = 30

// waitsOutWide reports whether a message in its md.NumDelivered-th
// delivery, whose read failed with err, is delivered again rather than
// stored without what the read would give (maxWideDeliveries).
func waitsOutWide(err error, md *jetstream.MsgMetadata) bool {
	return err != nil && sweepWide(err) && md.NumDelivered < maxHeaderRereads+maxWideDeliveries
}

// rereadDelay is how long a message whose read failed waits before its
// next delivery, after its delivered-th: 2 s for the first
// maxHeaderRereads, then doubling, up to a minute.
func rereadDelay(delivered uint64) time.Duration {
	if delivered < maxHeaderRereads {
		return 2 * time.Second
	}
	return min(2*time.Second<<min(delivered-maxHeaderRereads, 5), time.Minute)
}

// maxRefusedDeliveries is how many deliveries of a dead letter PostgreSQL
// refuses in its parsed and its raw form go by before its position form
// is stored instead (contentRefusedForm): as many as the sweeps the sweep
// holds one for (sweepHeldTries). The count is JetStream's (the message's
// NumDelivered), so it outlives a restart and is the same for every
// replica; a delivery that ended otherwise (handed back while PostgreSQL
// was out of reach, its ack wait run out while it waited for a writer or
// its replica died) counts too. Never one that ran out while the batch was
// being stored: a writer keeps its batch in progress (keepInProgress), so
// a slow batchmate does not count a refused dead letter's deliveries up.
const maxRefusedDeliveries = sweepHeldTries

// Ingester moves dead letters from JetStream into PostgreSQL: it stores a
// batch, commits, and only then acks, so a message is never acked before it
// is a row. Redelivery is harmless (the source key is unique).
type Ingester struct {
	cfg     IngestConfig
	js      jetstream.JetStream
	store   *Store
	metrics *Metrics
	log     *slog.Logger

	// consumerAckWait is the DLQ consumer's ack wait as last read
	// (ensureConsumer, check): a console raises it but never lowers it,
	// so it may be above this console's INGEST_ACK_WAIT (ackWaitInForce).
	consumerAckWait atomic.Int64

	// reset asks the consume loop to set the stream and consumers up again
	// (they were deleted, or the stream was made again).
	reset chan struct{}
	// recheck asks the monitor to check the consumers now (checkSoon).
	recheck chan struct{}
	// buffered holds a weight (item.weight) for every message received and
	// not yet stored: MaxBufferedBytes in all.
	buffered *semaphore.Weighted

	// cutOff is set while PostgreSQL does not take this replica's batches
	// (see storeBatch): the writers hand back what they receive, and Run,
	// told on pause, takes no more until PostgreSQL takes a write again
	// (pauseForPostgres).
	cutOff atomic.Bool
	pause  chan struct{}

	// afterProbe, when set (tests), runs after each time a replica cut
	// off from PostgreSQL asked whether it takes a write (pauseForPostgres),
	// with the answer.
	afterProbe func(err error)

	// afterCommit, when set (tests), runs after a batch is stored and
	// before it is acked; returning false skips the acks, as a crash there would.
	afterCommit func(n int) bool
	// whileReading, when set (tests), runs as a batch's records are made
	// (records), before its re-reads.
	whileReading func()

	// beforeMoveBack, when set (tests), runs in putBack after a consumer's
	// settings are put back and before it is moved back; returning false
	// ends putBack there, as a crash would.
	beforeMoveBack func() bool

	// beforeStreamUpdate, when set (tests), runs in putStreamBack between
	// the read the drift was found on and the read the update is made from.
	beforeStreamUpdate func()
	// beforeStreamCreate, when set (tests), runs in ensureStream between
	// finding the stream missing and making it (another console making it
	// first).
	beforeStreamCreate func(name string)

	// adoptedLegacy is set once Setup kept LegacyAdvisoryStream as the
	// advisory stream (adoptLegacyAdvisoryStream), so that it says so once.
	adoptedLegacy bool

	// sweeping is what the sweep keeps between sweeps (ingest_sweep.go).
	sweeping sweepState

	// replica names this ingester among those announcing their watched
	// streams (ingest_watchers.go).
	replica string

	// incs is the incarnation of each consumer the current session reads,
	// by stream, for the monitor to compare with the consumer it finds.
	incsMu sync.Mutex
	incs   map[string]*incarnation
}

type item struct {
	msg    jetstream.Msg
	rec    *Record // set for advisories; DLQ messages are parsed by the writer
	size   int     // payload and header bytes (sizeOf)
	weight int64   // what it holds of Ingester.buffered
}

// sizeOf is what it costs the writers to hold: the payload and the header
// bytes of the message, and of the captured original for an advisory.
// Headers count: a producer may send a few bytes of payload under a
// megabyte of headers.
func sizeOf(it item) int {
	n := len(it.msg.Data()) + headerBytes(it.msg.Headers())
	if it.rec != nil {
		n += len(it.rec.Payload) + len(it.rec.HeaderBlock)
		for _, h := range it.rec.Headers {
			n += len(h.Name) + len(h.Value) + 4 // "Name: Value\r\n"
		}
	}
	return n
}

// headerBytes is the size of h as a NATS header block would hold it.
func headerBytes(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // "Name: Value\r\n"
		}
	}
	return n
}

// headerBlockLen is the length of the header block NATS clients write for
// h: "NATS/1.0\r\n", each "Name: Value\r\n", and the empty line.
func headerBlockLen(h nats.Header) int {
	return len(headerVersion) + 4 + headerBytes(h)
}

// WireSize is the size of m as a NATS server counts it against its
// max_payload: its header block, as NATS clients write it (none without
// headers), and its data.
func WireSize(m *nats.Msg) int64 {
	n := len(m.Data)
	if len(m.Header) > 0 {
		n += headerBlockLen(m.Header)
	}
	return int64(n)
}

// enqueue hands it to the writers once the bytes they hold leave room for
// it (MaxBufferedBytes; a larger message waits until they hold nothing);
// when ctx ends first, it hands it back (handBack).
func (in *Ingester) enqueue(ctx context.Context, items chan<- item, it item) {
	it.size = sizeOf(it)
	it.weight = min(int64(it.size), int64(in.cfg.MaxBufferedBytes))
	if ctx.Err() != nil || in.buffered.Acquire(ctx, it.weight) != nil {
		in.handBack(ctx, []item{it})
		return
	}
	in.metrics.BufferedBytes.Add(float64(it.weight))
	select {
	case items <- it:
	case <-ctx.Done():
		in.handBack(ctx, []item{it})
		in.release(it)
	}
}

// release gives back what it held of the writers' bytes.
func (in *Ingester) release(batch ...item) {
	var w int64
	for _, it := range batch {
		w += it.weight
	}
	in.metrics.BufferedBytes.Sub(float64(w))
	in.buffered.Release(w)
}

// NewIngester returns an Ingester; call Setup once, then Run.
func NewIngester(cfg IngestConfig, js jetstream.JetStream, store *Store, metrics *Metrics, log *slog.Logger) *Ingester {
	cfg.defaults()
	metrics.health.setStallAfter(cfg.StallAfter)
	if store != nil {
		store = store.withDeadline(cfg.statementDeadline())
	}
	in := &Ingester{cfg: cfg, js: js, store: store, metrics: metrics, log: log, reset: make(chan struct{}, 1), recheck: make(chan struct{}, 1),
		pause: make(chan struct{}, 1), buffered: semaphore.NewWeighted(int64(cfg.MaxBufferedBytes)), replica: newReplicaID()}
	metrics.exportStreams(in.ingestStreams())
	return in
}

// Config returns the configuration with defaults applied.
func (in *Ingester) Config() IngestConfig { return in.cfg }

// Setup creates, when missing, the DLQ stream (limits retention, file
// storage) and the advisory capture stream (or keeps the one from before
// the upgrade: adoptLegacyAdvisoryStream), and creates or updates the
// durable pull consumers on them. It is the start's: first it refuses
// DLQ_MAX_AGE and DLQ_MAX_BYTES that would lose dead letters unseen
// (checkLimits). Run sets ingest up again without refusing (setUpAgain).
func (in *Ingester) Setup(ctx context.Context) error {
	if err := in.checkLimits(); err != nil {
		return err
	}
	if err := in.adoptLegacyAdvisoryStream(ctx); err != nil {
		return err
	}
	return in.setUp(ctx)
}

// setUp is Setup without checkLimits.
func (in *Ingester) setUp(ctx context.Context) error {
	if err := in.ensureStream(ctx, in.dlqStreamConfig()); err != nil {
		return err
	}
	if err := in.ensureConsumer(ctx, in.cfg.Stream); err != nil {
		return err
	}
	if len(in.cfg.Watch) == 0 {
		return nil
	}
	if err := in.announceWatch(ctx); err != nil { // before the stream takes the subjects of its streams
		return err
	}
	if err := in.ensureStream(ctx, in.advisoryStreamConfig()); err != nil {
		return err
	}
	if err := in.ensureConsumer(ctx, in.cfg.AdvisoryStream); err != nil {
		return err
	}
	in.checkWatched(ctx)
	return nil
}

// DuplicateWindow is the DLQ stream's duplicate window: a dead letter
// published again within it (a producer retrying) is stored once. JetStream
// refuses an age limit below it (MinStreamMaxAge is above it).
const DuplicateWindow = 2 * time.Minute

// dlqStreamConfig is the configuration of the DLQ stream the console
// makes, and holds an existing one to (streamSettings). It allows direct
// gets: a producer's dlq.Publish reads the last dead letter on its own
// subject with one (keptIsThis), a right that can be given per tenant,
// where a read by sequence reads every tenant's. An existing stream is
// not changed for it (it is no setting that loses dead letters): the
// operator turns it on (nats stream edit DLQ --allow-direct).
func (in *Ingester) dlqStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        in.cfg.Stream,
		Description: dlqStreamDescription,
		Subjects:    []string{in.cfg.Prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    in.cfg.Replicas,
		Duplicates:  DuplicateWindow,
		MaxAge:      in.cfg.StreamMaxAge,
		MaxBytes:    cmp.Or(in.cfg.StreamMaxBytes, -1),
		AllowDirect: true,
		Metadata:    map[string]string{advisoryOwnerPrefixKey: in.cfg.Prefix}, // which deployment it is for (ingest_dlq_owner.go)
	}
}

// directGetsOff warns, at every setup, when the DLQ stream (have, as
// found) does not allow direct gets: producers' dlq.Publish then cannot
// read the dead letter the stream kept under an id it was answered
// "duplicate" for (keptIsThis), so it cannot tell its own retry from
// another dead letter, and publishes every such retry again under another
// id, stored twice. A stream made before the console made its own with
// AllowDirect has them off. The console does not turn them on (it changes
// an existing stream only to stop loss, and this loses nothing): the
// warning gives the command.
func (in *Ingester) directGetsOff(have jetstream.StreamConfig) {
	if have.AllowDirect {
		return
	}
	in.log.Warn("the DLQ stream does not allow direct gets: the producers' dlq.Publish cannot tell a retry of a dead letter from another one kept under its id, "+
		"so each retry is stored twice (two rows of the same failure); the console does not change the stream. Turn them on: nats stream edit "+have.Name+" --allow-direct",
		"stream", have.Name)
}

// advisoryStreamConfig is the same for the advisory capture stream.
func (in *Ingester) advisoryStreamConfig() jetstream.StreamConfig {
	var subjects []string
	for _, w := range in.cfg.Watch {
		subjects = append(subjects, advisorySubjects(w.Name)...)
	}
	return jetstream.StreamConfig{
		Name:        in.cfg.AdvisoryStream,
		Description: "MAX_DELIVERIES and MSG_TERMINATED advisories captured for the Quarantine console",
		Subjects:    subjects,
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    in.cfg.Replicas,
		MaxAge:      30 * 24 * time.Hour,
		Metadata:    in.ownerMetadata(), // which deployment it is for (ingest_advisory_owner.go)
	}
}

// ensureStream creates the stream when missing. An existing stream keeps
// its settings (an operator may have tuned them), but what of them would
// refuse or delete dead letters the console needs is put back
// (putStreamBack: missing subjects added, its age and size limits raised
// to want's, limits the console never sets taken off while the stream
// keeps an age or size limit of the console's). A stream this console
// had checked before (the check found it, see keepStream) and that is
// gone was deleted: it is made again all the same, and that is logged as
// a warning and counted (quarantine_dlq_stream_repaired_total).
func (in *Ingester) ensureStream(ctx context.Context, want jetstream.StreamConfig) error {
	s, err := in.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		var made bool
		if made, err = in.createStream(ctx, want); made || err != nil {
			return err
		}
		// Another console made it first: a replica, perhaps on another
		// DLQ_WATCH_STREAMS (a rolling deploy), or another deployment. It
		// is judged and put back as one found (putStreamBack: claimable,
		// this replica's subjects added now, not at the next check, while
		// their give-ups would be captured by no stream); one not read is
		// not judged, so not consumed (the caller retries).
		if s, err = in.js.Stream(ctx, want.Name); err != nil {
			return fmt.Errorf("look up stream %s, made by another console first: %w", want.Name, err)
		}
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	if want.Name != in.cfg.Stream {
		_, err = in.putStreamBack(ctx, have, want, in.metrics.health.get(want.Name).seen)
		return in.streamRefused(want, err)
	}
	// DLQ_MAX_AGE and DLQ_MAX_BYTES are settings; the advisory stream's
	// age limit is not, and one raised by hand is nothing to say.
	in.limitsNotApplied(have, want)
	in.directGetsOff(have)
	in.sharedUnstamped(have)
	d, err := in.putStreamBack(ctx, have, want, in.metrics.health.get(want.Name).seen)
	in.holdFloor(d.fixed, true)
	return in.streamRefused(want, err)
}

// createStream makes stream want, missing (ensureStream), and reports
// whether it did; false without an error when another console made it
// first.
func (in *Ingester) createStream(ctx context.Context, want jetstream.StreamConfig) (bool, error) {
	if want.Name == in.cfg.Stream {
		want = in.fitToPayload(want)
	}
	if in.beforeStreamCreate != nil {
		in.beforeStreamCreate(want.Name)
	}
	_, err := in.js.CreateStream(ctx, want)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create stream %s: %w", want.Name, in.streamRefused(want, err))
	}
	if want.Name == in.cfg.Stream {
		in.holdFloor(want, true)
	}
	if in.metrics.health.get(want.Name).seen {
		in.metrics.health.countStreamRepaired(want.Name)
		in.log.Warn("a stream of the console was gone (deleted by hand?): the console made it again; the dead letters it held and the console had not stored are lost",
			"stream", want.Name, "subjects", want.Subjects, "max_age", want.MaxAge, "max_bytes", want.MaxBytes)
		return true, nil
	}
	in.log.Info("created stream", "stream", want.Name, "subjects", want.Subjects)
	return true, nil
}

// Run consumes until ctx ends. When it ends, Run takes no more, hands back
// (handBack) what it received and did not store, the batches being stored
// included unless their commit came first, and returns once that is sent:
// another replica has them at once, not after their ack wait. When a
// consumer or the stream under it disappears (deleted, or the stream made
// again), Run sets them up again and goes on; while PostgreSQL does not
// take its batches, it takes nothing (pauseForPostgres). It returns an
// error only when it cannot start at all.
func (in *Ingester) Run(ctx context.Context) error {
	items := make(chan item, 2*in.cfg.BatchSize)
	sess, err := in.consumeAll(ctx, items)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped, not failed
		}
		return err
	}
	var wg sync.WaitGroup
	for range in.cfg.Workers {
		wg.Go(func() { in.writeLoop(ctx, items) })
	}
	wg.Go(func() { in.monitor(ctx) })
	wg.Go(func() { in.sweepLoop(ctx) })
	in.log.Info("ingesting", "stream", in.cfg.Stream, "consumer", in.cfg.Durable, "workers", in.cfg.Workers)
	for sess != nil {
		select {
		case <-ctx.Done():
			sess.stop()
			sess = nil
		case <-in.reset:
			sess = in.again(ctx, items, sess)
		case <-in.pause:
			sess = in.pauseForPostgres(ctx, items, sess)
		}
	}
	// Stopped (sess.stop handed what its inbox held to enqueue, which hands
	// it back now): what the writers did not take is handed back once
	// they are done, and only then, once it reached NATS, is this
	// replica's watched list withdrawn (retireWatch): an advisory it
	// hands back reaches another replica that, with the list gone and no
	// other replica watching its stream, would ack it without a row; with
	// the list still there, it hands it back in turn (watchedElsewhere).
	wg.Wait()
	var left []item
	for len(items) > 0 {
		left = append(left, <-items)
	}
	in.handBack(ctx, left)
	in.release(left...)
	if err := in.js.Conn().FlushTimeout(5 * time.Second); err != nil {
		in.log.Warn("ingest stopped, and what it handed back may not have reached NATS: it comes again after its ack wait", "err", err)
	}
	in.retireWatch()
	in.log.Info("ingest stopped", "stream", in.cfg.Stream, "consumer", in.cfg.Durable)
	return nil
}

// handBack naks the messages of batch, none of them stored, so that the
// consumer delivers them again at once, to whichever replica asks first,
// rather than after their ack wait. A message is never acked before its
// row is committed; one whose commit may have happened with its answer
// lost (ctx ended or the connection broke during it) is handed back too,
// and its redelivery is deduplicated by the source key. As in flush, a
// message whose consumer may have been made again is left alone
// (confirmIncarnations); with its consumer certainly made again, the nak
// is not sent (errRetired) and the new consumer delivers it again.
func (in *Ingester) handBack(ctx context.Context, batch []item) {
	if len(batch) == 0 || !in.js.Conn().IsConnected() {
		return // nothing to send it on: it comes again after its ack wait
	}
	hold := in.confirmIncarnations(context.WithoutCancel(ctx), batch)
	for _, it := range batch {
		if p, ok := it.msg.(pulledMsg); ok && hold[p.inc] {
			continue
		}
		if err := it.msg.Nak(); err != nil && !errors.Is(err, errRetired) {
			in.log.Debug("handing a dead letter back failed; it comes again after its ack wait", "err", err)
		}
	}
}

// cutOffAfter is how long storeBatch retries a batch while PostgreSQL is
// out of reach (Unreachable: not a statement that timed out or waited for
// a lock, which one slow dead letter causes) before this replica hands
// back what it holds and takes nothing until PostgreSQL takes a write
// again (pauseForPostgres): it keeps the batch in progress meanwhile, and
// a replica that lost PostgreSQL but not NATS would otherwise keep its
// dead letters from the replicas that can store them for as long as it
// stays cut off.
const cutOffAfter = 10 * time.Second

// cutOffFromPostgres marks the replica cut off from PostgreSQL (err: the
// last failure) and tells Run, once.
func (in *Ingester) cutOffFromPostgres(err error) {
	if !in.cutOff.CompareAndSwap(false, true) {
		return
	}
	in.metrics.CutOff.Set(1)
	in.log.Warn("PostgreSQL has not taken a batch for a while: handing back the dead letters this replica holds, for replicas that can store them, and taking none until PostgreSQL takes a write again",
		"for", cutOffAfter, "err", err)
	select {
	case in.pause <- struct{}{}:
	default:
	}
}

// pauseForPostgres stops sess while the replica is cut off from
// PostgreSQL (what its inbox holds reaches the writers, which hand it
// back), waits until PostgreSQL takes a write again (takesWrites), and
// consumes anew, setting the streams and consumers up first (one may have
// been deleted meanwhile). Alone, the replica then receives again what it
// handed back. nil means ctx ended.
//
// A ping is not enough: a server that answers but refuses every write (a
// standby DATABASE_URL points at after a failover, 25006; a full disk,
// 53100) answers one at once, and the replica took its batches again only
// to be cut off 10 s later, over and over, each time handing the batch
// back (one more delivery of each) and putting the cut-off gauge back to
// 0 for a moment. While PostgreSQL answers so, the log says why the
// replica is still cut off, again each time the error changes.
func (in *Ingester) pauseForPostgres(ctx context.Context, items chan<- item, sess *session) *session {
	sess.stop()
	var said string // the last refusal logged
	for backoff := time.Second; ; backoff = min(2*backoff, 5*time.Second) {
		refused, err := in.takesWrites(ctx)
		if in.afterProbe != nil {
			in.afterProbe(err)
		}
		if !refused {
			break
		}
		if answered(err) && err.Error() != said {
			said = err.Error()
			in.log.Warn("PostgreSQL answers but refuses writes: still cut off, taking no dead letters until it takes one",
				"stream", in.cfg.Stream, "consumer", in.cfg.Durable, "err", err)
		}
		if !sleep(ctx, backoff) {
			return nil
		}
	}
	in.cutOff.Store(false)
	in.metrics.CutOff.Set(0)
	in.log.Info("PostgreSQL answers again: taking dead letters again", "stream", in.cfg.Stream, "consumer", in.cfg.Durable)
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		err := in.setUpAgain(ctx)
		if err == nil {
			var next *session
			if next, err = in.consumeAll(ctx, items); err == nil {
				return next
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		in.log.Warn("taking dead letters again failed; will retry", "retry_in", backoff, "err", err)
		if !sleep(ctx, backoff) {
			return nil
		}
	}
}

// again makes what is missing of the streams and consumers and, when a
// consumer is not the one sess consumes (it was deleted and made again),
// consumes anew. A reset asked for twice, or for a consumer that came back
// on its own, changes nothing: stopping a session that works would leave
// its prefetched messages unacked until their ack wait. It retries with
// backoff until it succeeds; nil means ctx ended.
//
// A consumer known to be gone or made again has its incarnation retired at
// once, before anything is made again (another replica may make it first),
// and a session replaced has all of them retired: the messages it received
// are still stored, but never acked or nak'd (see incarnation).
func (in *Ingester) again(ctx context.Context, items chan<- item, sess *session) *session {
	in.retireReplaced(ctx, sess)
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		in.awaitDeletion(ctx)
		err := in.setUpAgain(ctx)
		if err == nil {
			if in.retireReplaced(ctx, sess) {
				return sess
			}
			in.log.Warn("a consumer was made again: consuming anew; what the old one delivered is stored but not acked", "stream", in.cfg.Stream, "consumer", in.cfg.Durable)
			sess.retire()
			sess.stop()
			var next *session
			if next, err = in.consumeAll(ctx, items); err == nil {
				return next
			}
			sess = &session{stop: func() {}} // stopped: any consumer is a change now
		}
		if ctx.Err() != nil {
			sess.stop()
			return nil
		}
		in.log.Warn("setting up ingest again failed; will retry", "retry_in", backoff, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
	}
}

// streamGrace is how long Run waits, when a stream it reads is gone,
// before making it again. A stream made while the server still removes the
// old one's storage can take that storage over and then never acknowledge
// a publish (seen with nats-server 2.15 under load); nobody deletes the DLQ
// stream in the normal course of things, so waiting costs nothing.
const streamGrace = 3 * time.Second

// awaitDeletion waits streamGrace when the DLQ stream (or the advisory
// stream) is not there, so that a deletion under way has finished before
// Setup makes it again.
func (in *Ingester) awaitDeletion(ctx context.Context) {
	streams := []string{in.cfg.Stream}
	if len(in.cfg.Watch) > 0 {
		streams = append(streams, in.cfg.AdvisoryStream)
	}
	for _, name := range streams {
		if _, err := in.js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
			in.log.Warn("a stream of the console is gone: making it again shortly", "stream", name, "in", streamGrace)
			select {
			case <-time.After(streamGrace):
			case <-ctx.Done():
			}
			return
		}
	}
}

// session is what consumeAll started: how to stop it, and the
// incarnation of each consumer it reads, by stream.
type session struct {
	stop func()
	incs map[string]*incarnation
}

// retire retires every incarnation of sess.
func (sess *session) retire() {
	for _, inc := range sess.incs {
		inc.retire()
	}
}

// retireReplaced retires each incarnation of sess whose consumer is
// certainly not the one it started on (gone, or made at another time), and
// reports whether every one of them is certainly still the same. A
// consumer that cannot be looked up is neither; its incarnation is
// retired when a status on the inbox said it was deleted (saidDeleted):
// the lookup is what tells a forged status from the server's, and without
// its answer the consumer is taken to be gone, lest the stream and the
// consumer be made again while its acks may still be sent.
func (in *Ingester) retireReplaced(ctx context.Context, sess *session) (unchanged bool) {
	unchanged = len(sess.incs) > 0
	for stream, inc := range sess.incs {
		asked := time.Now()
		cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
		switch {
		case err == nil && cons.CachedInfo().Created.Equal(inc.created) && !inc.isRetired():
			inc.confirmed(asked) // and a status that said it was deleted is answered
			continue
		case err == nil, errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound), inc.wasSaidDeleted():
			if !inc.isRetired() {
				in.log.Warn("the ingest consumer is gone or was made again: what it delivered is no longer acked", "stream", stream, "consumer", in.cfg.Durable, "lookup_err", err)
			}
			inc.retire()
		}
		unchanged = false
	}
	return unchanged
}

// requestReset asks Run to set the streams and consumers up again.
func (in *Ingester) requestReset() {
	select {
	case in.reset <- struct{}{}:
	default: // one is pending already
	}
}

// consumeAll starts consuming the DLQ stream and, with watched streams,
// the advisory stream.
func (in *Ingester) consumeAll(ctx context.Context, items chan<- item) (*session, error) {
	sess := &session{stop: func() {}, incs: map[string]*incarnation{}}
	err := in.consume(ctx, sess, in.cfg.Stream, func(m jetstream.Msg) { in.enqueue(ctx, items, item{msg: m}) })
	if err == nil && len(in.cfg.Watch) > 0 {
		err = in.consume(ctx, sess, in.cfg.AdvisoryStream, func(m jetstream.Msg) { in.handleAdvisory(ctx, m, items) })
	}
	if err != nil {
		sess.stop()
		return nil, err
	}
	return sess, nil
}

// consume starts reading stream's consumer into sess, with a puller (see
// ingest_pull.go): up to 2·BatchSize messages and 4·MaxBatchBytes asked
// for at once.
func (in *Ingester) consume(ctx context.Context, sess *session, stream string, handle jetstream.MessageHandler) error {
	asked := time.Now()
	cons, err := in.js.Consumer(ctx, stream, in.cfg.Durable)
	if err != nil {
		return fmt.Errorf("open consumer %s on %s: %w", in.cfg.Durable, stream, err)
	}
	inc := &incarnation{stream: stream, created: cons.CachedInfo().Created, seenAt: asked}
	stop, err := startPuller(in.js.Conn(), apiPrefix(in.js), stream, in.cfg.Durable, inc, 2*in.cfg.BatchSize, 4*in.cfg.MaxBatchBytes,
		handle, in.requestReset, in.log)
	if err != nil {
		return fmt.Errorf("consume %s: %w", stream, err)
	}
	prev := sess.stop
	sess.stop = func() { prev(); stop() }
	sess.incs[stream] = inc
	in.incsMu.Lock()
	if in.incs == nil {
		in.incs = map[string]*incarnation{}
	}
	in.incs[stream] = inc
	in.incsMu.Unlock()
	return nil
}

// incarnationOf is the incarnation of stream's consumer the current
// session reads; nil before the first.
func (in *Ingester) incarnationOf(stream string) *incarnation {
	in.incsMu.Lock()
	defer in.incsMu.Unlock()
	return in.incs[stream]
}

// writeLoop gathers a batch (up to BatchSize messages or MaxBatchBytes of
// payload and headers, or whatever came within MaxWait of the first),
// stores it and gives its bytes back.
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
		size := batch[0].size
		timer.Reset(in.cfg.MaxWait)
	fill:
		for len(batch) < in.cfg.BatchSize && size < in.cfg.MaxBatchBytes && ctx.Err() == nil {
			select {
			case it := <-items:
				batch = append(batch, it)
				size += it.size
			case <-timer.C:
				break fill
			case <-ctx.Done():
			}
		}
		timer.Stop()
		if ctx.Err() != nil {
			in.handBack(ctx, batch)
		} else {
			in.flush(ctx, batch)
		}
		in.release(batch...)
	}
}

// flush stores the batch and acks what is stored. It retries with backoff
// while PostgreSQL is unreachable or busy and gives up only when ctx ends
// (the messages are delivered again later). Until it settles the first of
// them it keeps the messages in progress (keepInProgress), however long
// the statements, the retries and the narrowing down take. A dead letter PostgreSQL
// refuses in its parsed form is stored in its raw form; one refused in
// every form, or one whose statement keeps failing for a reason not its
// data (storeBatch), is not acked but delivered again after
// RetryUnstorable, so it never holds up the others. One refused in every
// form on its maxRefusedDeliveries-th delivery (or a later one) is tried
// whole once more and, refused again, has its position form stored
// instead, and is acked (storeContentRefused); one deferred never does:
// what failed was PostgreSQL, not its data (a partition its maker could
// not make in time included: Store.insert). A
// message whose consumer was made again meanwhile (its incarnation
// retired) is stored all the same, and neither acked nor nak'd (see
// incarnation). A batch not
// stored because ctx ended, or because the replica is cut off from
// PostgreSQL (storeBatch), is handed back (handBack).
func (in *Ingester) flush(ctx context.Context, batch []item) {
	if in.cutOff.Load() {
		in.handBack(ctx, batch)
		return
	}
	// The re-reads of header blocks and payloads (records) may take
	// longer than AckWait while JetStream is slow: the batch is kept in
	// progress through them too, or every message of it, healthy ones
	// included, would come again to another writer and count a delivery
	// more toward maxHeaderRereads and positionFormDue. A message records
	// leaves for later is nak'd, after which the client sends no
	// InProgress for it; one already under way as the nak is sent may
	// still reach the server and put its redelivery off to AckWait: a
	// later retry, never a loss.
	reading := in.keepInProgress(ctx, batch)
	batch, recs := in.records(ctx, batch)
	reading()
	if len(recs) == 0 {
		return
	}
	keep := in.keepInProgress(ctx, batch)
	defer keep()
	res, deferred, ok := in.storeBatch(ctx, recs)
	if !ok {
		keep()
		in.handBack(ctx, batch)
		return
	}
	if in.afterCommit != nil && !in.afterCommit(len(recs)) {
		return
	}
	// The commit landed: what ctx ending now would cost is a redelivery of
	// the whole batch after its ack wait (as in handBack).
	hold := in.confirmIncarnations(context.WithoutCancel(ctx), batch)
	held := func(m jetstream.Msg) bool {
		p, ok := m.(pulledMsg)
		return ok && hold[p.inc]
	}
	unstorable := make(map[int]bool, len(res.Unstorable)+len(deferred))
	for _, i := range deferred {
		unstorable[i] = true
		in.metrics.Deferred.Inc()
		in.log.Warn("dead letter not stored yet: PostgreSQL kept failing its statement for a reason not its data (a timeout, memory, a lock); it stays unacked and comes again",
			append(logFields(&recs[i]), "retry_in", in.cfg.RetryUnstorable)...)
	}
	var due []refusedDelivery // refused on enough deliveries: their position forms are stored
	for _, u := range res.Unstorable {
		r := &recs[u.Index]
		in.metrics.Unstorable.Inc()
		if md, ok := positionFormDue(batch[u.Index].msg); ok {
			due = append(due, refusedDelivery{u, md})
			continue
		}
		unstorable[u.Index] = true
		in.log.Error("dead letter not stored: PostgreSQL refused it in parsed and in raw form; it stays unacked and comes again",
			append(logFields(r), "retry_in", in.cfg.RetryUnstorable, "err", u.Err)...)
	}
	for _, i := range in.storeContentRefused(ctx, recs, due) {
		unstorable[i] = true
	}
	keep() // nothing is kept in progress once the first message is settled
	for i, it := range batch {
		if unstorable[i] && !held(it.msg) {
			in.nakUnstored(it.msg, &recs[i])
		}
	}
	for _, rf := range res.Raw {
		in.storedRaw("dead letter", &recs[rf.Index], rf.Err)
	}
	retired, kept := 0, 0
	for i, it := range batch {
		if unstorable[i] {
			continue
		}
		if held(it.msg) {
			kept++
			continue
		}
		switch err := it.msg.Ack(); {
		case errors.Is(err, errRetired):
			retired++
		case err != nil:
			in.log.Debug("ack after commit failed; redelivery will be deduplicated", "err", err)
		}
	}
	if retired > 0 {
		in.log.Info("dead letters stored and not acked: their consumer was made again while they waited (an ack would settle the new consumer's message of the same sequence)",
			"stored", retired)
	}
	if kept > 0 {
		in.log.Info("dead letters stored and not acked: whether their consumer is still the one that delivered them could not be asked; they come again after their ack wait (deduplicated)",
			"stored", kept)
	}
}

// confirmAfter is how long after its oldest message was received (or its
// consumer was last found to be the same) a batch is settled without
// asking again whether its consumer is still the one that delivered it.
// An ack reaches another dead letter only when the consumer was made again
// on a stream made again (with the same stream, a sequence is the same
// message), and the console makes a stream again streamGrace after it
// went: a second is well within that, and a batch that waits longer (its
// writer stuck on PostgreSQL, the puller blocked behind it) is rare.
const confirmAfter = time.Second

// confirmIncarnations asks, once per incarnation, whether the consumer of
// the batch's messages that have waited longer than confirmAfter is still
// the one that delivered them, before anything of them is acked or nak'd.
// The monitor only looks every HealthEvery, and the 409 that says the
// consumer was deleted may wait in the inbox behind a message the puller
// cannot hand over: another replica may have made stream and consumer
// again meanwhile. A consumer gone or made at another time has its
// incarnation retired (the messages are stored; the new consumer delivers
// again what its stream holds, deduplicated by the source key). It returns
// the incarnations that could not be asked about: their messages are not
// settled now and come again after their ack wait. A batch that has not
// waited costs nothing.
func (in *Ingester) confirmIncarnations(ctx context.Context, batch []item) map[*incarnation]bool {
	oldest := map[*incarnation]time.Time{}
	for _, it := range batch {
		p, ok := it.msg.(pulledMsg)
		if !ok || p.inc == nil {
			continue
		}
		if t, seen := oldest[p.inc]; !seen || p.received.Before(t) {
			oldest[p.inc] = p.received
		}
	}
	var hold map[*incarnation]bool
	for inc, received := range oldest {
		since := received
		if seen := inc.lastSeen(); seen.After(since) {
			since = seen
		}
		if time.Since(since) <= confirmAfter || inc.isRetired() {
			continue
		}
		asked := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cons, err := in.js.Consumer(cctx, inc.stream, in.cfg.Durable)
		cancel()
		switch {
		case err == nil:
			in.judgeIncarnation(inc, cons.CachedInfo(), asked)
		case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
			in.judgeIncarnation(inc, nil, asked)
		default:
			in.log.Warn("could not ask whether the ingest consumer is still the one that delivered a batch: the batch is stored and not settled now",
				"stream", inc.stream, "consumer", in.cfg.Durable, "err", err)
			if hold == nil {
				hold = map[*incarnation]bool{}
			}
			hold[inc] = true
		}
	}
	return hold
}

// refusedDelivery is a dead letter of a batch PostgreSQL refused in
// every form, and its delivery's metadata.
type refusedDelivery struct {
	Refused
	md *jetstream.MsgMetadata
}

// positionFormDue reports whether m, a dead letter PostgreSQL refused in
// its parsed and its raw form, has been delivered maxRefusedDeliveries
// times or more (md: its metadata): its position form is stored now.
// Without its metadata its deliveries are unknown: it is nak'd as before.
func positionFormDue(m jetstream.Msg) (md *jetstream.MsgMetadata, due bool) {
	md, err := m.Metadata()
	return md, err == nil && md.NumDelivered >= maxRefusedDeliveries
}

// storeContentRefused stores the position form (contentRefusedForm) of
// the dead letters of a batch that PostgreSQL refused in their parsed and
// their raw form on their maxRefusedDeliveries-th delivery or a later one
// (refused, indexes of recs), so that a hostile message is stored and
// flagged rather than nak'd for good, and holds the consumer's ack floor
// (and a place in its MaxAckPending) no longer than that. Each is tried
// whole once more first (storeRefusedWholeOrPosition): what refused it
// with the batch may have ended since (a trigger dropped, a grant given
// back), and one PostgreSQL takes now is stored whole, its payload kept.
// It returns those not stored: PostgreSQL refused the position form too
// (it refuses every row, or every row of the tenant: not this dead
// letter's content), or an insert failed (PostgreSQL unreachable or
// busy). The caller naks them as before; the others are stored, and acked
// with the rest of the batch.
//
// The position form keeps the source key the delivery has, the one the
// sweep makes of the stream's copy: a delivery of it again, or a sweep,
// finds it stored. It is not counted in quarantine_ingest_lag_seconds:
// it was held back on purpose, for maxRefusedDeliveries·RetryUnstorable.
func (in *Ingester) storeContentRefused(ctx context.Context, recs []Record, refused []refusedDelivery) []int {
	if len(refused) == 0 {
		return nil
	}
	due := make([]Record, len(refused))
	for i, u := range refused {
		due[i] = recs[u.Index]
	}
	position := func(i int, cause error) Record {
		md := refused[i].md
		return contentRefusedForm(due[i], cause, fmt.Sprintf("on its delivery %d, none before having stored it", md.NumDelivered),
			md.Stream, md.Sequence.Stream)
	}
	insert := func(forms []Record) (InsertResult, error) {
		start := time.Now()
		ins, err := in.store.Insert(ctx, forms)
		in.metrics.IsolationStatements.Add(float64(max(ins.Statements-1, 0)))
		in.metrics.observeInsert(len(forms), time.Since(start))
		in.metrics.countStored(ins.Inserted, false)
		return ins, err
	}
	got, err := storeRefusedWholeOrPosition(due, position, insert)
	var unstored []int
	if err != nil {
		in.metrics.countStoreFailure(err)
		in.log.Warn("storing dead letters PostgreSQL refused delivery after delivery, whole or in their position forms, failed; they stay unacked and come again",
			"stream", in.cfg.Stream, "consumer", in.cfg.Durable, "dead_letters", len(due), "retry_in", in.cfg.RetryUnstorable, "err", err)
		for _, u := range refused {
			unstored = append(unstored, u.Index)
		}
		return unstored
	}
	for _, rf := range got.Raw {
		in.storedRaw("dead letter", &due[rf.Index], rf.Err)
	}
	for _, p := range got.Positions {
		in.log.Error("dead letter refused by PostgreSQL in parsed and in raw form delivery after delivery: stored without its content, flagged content_refused",
			append(logFields(&due[p.Index]), "deliveries", refused[p.Index].md.NumDelivered, "err", p.Err)...)
	}
	for _, u := range got.Unstored {
		// Nothing of the message's content is left in it: PostgreSQL
		// refuses every row, and the message comes again as before.
		in.log.Error("dead letter not stored: PostgreSQL refused even its position form; it stays unacked and comes again",
			append(logFields(&due[u.Index]), "retry_in", in.cfg.RetryUnstorable, "err", u.Err)...)
		unstored = append(unstored, refused[u.Index].Index)
	}
	return unstored
}

// storedRaw counts and logs r stored in its raw form (PostgreSQL refused
// its parsed form: err); what names it in the log line ("dead letter",
// "dead letter swept from the stream").
func (in *Ingester) storedRaw(what string, r *Record, err error) {
	in.metrics.RawForm.WithLabelValues(in.metrics.labels.tenant(r.Tenant)).Inc()
	in.log.Warn(what+" stored in raw form: PostgreSQL refused its parsed form", append(logFields(r), "err", err)...)
}

// nakUnstored asks for m (not stored, r) again after RetryUnstorable.
func (in *Ingester) nakUnstored(m jetstream.Msg, r *Record) {
	switch err := m.NakWithDelay(in.cfg.RetryUnstorable); {
	case errors.Is(err, errRetired):
		in.log.Error("dead letter not stored and its consumer was made again while it waited: the new consumer delivers it again if its stream still holds it; if the stream was made again, it went with the old one",
			logFields(r)...)
	case err != nil:
		in.log.Debug("nak failed; the message is delivered again after its ack wait", "err", err)
	}
}

// logFields names a dead letter in a log line, with producer values cut
// short: a log line is not where an 8 KB id belongs.
func logFields(r *Record) []any {
	return []any{"tenant", r.Tenant, "item_type", r.ItemType, "delivery", r.Delivery,
		"msg_id", cut(r.MsgID, 200), "correlation_id", cut(r.CorrelationID, 200)}
}
