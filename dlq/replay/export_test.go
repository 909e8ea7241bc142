package replay

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// What the external tests (package replay_test) reach inside: the
// worker's steps and hooks, and how a request looks to the rules.

// ErrStopped is what RunOnce returns when the AfterPublish hook stopped it.
var ErrStopped = errStopped

// Job is a claimed job.
type Job = job

// Fence is the job's fencing token.
func (j *job) Fence() int64 { return j.fence }

// ID and RequestID are the job's and its request's ids.
func (j *job) ID() int64        { return j.id }
func (j *job) RequestID() int64 { return j.requestID }

// SetOutcome gives the job a state and result, as a worker's verdict would.
func (j *job) SetOutcome(state JobState, result string) { j.state, j.result = state, result }

// AfterJudge runs f after the rules judged a claim, before anything of it
// is published.
func (w *Worker) AfterJudge(f func()) { w.afterJudge = f }

// BeforeClaim runs f after the check that the worker's policy is the
// active version, before it claims.
func (w *Worker) BeforeClaim(f func()) { w.beforeClaim = f }

// Loaded runs f when a claim's jobs are loaded, before the claim commits.
func (w *Worker) Loaded(f func(jobs []int64)) { w.loaded = f }

// AfterStaleRead runs f when VoidStale has read the active version,
// before it voids anything.
func (s *Service) AfterStaleRead(f func()) { s.afterStaleRead = f }

// AfterPublish stops the worker after publishing, before recording, when f
// says false (as a crash would).
func (w *Worker) AfterPublish(f func(jobs []int64) bool) { w.afterPublish = f }

// BeforeSend runs f just before each job is published, with when its
// claim stops publishing (on this process's clock).
func (w *Worker) BeforeSend(f func(jobID int64, publishBy time.Time)) { w.beforeSend = f }

// Leaving runs f as each job is handed to NATS, after every check made
// before a send.
func (w *Worker) Leaving(f func(jobID int64)) { w.leaving = f }

// OnAck may replace a PubAck outcome (a lost ack).
func (w *Worker) OnAck(f func(jobID int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error)) {
	w.ack = f
}

// Claim, Judge, Publish and Record are the steps of RunOnce.
func (w *Worker) Claim(ctx context.Context) ([]*Job, error) { return w.claim(ctx) }
func (w *Worker) Judge(ctx context.Context, jobs []*Job) {
	w.judge(ctx, jobs, time.Now().Add(time.Minute))
}
func (w *Worker) Publish(ctx context.Context, jobs []*Job, until time.Time) {
	w.publish(ctx, jobs, until)
}
func (w *Worker) Record(ctx context.Context, jobs []*Job) error {
	return w.record(ctx, jobs, time.Now().Add(w.cfg.Lease))
}

// RecordFailed hears of every failed attempt to record outcomes.
func (w *Worker) RecordFailed(f func(attempt int, err error)) { w.recordFailed = f }

// PolicyRequest is req as the replay rules see it, with its approvals.
func PolicyRequest(req Request, approvals []Approval) replaypolicy.Request {
	return policyRequest(req, approvals)
}

// The worker's claim and publish gate, and the transactions they run in,
// for the tests of their plans.
const ClaimJobs = claimJobs

var GateJobs = gateJobs

var LedgerOf = ledgerOf

var ClaimTx, GateTx = claimTx, gateTx

// Evicts is evicts, for its table test.
var Evicts = evicts

// RunOnceGuarded is RunOnce as Run runs it: a panic in it is recovered,
// blamed on a job and counted against it, and returned as an error.
func (w *Worker) RunOnceGuarded(ctx context.Context) (int, error) { return w.runOnceGuarded(ctx) }

// MayEverRepublishSQL is the condition of the stoppable query that is
// Request.MayEverRepublish over replay_requests' columns.
func MayEverRepublishSQL() string { return mayEverRepublishSQL() }

// SetClock makes w read the age of its list of streams on now.
func (s *StreamWindows) SetClock(now func() time.Time) { s.now = now }
