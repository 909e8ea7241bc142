package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Authority answers, at execution time, whether a person still holds a
// permission in a tenant (their roles may have changed since they asked).
type Authority interface {
	StillAllowed(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, error)
}

// lapsingAuthority is an Authority whose yes may lapse with time
// (authz.Authority: a directory entry older than its MaxAge keeps no
// groups): StillAllowedUntil also says when, on its Clock.
type lapsingAuthority interface {
	StillAllowedUntil(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, time.Time, error)
	Clock() time.Time
}

// Revalidator asks the service that owns an effect whether the original
// principal may still have it. allow=false carries the service's reason; an
// error (no responder, timeout, open circuit) blocks the item too.
type Revalidator interface {
	Revalidate(ctx context.Context, q RevalidateQuery) (allow bool, reason string, err error)
}

// RevalidateQuery is the intent sent to the revalidation subject.
type RevalidateQuery struct {
	Tenant       string `json:"tenant"`
	ItemType     string `json:"item_type"`
	MsgID        string `json:"msg_id"`
	OperationID  string `json:"operation_id,omitempty"`
	Principal    string `json:"principal"`
	Subject      string `json:"subject"`
	RequestID    int64  `json:"request_id"`
	DeadLetterID int64  `json:"dead_letter_id"`
}

// WorkerConfig tunes a replay worker.
type WorkerConfig struct {
	Owner      string        // names the worker in leases; default host-pid-random
	Lease      time.Duration // a claim's lease; default 30s
	Batch      int           // jobs claimed at once (and PubAcks in flight at most); default 2048
	BatchBytes int64         // payload and header bytes claimed at once (always at least one job); default 16 MiB
	// AckTimeout is the wait for the PubAcks of a claim, after its last
	// publish, before an outcome is unknown; default 5s, or a sixth of
	// Lease when that is shorter: a claim publishes within two thirds of
	// its lease and sizes its record to a sixth (recordPace.claimLimit),
	// so the wait takes the other sixth and never outlasts the lease (a
	// PubAck that came after it would find the job taken over).
	AckTimeout time.Duration
	Poll       time.Duration // idle wait between claims; default 200ms
	// Retry is the first wait before publishing again after a lost
	// PubAck (each next one twice as long, with jitter; see
	// replaypolicy.RetryAfter); default 2s.
	Retry time.Duration
	// RecordTimeout bounds one attempt to record a part of a claim's
	// outcomes; a part that fails is recorded again in smaller parts,
	// under a renewed lease when the lease runs short; default 5s.
	RecordTimeout time.Duration
	// KeptTries is how many times in a row the worker tries to record the
	// outcomes it kept (a lease that ended before the record) and fails
	// with PostgreSQL answering, before it lets them go, logging each with
	// what the broker answered, and claims again; default 10. While
	// PostgreSQL is out of reach it keeps trying: nothing else could be
	// claimed meanwhile.
	KeptTries int
}

func (c *WorkerConfig) defaults() {
	if c.Owner == "" {
		c.Owner = "worker-" + randomID()[:8]
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 2048
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 16 << 20
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = min(5*time.Second, c.Lease/6)
	}
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Retry <= 0 {
		c.Retry = 2 * time.Second
	}
	if c.RecordTimeout <= 0 {
		c.RecordTimeout = 5 * time.Second
	}
	if c.KeptTries <= 0 {
		c.KeptTries = 10
	}
}

// Worker executes approved replay jobs: it claims them (job.go), has the
// replay rules judge them on the facts it gathers (judge.go), publishes
// what they let go (publish.go) and records the outcomes (record.go).
// Workers coordinate only through PostgreSQL: claims with FOR UPDATE SKIP
// LOCKED, a lease, and a fencing token every result write must present.
type Worker struct {
	svc   *Service
	js    jetstream.JetStream
	pub   jetstream.JetStream // what it publishes replays with (publisher)
	auth  Authority
	reval Revalidator
	cfg   WorkerConfig
	log   *slog.Logger
	// stale is why the worker last waited for the active policy ("" when
	// it did not), so that it says so once.
	stale string
	// pace is how fast this worker's records went, which sizes its
	// claims and the parts it records them in (record.go).
	pace recordPace
	// unrecorded are outcomes of an earlier claim the lease ended before
	// recording, recorded before the next claim (record.go).
	unrecorded unrecorded
	// claimed are the jobs of the claim RunOnce executes, so that a
	// panic in it can be blamed on the claim's only job, or narrowed down
	// to one (runOnceGuarded).
	claimed []*job
	// narrow is what is left of the search for the job a panic outside
	// any one job came from (narrow.go).
	narrow narrowing

	// Test hooks. afterJudge runs after the rules judged a claim and
	// before anything of it is published. afterPublish runs after the
	// PubAcks are in and before anything is recorded; returning false
	// stops the worker there, as a crash would. ack may replace a PubAck
	// outcome (a lost ack). recordFailed hears of every failed attempt to
	// record. beforeSend runs just before a job is published, told when
	// its claim stops publishing, before the last checks; leaving runs
	// after them, as the job is handed to NATS. loaded runs when a claim's
	// jobs are loaded, before the claim commits. beforeClaim runs after the
	// check that this process's policy is the active version, before the
	// claim.
	beforeClaim  func()
	afterJudge   func()
	loaded       func(jobs []int64)
	afterPublish func(jobs []int64) bool
	beforeSend   func(jobID int64, publishBy time.Time)
	leaving      func(jobID int64)
	ack          func(jobID int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error)
	recordFailed func(attempt int, err error)
}

// NewWorker returns a worker of svc's jobs publishing on js; auth (nil:
// none) re-checks people's rights and reval (nil: none configured, so
// revalidate items are blocked) the original principals'. Run it.
func NewWorker(svc *Service, js jetstream.JetStream, auth Authority, reval Revalidator, cfg WorkerConfig, log *slog.Logger) *Worker {
	cfg.defaults()
	return &Worker{svc: svc, js: js, pub: publisher(js, cfg, log), auth: auth, reval: reval, cfg: cfg, log: log}
}

// publisher is the JetStream context a worker publishes its replays with:
// its own, on js's connection, that lets go of a publish no answer came
// for within the lease (WithPublishAsyncTimeout), and takes as many
// unanswered ones as the claims of a lease can leave. The context the
// process shares (jetstream.New's defaults) keeps every publish until its
// answer comes or the connection reconnects, and refuses all publishes
// once 4,000 wait: a target that never answers (a plain subscriber of a
// subject no stream stores, a stream that lost its quorum) left that many
// behind in a few claims, and from then on no replay of any tenant, to
// any stream, was published again until the process restarted
// (TestRevReplay20LostPubAcksWedgeEveryLaterPublish). The worker has
// judged every publish of a claim by the time its lease ends (it
// publishes within two thirds of it and waits AckTimeout, at most a
// sixth, for the answers), so dropping one after a lease loses no answer
// it waits for. js itself when its connection is not known, or when js is
// not a context jetstream.New made but a caller's own type around one,
// whose PublishMsgAsync is what the caller has the worker publish with
// (the tests' that time publishes or answer them: TestRateHeldAcrossRestart).
func publisher(js jetstream.JetStream, cfg WorkerConfig, log *slog.Logger) jetstream.JetStream {
	nc := js.Conn()
	if nc == nil {
		return js
	}
	claims := int(cfg.Lease/max(cfg.AckTimeout, time.Millisecond)) + 2 // claims a lease can hold, each waiting AckTimeout at least
	pub, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(cfg.Lease),
		jetstream.WithPublishAsyncMaxPending(max(4000, cfg.Batch*min(claims, 64))))
	if err != nil { // the options are valid for any defaulted configuration
		log.Warn("replay worker: publishes on the shared JetStream context", "err", err)
		return js
	}
	if reflect.TypeOf(pub) != reflect.TypeOf(js) {
		return js
	}
	return pub
}

// workerTx begins the worker's transactions (claims and records) with JIT
// compilation off, in the same round trip as BEGIN. Right after a large
// submit, and until autovacuum reads the new rows, a request's jobs and
// items are planned on statistics from before them: the costs such a plan
// estimates made PostgreSQL compile the claim's statement, 2 to 6 s of a
// loaded machine's CPU (measured at 100,000 items) for a statement that
// runs in 0.1 s. The worker's statements read and write by key; JIT never
// pays for itself there.
var workerTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL jit = off"}

// claimTx is workerTx for the claim, which also plans no bitmap scans.
// On a request's fresh jobs the planner expects a few hundred due ones and
// so read every entry of replay_jobs_ready_idx into a bitmap, fetched the
// rows and sorted them (134,000 entries, 84,000 rows and a sort spilled
// to disk for each claim of 2,048, 110 ms of its 270, measured at 100,000
// items); without the bitmap it reads the index in its order and stops at
// the claim's LIMIT, which is what the claim is written for.
var claimTx = pgx.TxOptions{BeginQuery: workerTx.BeginQuery + "; SET LOCAL enable_bitmapscan = off"}

// gateTx is workerTx for a publish gate (gateJobs), planned once
// for any number of jobs (a generic plan), which reaches each job by its
// key. A plan made for the gate's 2,000 jobs (PostgreSQL's first five
// executions of a statement on a connection, and later ones when it judges
// them cheaper) expected, on the jobs' statistics from before their
// submit, a few dozen claimed jobs, and read them all to hash-join them
// with the gate's (4,096 rows, 18,000 buffers, 55 ms at 100,000 items),
// while holding the request's row, which the other worker's gate waits
// for. now() in the gate is this transaction's start, one round trip
// before the statement; the fencing token, not the lease's end, is what
// keeps a job another worker took over from being published.
var gateTx = pgx.TxOptions{BeginQuery: workerTx.BeginQuery + "; SET LOCAL plan_cache_mode = force_generic_plan"}

// errStopped is returned by RunOnce when the afterPublish hook stopped it.
var errStopped = errors.New("worker stopped by hook")

// Run claims and executes jobs until ctx ends; then it makes a last try
// at the outcomes it kept and logs each one it cannot record
// (recordAtStop).
func (w *Worker) Run(ctx context.Context) {
	w.log.Info("replay worker running", "owner", w.cfg.Owner)
	for ctx.Err() == nil {
		var stop bool
		if w.survive("a round of the worker", func() { stop = w.round(ctx) }) {
			w.pause(ctx, escapedPanicPause)
		}
		if stop {
			return
		}
	}
	w.survive("recording at stop", func() { w.recordAtStop(ctx) })
}

// round runs one claim (runOnceGuarded), logs what went wrong and waits
// Poll when there was nothing to do or it failed. It reports whether the
// worker was stopped (errStopped).
func (w *Worker) round(ctx context.Context) (stop bool) {
	n, err := w.runOnceGuarded(ctx)
	if errors.Is(err, errStopped) {
		return true
	}
	var p *workerPanic
	switch {
	case errors.As(err, &p):
		w.logPanic(p)
	case err != nil && ctx.Err() == nil:
		w.log.Warn("replay worker", "err", err)
	}
	if n == 0 || err != nil {
		w.pause(ctx, w.cfg.Poll)
	}
	return false
}

// pause waits d, or until ctx is done.
func (w *Worker) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// escapedPanicPause is how long the worker waits after a panic that
// escaped every recover nearer to it (survive): long enough that a bug met
// at every round does not spin, short enough that the worker soon goes on.
const escapedPanicPause = 5 * time.Second

// survive runs f, the worker's last resort against a panic: one that no
// recover nearer to it caught (runOnceGuarded catches those of a claim;
// this is for a bug in the worker's own bookkeeping around it) is logged
// at ERROR with its stack and reported, instead of ending the process:
// app runs Run on a goroutine of its own with no recover, and a panic
// there would take the console's pages and ingest down with the worker.
// What f was doing is left as a crash leaves it.
func (w *Worker) survive(what string, f func()) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			w.claimed, w.unrecorded = nil, unrecorded{} // nothing it held is trusted
			w.log.Error("replay worker: a panic escaped "+what+"; the worker goes on after a pause, its jobs left to their lease as a crash leaves them",
				"owner", w.cfg.Owner, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	f()
	return false
}

// runOnceGuarded is RunOnce with a panic in it made an error, so that one
// job's data that meets a bug ends neither the worker nor the process
// (the console's pages and ingest run in it too). The claim is left as a
// crash (kill -9) leaves it, which the worker is built to survive: its
// transactions roll back as the panic unwinds them (pgx.BeginTxFunc),
// its jobs are taken over, fenced, once their lease ends, and a publish
// that may have landed is judged by the broker's answer then. What this
// worker kept unrecorded is forgotten, as a crash forgets it: whatever
// the panic interrupted is not trusted. The panic is blamed on the job
// the worker had in hand (inHand), else on the claim's only job, and
// counted against it (countFailure, poison.go): a job the worker failed on
// replaypolicy.MaxWorkerFailures times goes to a person instead of being
// claimed again at every lease. One met outside any job, in a claim of
// several, counts for none of them: the worker narrows it down to one job
// in smaller claims (narrow.go). The jobs of the claim the panic is not
// blamed on are let go at once (release), not held for their lease.
func (w *Worker) runOnceGuarded(ctx context.Context) (n int, err error) {
	w.claimed, w.narrow.claimed = nil, false
	defer func() {
		v := recover()
		claimed := w.claimed
		w.claimed = nil // not held, with their payloads, while the worker waits
		if v == nil {
			w.narrow.done()
			return
		}
		w.unrecorded = unrecorded{}
		p := asWorkerPanic(v)
		if p.job == nil && len(claimed) == 1 {
			p.job = claimed[0]
		}
		switch {
		case p.job != nil:
			p.countError = w.countFailure(ctx, p)
			w.narrow.done() // found, if it was narrowed down
		case len(claimed) > 1:
			w.narrow.split(claimed)
			p.narrowed = len(claimed)
		}
		p.releaseError = w.release(ctx, claimed, p.job)
		n, err = 0, p
	}()
	return w.RunOnce(ctx)
}

// logPanic logs the panic p recovered (level ERROR, with its stack), the
// job it was blamed on and what became of that job and of the rest of
// its claim.
func (w *Worker) logPanic(p *workerPanic) {
	// The panic's value as fmt prints it, which recovers a panic of its
	// Error or String method (a log handler calling Error would not).
	args := []any{"owner", w.cfg.Owner, "panic", fmt.Sprint(p.value), "stack", p.stack}
	if j := p.job; j != nil {
		args = append(args, "request", j.requestID, "job", j.id, "dead_letter", j.deadLetterID, "tenant", j.tenant,
			"msg_id", j.msgID, "correlation_id", j.corrID, "failures", p.failures, "limit", replaypolicy.MaxWorkerFailures)
	}
	if p.countStack != "" {
		args = append(args, "count_stack", p.countStack)
	}
	if p.bare {
		args = append(args, "counted_bare", "the failure was counted without the item's data: counting it with them panicked")
	}
	if p.releaseError != nil {
		args = append(args, "release_err", p.releaseError) // the rest of the claim waits for its lease
	}
	switch {
	case p.job == nil && p.narrowed > 1:
		w.log.Error(fmt.Sprintf("replay worker: a claim panicked outside any one job; its %d jobs are let go and claimed again in halves, to find the job it came from", p.narrowed), args...)
	case p.job == nil:
		w.log.Error("replay worker: a claim panicked outside any one job, before it held any; nothing is counted", args...)
	case p.countError != nil && p.ended != "":
		w.log.Error("replay worker: a claim panicked on a job once too often; the job ended "+string(p.ended)+" for a person, but its request could not be finished (the sweeper finishes it)", append(args, "err", p.countError)...)
	case p.countError != nil:
		w.log.Error("replay worker: a claim panicked on a job; the job is left to its lease, and the failure could not be counted", append(args, "err", p.countError)...)
	case p.uncounted != "":
		w.log.Error("replay worker: a claim panicked on a job; the job is left to its lease, and the failure was not counted: "+p.uncounted, args...)
	case p.ended != "":
		w.log.Error("replay worker: a claim panicked on a job once too often; the job ended "+string(p.ended)+" for a person, the rest of the claim is let go", args...)
	default:
		w.log.Error("replay worker: a claim panicked on a job; the job is left to its lease, as a crash leaves it, the failure is counted, and the rest of the claim is let go", args...)
	}
}

// RunOnce claims up to Batch due jobs (fewer when recording was slow), executes them and records the
// outcomes. It returns how many it claimed. Outcomes of an earlier claim
// kept unrecorded are recorded first; while they cannot be, it claims
// nothing and returns the error.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	if err := w.recordKept(ctx); err != nil {
		return 0, err
	}
	// A worker whose policy is not the active version claims nothing (it
	// reloads its file first): it would judge by stale rules, or block
	// what was approved under the new ones.
	if _, err := w.svc.activeTable(ctx, w.svc.pool); err != nil {
		if msg := err.Error(); msg != w.stale {
			w.stale = msg
			w.log.Warn("replay worker waits for the active policy", "owner", w.cfg.Owner, "err", err)
		}
		return 0, nil
	}
	w.stale = ""
	// Nor does a worker with no replay subjects (REPLAY_SUBJECT_ALLOW
	// empty; its process warned at start): the consoles that approved the
	// jobs have theirs, and every job it took would only wait for another
	// worker (judge.go), put off by its claim. It is asked after the
	// policy, which such a worker still reloads and says it waits for.
	if w.svc.cfg.Subjects.Empty() {
		return 0, nil
	}
	if w.beforeClaim != nil {
		w.beforeClaim()
	}
	claimed := time.Now()
	jobs, err := w.claim(ctx)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	w.claimed = jobs
	// Judge and publish only while most of the lease is left: what is not
	// published by then is released for the next claim, so neither a slow
	// rate nor a slow service lets a lease run out under a batch; the rest
	// of the lease is for recording.
	until := claimed.Add(w.cfg.Lease * 2 / 3)
	w.judge(ctx, jobs, until)
	if w.afterJudge != nil {
		w.afterJudge()
	}
	w.publish(ctx, jobs, until)
	if w.afterPublish != nil {
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.id
		}
		if !w.afterPublish(ids) {
			return len(jobs), errStopped
		}
	}
	if err := w.record(ctx, jobs, claimed.Add(w.cfg.Lease)); err != nil {
		return len(jobs), err
	}
	return len(jobs), nil
}
