package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Headers a replay adds to what it re-publishes.
const (
	HeaderReplayOf      = "Dlq-Replay-Of"      // id of the dead letter replayed
	HeaderReplayRequest = "Dlq-Replay-Request" // id of the replay request
)

// Authority answers, at execution time, whether a person still holds a
// permission in a tenant (their roles may have changed since they asked).
type Authority interface {
	StillAllowed(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, error)
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
	AckTimeout time.Duration // wait for a PubAck before the outcome is unknown; default 5s
	Poll       time.Duration // idle wait between claims; default 200ms
	Retry      time.Duration // wait before retrying an unknown outcome; default 2s
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
	if c.AckTimeout <= 0 {
		c.AckTimeout = 5 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Retry <= 0 {
		c.Retry = 2 * time.Second
	}
}

// ReplayWorker executes approved replay jobs. Workers coordinate only
// through PostgreSQL: claims with FOR UPDATE SKIP LOCKED, a lease, and a
// fencing token every result write must present.
type ReplayWorker struct {
	replays *Replays
	js      jetstream.JetStream
	auth    Authority
	reval   Revalidator
	cfg     WorkerConfig
	log     *slog.Logger

	mu       sync.Mutex
	limiters map[int64]*rate.Limiter

	// Test hooks. afterPublish runs after the PubAcks are in and before
	// anything is recorded; returning false stops the worker there, as a
	// crash would. ack may replace a PubAck outcome (a lost ack).
	afterPublish func(jobs []int64) bool
	ack          func(jobID int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error)
}

// NewReplayWorker returns a worker; Run it.
func NewReplayWorker(replays *Replays, js jetstream.JetStream, auth Authority, reval Revalidator, cfg WorkerConfig, log *slog.Logger) *ReplayWorker {
	cfg.defaults()
	return &ReplayWorker{replays: replays, js: js, auth: auth, reval: reval, cfg: cfg, log: log, limiters: map[int64]*rate.Limiter{}}
}

// errStopped is returned by RunOnce when the afterPublish hook stopped it.
var errStopped = errors.New("worker stopped by hook")

// Run claims and executes jobs until ctx ends.
func (w *ReplayWorker) Run(ctx context.Context) {
	w.log.Info("replay worker running", "owner", w.cfg.Owner)
	for ctx.Err() == nil {
		n, err := w.RunOnce(ctx)
		if errors.Is(err, errStopped) {
			return
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("replay worker", "err", err)
		}
		if n == 0 || err != nil {
			select {
			case <-time.After(w.cfg.Poll):
			case <-ctx.Done():
			}
		}
	}
}

const claimJobs = `
WITH c AS (
    SELECT id FROM replay_jobs
    WHERE not_before <= now()
      AND (state IN ('pending', 'unknown') OR (state = 'claimed' AND lease_until < now())) -- a live lease is someone else's
    ORDER BY not_before, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE replay_jobs j SET state = 'claimed', lease_owner = $2, lease_until = now() + $3::interval,
    fence = nextval('replay_fence_seq'), attempts = j.attempts + 1, updated_at = now()
FROM c WHERE j.id = c.id
RETURNING j.id, j.fence`

const loadJobs = `
SELECT j.id, j.request_id, j.dead_letter_id, r.tenant, r.class, r.status, r.policy_version, r.rate, r.approved_at,
       r.requester_issuer, r.requester_subject, r.requester_email,
       i.msg_id, i.operation_id, i.correlation_id, i.subject, i.headers, i.payload, d.principal, d.item_type
FROM replay_jobs j
JOIN replay_requests r ON r.id = j.request_id
JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
JOIN dead_letters d ON d.id = j.dead_letter_id
WHERE j.id = ANY($1)
ORDER BY j.not_before, j.id`

type job struct {
	id, fence, requestID, deadLetterID int64
	tenant, class, status, policy      string
	rate                               float64
	approvedAt                         *time.Time
	requester                          quarantine.Actor
	msgID, opID, corrID, subject       string
	headers                            []HeaderValue
	payload                            []byte
	principal, itemType                string

	// outcome
	state, result string
	stream        string
	seq           uint64
	duplicate     bool
}

// RunOnce claims up to Batch due jobs, executes them and records the
// outcomes. It returns how many it claimed.
func (w *ReplayWorker) RunOnce(ctx context.Context) (int, error) {
	claimed := time.Now()
	jobs, err := w.claim(ctx)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	w.check(ctx, jobs)
	// Publish only while most of the lease is left: what is not published
	// by then is released for the next claim, so a slow rate never lets a
	// lease run out under a batch.
	w.publish(ctx, jobs, claimed.Add(w.cfg.Lease*2/3))
	if w.afterPublish != nil {
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.id
		}
		if !w.afterPublish(ids) {
			return len(jobs), errStopped
		}
	}
	if err := w.record(ctx, jobs); err != nil {
		return len(jobs), err
	}
	return len(jobs), nil
}

func (w *ReplayWorker) claim(ctx context.Context) ([]*job, error) {
	rows, err := w.replays.pool.Query(ctx, claimJobs, w.cfg.Batch, w.cfg.Owner, w.cfg.Lease.String())
	if err != nil {
		return nil, fmt.Errorf("claim replay jobs: %w", err)
	}
	fences := map[int64]int64{}
	var id, fence int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &fence}, func() error { fences[id] = fence; return nil }); err != nil {
		return nil, fmt.Errorf("claim replay jobs: %w", err)
	}
	if len(fences) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(fences))
	for id := range fences {
		ids = append(ids, id)
	}
	rows, err = w.replays.pool.Query(ctx, loadJobs, ids)
	if err != nil {
		return nil, fmt.Errorf("load replay jobs: %w", err)
	}
	var out []*job
	for rows.Next() {
		j := &job{}
		var hs []byte
		if err := rows.Scan(&j.id, &j.requestID, &j.deadLetterID, &j.tenant, &j.class, &j.status, &j.policy, &j.rate, &j.approvedAt,
			&j.requester.Issuer, &j.requester.Subject, &j.requester.Email, &j.msgID, &j.opID, &j.corrID, &j.subject,
			&hs, &j.payload, &j.principal, &j.itemType); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load replay jobs: %w", err)
		}
		if err := json.Unmarshal(hs, &j.headers); err != nil {
			j.state, j.result = "failed", "stored headers unreadable: "+err.Error()
		}
		j.fence = fences[j.id]
		out = append(out, j)
	}
	return out, rows.Err()
}

// check re-checks, just before publishing, everything that may have changed
// since approval; a job that fails a check gets its final state here.
func (w *ReplayWorker) check(ctx context.Context, jobs []*job) {
	table := w.replays.cfg.Policy()
	type reqCheck struct{ state, result string }
	byRequest := map[int64]reqCheck{}
	for _, j := range jobs {
		if j.state != "" {
			continue
		}
		rc, seen := byRequest[j.requestID]
		if !seen {
			rc = w.checkRequest(ctx, j, table)
			byRequest[j.requestID] = rc
		}
		if rc.state != "" {
			j.state, j.result = rc.state, rc.result
			continue
		}
		if err := w.replays.cfg.Subjects.Check(j.subject); err != nil {
			j.state, j.result = "failed", err.Error()
		}
	}
	w.skipReplayed(ctx, jobs)
	for _, j := range jobs {
		if j.state != "" || j.class != string(replaypolicy.Revalidate) {
			continue
		}
		allow, reason, err := w.revalidate(ctx, j)
		switch {
		case err != nil:
			j.state, j.result = "blocked", "revalidation got no answer: "+err.Error()
		case !allow:
			j.state, j.result = "blocked", "revalidation denied: "+reason
		}
	}
}

func (w *ReplayWorker) checkRequest(ctx context.Context, j *job, table *replaypolicy.Table) (rc struct{ state, result string }) {
	switch ReplayStatus(j.status) {
	case ReplayApproved, ReplayRunning:
	case ReplayCancelled:
		return struct{ state, result string }{"cancelled", "the request was cancelled"}
	default:
		return struct{ state, result string }{"blocked", "the request is " + j.status}
	}
	if table == nil || table.Version() != j.policy {
		return struct{ state, result string }{"blocked", "the replay policy changed since approval; request again"}
	}
	// An approval is for now, not for whenever workers come back: a request
	// that has not started within the class's approval expiry does not run.
	if k, ok := table.Knobs(replaypolicy.Class(j.class)); ok && ReplayStatus(j.status) == ReplayApproved &&
		j.approvedAt != nil && w.replays.cfg.Now().After(j.approvedAt.Add(k.ApprovalExpiry)) {
		return struct{ state, result string }{"blocked", fmt.Sprintf("the approval expired (%s) before the replay started; request again", k.ApprovalExpiry)}
	}
	if w.auth == nil {
		return rc
	}
	obj := "replay:" + j.class
	if ok, err := w.auth.StillAllowed(ctx, j.requester, j.tenant, obj, "request"); err != nil || !ok {
		return struct{ state, result string }{"blocked", fmt.Sprintf("the requester %s no longer may request %s replays in %s", j.requester.Email, j.class, j.tenant)}
	}
	as, err := approvals(ctx, w.replays.pool, j.requestID)
	if err != nil {
		return struct{ state, result string }{"", ""} // the next claim tries again; nothing is published on a failed read
	}
	for _, a := range as {
		if ok, err := w.auth.StillAllowed(ctx, a.Approver, j.tenant, obj, "approve"); err != nil || !ok {
			return struct{ state, result string }{"blocked", fmt.Sprintf("the approver %s no longer may approve %s replays in %s", a.Approver.Email, j.class, j.tenant)}
		}
	}
	return rc
}

// skipReplayed marks dedupe and same_operation items the ledger already
// holds: "already replayed" is decided here, whatever the broker's window.
func (w *ReplayWorker) skipReplayed(ctx context.Context, jobs []*job) {
	inBatch := map[string]bool{}
	for _, j := range jobs {
		if j.state != "" {
			continue
		}
		// Two jobs of one key in this batch: the first goes, the other waits
		// for the next claim, when the ledger will tell.
		if k := ledgerKey(j); k != "" {
			if inBatch[k] {
				j.state, j.result = "pending", "waiting for another job with the same identity"
				continue
			}
			inBatch[k] = true
		}
		var q string
		var key string
		switch replaypolicy.Class(j.class) {
		case replaypolicy.Dedupe:
			q, key = `SELECT EXISTS (SELECT 1 FROM replay_ledger WHERE tenant = $1 AND class = 'dedupe' AND msg_id = $2 AND request_id <> $3)`, j.msgID
		case replaypolicy.SameOperation:
			q, key = `SELECT EXISTS (SELECT 1 FROM replay_ledger WHERE tenant = $1 AND class = 'same_operation' AND operation_id = $2 AND request_id <> $3)`, j.opID
		default:
			continue
		}
		var done bool
		if err := w.replays.pool.QueryRow(ctx, q, j.tenant, key, j.requestID).Scan(&done); err != nil {
			j.state, j.result = "unknown", "ledger check failed; will retry: "+err.Error()
			continue
		}
		if done {
			j.state, j.result = "skipped", "already replayed (the replay ledger has it)"
		}
	}
}

// ledgerKey is what the ledger keeps unique for the job's class, or "".
func ledgerKey(j *job) string {
	switch replaypolicy.Class(j.class) {
	case replaypolicy.Dedupe:
		return j.tenant + "\x00msg\x00" + j.msgID
	case replaypolicy.SameOperation:
		return j.tenant + "\x00op\x00" + j.opID
	}
	return ""
}

func (w *ReplayWorker) revalidate(ctx context.Context, j *job) (bool, string, error) {
	if w.reval == nil {
		return false, "", errors.New("no revalidation subject is configured (REVALIDATE_SUBJECT)")
	}
	return w.reval.Revalidate(ctx, RevalidateQuery{
		Tenant: j.tenant, ItemType: j.itemType, MsgID: j.msgID, OperationID: j.opID, Principal: j.principal,
		Subject: j.subject, RequestID: j.requestID, DeadLetterID: j.deadLetterID,
	})
}

func (w *ReplayWorker) limiter(requestID int64, r float64) *rate.Limiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.limiters[requestID]
	if !ok {
		l = rate.NewLimiter(rate.Limit(r), max(1, int(r/20)))
		w.limiters[requestID] = l
	}
	return l
}

// publish sends the checked jobs asynchronously (at most Batch acks in
// flight) at each request's rate, to the original subject under the
// original message id.
func (w *ReplayWorker) publish(ctx context.Context, jobs []*job, until time.Time) {
	type inflight struct {
		j   *job
		fut jetstream.PubAckFuture
	}
	var pending []inflight
	for _, j := range jobs {
		if j.state != "" {
			continue
		}
		if time.Now().After(until) {
			j.state, j.result = "pending", "released: the lease was running out"
			continue
		}
		if err := w.limiter(j.requestID, j.rate).Wait(ctx); err != nil {
			j.state, j.result = "unknown", "not published: worker stopping"
			continue
		}
		m, err := ReplayMessage(j.subject, j.msgID, j.opID, j.corrID, j.deadLetterID, j.requestID, j.headers, j.payload)
		if err != nil {
			j.state, j.result = "failed", err.Error()
			continue
		}
		fut, err := w.js.PublishMsgAsync(m, jetstream.WithMsgID(j.msgID))
		if err != nil {
			j.state, j.result = "unknown", "publish failed: "+err.Error()
			continue
		}
		pending = append(pending, inflight{j, fut})
	}
	timeout := time.NewTimer(w.cfg.AckTimeout)
	defer timeout.Stop()
	for _, p := range pending {
		var ack *jetstream.PubAck
		var err error
		select {
		case ack = <-p.fut.Ok():
		case err = <-p.fut.Err():
		case <-timeout.C:
			err = context.DeadlineExceeded
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err == context.DeadlineExceeded {
			timeout.Reset(0) // the rest are out of time too
		}
		if w.ack != nil {
			ack, err = w.ack(p.j.id, ack, err)
		}
		j := p.j
		switch {
		case err == nil && ack != nil:
			j.state, j.stream, j.seq, j.duplicate = "published", ack.Stream, ack.Sequence, ack.Duplicate
			j.result = fmt.Sprintf("published to %s as %s:%d", j.subject, ack.Stream, ack.Sequence)
			if ack.Duplicate {
				j.result = fmt.Sprintf("suppressed by broker dedupe: %s:%d already holds message id %s", ack.Stream, ack.Sequence, j.msgID)
			}
		case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
			j.state, j.result = "failed", "no stream stores subject "+j.subject
		default:
			j.state, j.result = "unknown", fmt.Sprintf("no PubAck (%v); will retry with the same message id", err)
		}
	}
}

// ReplayMessage builds the message a replay publishes: the original subject
// and payload, the original headers (see ReplayHeaders), the original
// message id and operation and correlation ids, and the replay's own ids.
func ReplayMessage(subject, msgID, opID, corrID string, deadLetterID, requestID int64, hs []HeaderValue, payload []byte) (*nats.Msg, error) {
	orig, err := DecodeHeaders(ReplayHeaders(hs))
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(subject)
	m.Data = payload
	for k, vs := range orig {
		for _, v := range vs {
			m.Header.Add(k, v)
		}
	}
	m.Header.Set(HeaderNatsMsgID, msgID)
	if opID != "" {
		m.Header.Set(HeaderOperationID, opID)
	}
	if corrID != "" {
		m.Header.Set(HeaderCorrelationID, corrID)
	}
	m.Header.Set(HeaderReplayOf, strconv.FormatInt(deadLetterID, 10))
	m.Header.Set(HeaderReplayRequest, strconv.FormatInt(requestID, 10))
	return m, nil
}

const recordJobs = `
UPDATE replay_jobs j SET state = u.state, result = u.result, pub_stream = u.stream, pub_seq = u.seq,
    duplicate = u.dup, lease_owner = '', lease_until = NULL, updated_at = now(),
    not_before = CASE WHEN u.state IN ('unknown', 'pending') THEN now() + $8::interval ELSE j.not_before END
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bool[])
    AS u(id, fence, state, result, stream, seq, dup)
WHERE j.id = u.id
  AND j.fence = u.fence      -- a worker whose lease was taken over records nothing
  AND j.state = 'claimed'    -- nor does anyone after a cancel
RETURNING j.id`

// record writes the outcomes under the fencing tokens, and with them the
// ledger, the dead letters' statuses, the audit rows and the requests'
// progress, in one transaction.
func (w *ReplayWorker) record(ctx context.Context, jobs []*job) error {
	n := len(jobs)
	ids, fences, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	states, results, streams := make([]string, n), make([]string, n), make([]string, n)
	dups := make([]bool, n)
	byID := map[int64]*job{}
	for i, j := range jobs {
		ids[i], fences[i], states[i], results[i], streams[i], seqs[i], dups[i] = j.id, j.fence, j.state, j.result, j.stream, int64(j.seq), j.duplicate
		byID[j.id] = j
	}
	return pgx.BeginFunc(ctx, w.replays.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, recordJobs, ids, fences, states, results, streams, seqs, dups, w.cfg.Retry.String())
		if err != nil {
			return fmt.Errorf("record replay jobs: %w", err)
		}
		kept, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("record replay jobs: %w", err)
		}
		if len(kept) < n {
			w.log.Warn("replay results not recorded: lease lost to another worker", "owner", w.cfg.Owner, "lost", n-len(kept))
		}
		var events []audit.Event
		var ledger ledgerColumns
		var replayed, failed, requeued []int64
		requests := map[int64]bool{}
		for _, id := range kept {
			j := byID[id]
			requests[j.requestID] = true
			if j.state == "pending" {
				continue // released untouched: nothing happened to record
			}
			e := audit.Event{
				Actor: quarantine.Actor{Subject: "replay-worker:" + w.cfg.Owner}, Tenant: j.tenant, Action: "replay.item." + j.state,
				ObjectType: "dead_letter", ObjectID: strconv.FormatInt(j.deadLetterID, 10), MessageID: j.msgID,
				OperationID: j.opID, Reason: j.result, Outcome: audit.OutcomeOK,
				After: map[string]any{"request": j.requestID, "job": j.id, "subject": j.subject, "stream": j.stream, "seq": j.seq, "duplicate": j.duplicate},
			}
			switch j.state {
			case "published":
				ledger.add(j)
				replayed = append(replayed, j.deadLetterID)
			case "skipped":
				replayed = append(replayed, j.deadLetterID)
			case "failed", "blocked":
				e.Outcome = audit.OutcomeError
				failed = append(failed, j.deadLetterID)
			case "cancelled":
				requeued = append(requeued, j.deadLetterID)
			case "unknown":
				e.Outcome = audit.OutcomeError
			}
			events = append(events, e)
		}
		if len(ledger.jobIDs) > 0 {
			// One statement; the unique ledger keys decide races between two
			// requests for the same dedupe or operation key: the first wins.
			l := &ledger
			if _, err := tx.Exec(ctx, `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id,
                operation_id, subject, stream, seq, duplicate)
                SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[],
                    $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bool[])
                ON CONFLICT DO NOTHING`, l.jobIDs, l.reqIDs, l.dlIDs, l.tenants, l.classes, l.msgIDs, l.opIDs,
				l.subjects, l.streams, l.seqs, l.dups); err != nil {
				return fmt.Errorf("record replay ledger: %w", err)
			}
		}
		for _, u := range []struct {
			ids  []int64
			sql  string
			what string
		}{
			{replayed, `UPDATE dead_letters SET status = 'replayed', version = version + 1, updated_at = now()
                WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying', 'replay_failed', 'quarantined')`, "replayed"}, // never over discarded or resolved
			{failed, `UPDATE dead_letters SET status = 'replay_failed', version = version + 1, updated_at = now()
                WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying')`, "failed"}, // a success elsewhere wins
			{requeued, `UPDATE dead_letters SET status = 'quarantined', version = version + 1, updated_at = now()
                WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying')`, "requeued"},
		} {
			if len(u.ids) == 0 {
				continue
			}
			if _, err := tx.Exec(ctx, u.sql, u.ids); err != nil {
				return fmt.Errorf("mark dead letters %s: %w", u.what, err)
			}
		}
		reqIDs := make([]int64, 0, len(requests))
		for id := range requests {
			reqIDs = append(reqIDs, id)
		}
		if _, err := tx.Exec(ctx, `UPDATE replay_requests SET status = 'running', version = version + 1
            WHERE id = ANY($1) AND status = 'approved'`, reqIDs); err != nil {
			return fmt.Errorf("mark requests running: %w", err)
		}
		rows, err = tx.Query(ctx, `UPDATE replay_requests r SET status = 'done', finished_at = now(), version = version + 1
            WHERE id = ANY($1) AND status IN ('approved', 'running')
              AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state IN ('pending', 'claimed', 'unknown'))
            RETURNING id, tenant`, reqIDs)
		if err != nil {
			return fmt.Errorf("mark requests done: %w", err)
		}
		var doneID int64
		var tenant string
		_, err = pgx.ForEachRow(rows, []any{&doneID, &tenant}, func() error {
			events = append(events, audit.Event{Actor: quarantine.Actor{Subject: "replay-worker:" + w.cfg.Owner}, Tenant: tenant,
				Action: "replay.done", ObjectType: "replay_request", ObjectID: strconv.FormatInt(doneID, 10), Outcome: audit.OutcomeOK})
			return nil
		})
		if err != nil {
			return fmt.Errorf("mark requests done: %w", err)
		}
		if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
			return fmt.Errorf("audit replay results: %w", err)
		}
		return nil
	})
}

// ledgerColumns are ledger rows as one array per column, for unnest.
type ledgerColumns struct {
	jobIDs, reqIDs, dlIDs, seqs                        []int64
	tenants, classes, msgIDs, opIDs, subjects, streams []string
	dups                                               []bool
}

func (l *ledgerColumns) add(j *job) {
	l.jobIDs, l.reqIDs, l.dlIDs = append(l.jobIDs, j.id), append(l.reqIDs, j.requestID), append(l.dlIDs, j.deadLetterID)
	l.tenants, l.classes, l.msgIDs = append(l.tenants, j.tenant), append(l.classes, j.class), append(l.msgIDs, j.msgID)
	l.opIDs, l.subjects, l.streams = append(l.opIDs, j.opID), append(l.subjects, j.subject), append(l.streams, j.stream)
	l.seqs, l.dups = append(l.seqs, int64(j.seq)), append(l.dups, j.duplicate)
}
