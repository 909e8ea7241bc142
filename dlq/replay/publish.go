package replay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

func (w *Worker) limiter(requestID int64, r float64) *rate.Limiter {
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
func (w *Worker) publish(ctx context.Context, jobs []*job, until time.Time) {
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
			j.state, j.result = JobPending, "released: the lease was running out"
			continue
		}
		if err := w.limiter(j.requestID, j.rate).Wait(ctx); err != nil {
			j.state, j.result = JobUnknown, "not published: worker stopping"
			continue
		}
		var edited string
		if j.edited {
			edited = hex.EncodeToString(j.approvedSHA256)
		}
		m, err := Message(j.subject, j.msgID, j.opID, j.corrID, j.deadLetterID, j.requestID, j.headers, j.payload, edited)
		if err != nil {
			j.state, j.result = JobFailed, err.Error()
			continue
		}
		fut, err := w.js.PublishMsgAsync(m, jetstream.WithMsgID(j.msgID))
		if err != nil {
			j.state, j.result = JobUnknown, "publish failed: "+err.Error()
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
			j.state, j.stream, j.seq, j.duplicate = JobPublished, ack.Stream, ack.Sequence, ack.Duplicate
			j.result = fmt.Sprintf("published to %s as %s:%d", j.subject, ack.Stream, ack.Sequence)
			if ack.Duplicate {
				j.result = fmt.Sprintf("suppressed by broker dedupe: %s:%d already holds message id %s", ack.Stream, ack.Sequence, j.msgID)
			}
		case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
			j.state, j.result = JobFailed, "no stream stores subject "+j.subject
		default:
			j.state, j.result = JobUnknown, fmt.Sprintf("no PubAck (%v); will retry with the same message id", err)
		}
	}
}
