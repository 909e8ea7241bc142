package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// connectNATS opens a client connection that reconnects forever (the fault
// tests restart servers under it) and its JetStream context; both close
// at cleanup.
func connectNATS(t *testing.T, urls, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(urls, nats.Name(name), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatalf("connect to NATS %s: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// loadSpec is a batch of dead letters a producer publishes with the dlq
// producer helper (dlq.NewMessage) to dlq.<Tenant>.<ItemType>.
type loadSpec struct {
	Tenant   string
	ItemType string
	Count    int
	Rate     float64 // messages per second; 0: as fast as the workers go
	Workers  int     // concurrent publishers; default 4
}

// load is a running producer. Every message has its own original
// Nats-Msg-Id (<RunID>-<i>), which the helper also turns into the dead
// letter's own Nats-Msg-Id, so a publish retried after a lost PubAck is
// stored once by JetStream's duplicate window.
type load struct {
	spec      loadSpec
	RunID     string
	published atomic.Int64
	retries   atomic.Int64
	done      chan struct{}
	err       error
}

// startLoad publishes spec in the background until every message has a
// PubAck, retrying each one (same id) through server restarts and leader
// changes. Stop waiting with Wait.
func startLoad(t *testing.T, natsURLs string, spec loadSpec) *load {
	t.Helper()
	if spec.Workers <= 0 {
		spec.Workers = 4
	}
	_, js := connectNATS(t, natsURLs, "e2e-load")
	l := &load{spec: spec, RunID: "e2e-" + randomHex(6), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	limit := rate.Inf
	if spec.Rate > 0 {
		limit = rate.Limit(spec.Rate)
	}
	limiter := rate.NewLimiter(limit, spec.Workers)
	next := make(chan int)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range spec.Workers {
		wg.Go(func() {
			for i := range next {
				if err := l.publish(ctx, js, i); err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
				}
			}
		})
	}
	go func() {
		defer close(l.done)
		for i := 0; i < spec.Count; i++ {
			if limiter.Wait(ctx) != nil {
				break
			}
			select {
			case next <- i:
			case <-ctx.Done():
			}
		}
		close(next)
		wg.Wait()
		l.err = firstErr
		if l.err == nil && l.published.Load() != int64(spec.Count) {
			l.err = fmt.Errorf("stopped after %d of %d messages: %w", l.published.Load(), spec.Count, context.Cause(ctx))
		}
	}()
	return l
}

// MsgID is the original message id of message i.
func (l *load) MsgID(i int) string { return fmt.Sprintf("%s-%06d", l.RunID, i) }

// Published is how many messages have their PubAck so far.
func (l *load) Published() int64 { return l.published.Load() }

// Retries is how many publishes failed and were sent again.
func (l *load) Retries() int64 { return l.retries.Load() }

// Wait waits until every message is published and fails the test if the
// producer gave up or timeout passed.
func (l *load) Wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-l.done:
		if l.err != nil {
			t.Fatalf("publishing dead letters: %v", l.err)
		}
	case <-time.After(timeout):
		t.Fatalf("publishing dead letters: %d of %d after %s", l.Published(), l.spec.Count, timeout)
	}
}

func (l *load) publish(ctx context.Context, js jetstream.JetStream, i int) error {
	orig := &nats.Msg{
		Subject: fmt.Sprintf("app.%s.%s", l.spec.Tenant, l.spec.ItemType),
		Header:  nats.Header{"Nats-Msg-Id": []string{l.MsgID(i)}},
		Data:    fmt.Appendf(nil, `{"index":"products","doc_id":"sku-%d","run":%q}`, i, l.RunID),
	}
	m, err := dlq.NewMessage(dlq.DefaultSubjectPrefix, l.spec.Tenant, l.spec.ItemType, orig, dlq.Origin{}, dlq.Failure{
		Err:           fmt.Errorf("index products: timeout writing doc sku-%d", i),
		Class:         dlq.ClassTransient,
		FirstFailedAt: time.Now().Add(-firstFailedBefore),
		Attempts:      3,
		Consumer:      "e2e-indexer",
		OperationID:   "op-" + l.MsgID(i),
		CorrelationID: "corr-" + l.MsgID(i),
	})
	if err != nil {
		return err
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			l.published.Add(1)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.retries.Add(1)
		// Back off a little before the next try while the server is away.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// dlqRows counts the rows that came from the DLQ stream for one load.
type dlqRows struct {
	Rows, DistinctSeq, DistinctMsgID, OfRun int64
	MinSeq, MaxSeq                          int64
}

const countDLQRows = `
SELECT count(*), count(DISTINCT source_seq), count(DISTINCT msg_id),
       count(*) FILTER (WHERE msg_id LIKE $1 || '-%'),
       coalesce(min(source_seq), 0), coalesce(max(source_seq), 0)
FROM dead_letters WHERE source_kind = 'dlq' AND source_stream = 'DLQ'`

func countRows(ctx context.Context, db *pgxpool.Pool, runID string) (dlqRows, error) {
	var r dlqRows
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := db.QueryRow(ctx, countDLQRows, runID).Scan(&r.Rows, &r.DistinctSeq, &r.DistinctMsgID, &r.OfRun, &r.MinSeq, &r.MaxSeq)
	return r, err
}

// waitRows waits until at least n rows of the DLQ stream are in the
// database (query errors, e.g. while PostgreSQL restarts, count as "not
// yet") and returns the count it saw.
func waitRows(t *testing.T, db *pgxpool.Pool, runID string, n int64, timeout time.Duration, watch ...*proc) dlqRows {
	t.Helper()
	var last dlqRows
	wait.For(t, fmt.Sprintf("%d dead-letter rows", n), timeout, whileRunning(func() error {
		r, err := countRows(context.Background(), db, runID)
		if err != nil {
			return err
		}
		last = r
		if r.Rows < n {
			return fmt.Errorf("%d rows: %w", r.Rows, wait.ErrNotYet)
		}
		return nil
	}, watch...))
	return last
}

// requireExactlyOnce checks invariants 1 and 2 for a finished load: the
// DLQ stream holds each message once (the producer's retries were
// deduplicated), and the database holds exactly one row per stream
// message (seq 1..n, each message id once).
func requireExactlyOnce(t *testing.T, ctx context.Context, db *pgxpool.Pool, js jetstream.JetStream, l *load) {
	t.Helper()
	n := int64(l.spec.Count)
	info, err := streamInfo(ctx, js, "DLQ")
	if err != nil {
		t.Fatalf("DLQ stream info: %v", err)
	}
	if info.State.Msgs != uint64(n) || info.State.FirstSeq != 1 || info.State.LastSeq != uint64(n) {
		t.Errorf("DLQ stream holds %d messages, seq %d..%d; want %d, seq 1..%d (a retried publish was stored twice, or one was lost)",
			info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, n, n)
	}
	r, err := countRows(ctx, db, l.RunID)
	if err != nil {
		t.Fatal(err)
	}
	want := dlqRows{Rows: n, DistinctSeq: n, DistinctMsgID: n, OfRun: n, MinSeq: 1, MaxSeq: n}
	if r != want {
		t.Errorf("dead_letters rows: %+v; want exactly one row per message: %+v", r, want)
	}
}

// streamInfo fetches a stream's info, retrying while the stream has no
// leader (right after a node restart).
func streamInfo(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := wait.Poll(30*time.Second, 100*time.Millisecond, func() error {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		s, err := js.Stream(cctx, name)
		if err != nil {
			return err
		}
		info, err = s.Info(cctx)
		return err
	})
	return info, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
