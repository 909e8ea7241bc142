package replay_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// panickyLog is a log handler with a bug: the first record whose message
// holds on panics; every record goes on to next, and those that say a
// panic escaped are handed to escaped.
type panickyLog struct {
	next    slog.Handler
	on      string
	fired   *atomic.Bool
	escaped chan<- string
}

func (h panickyLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h panickyLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.on) && h.fired.CompareAndSwap(false, true) {
		panic("a bug met while logging")
	}
	if strings.Contains(r.Message, "a panic escaped") {
		select {
		case h.escaped <- r.Message:
		default:
		}
	}
	return h.next.Handle(ctx, r)
}

func (h panickyLog) WithAttrs(a []slog.Attr) slog.Handler {
	h.next = h.next.WithAttrs(a)
	return h
}

func (h panickyLog) WithGroup(g string) slog.Handler {
	h.next = h.next.WithGroup(g)
	return h
}

// TestWorkerSurvivesAPanicOutsideItsClaim: a panic no recover nearer to it
// caught (here, in logging a poison job's panic, after the claim was
// recovered) does not leave Worker.Run, whose goroutine has no recover
// (the process would end): it is logged, the worker pauses, and it stops
// when told to, its pause waiting on the context.
func TestWorkerSurvivesAPanicOutsideItsClaim(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dl := b.seedItem(t, "search.index_update", "survive-log-bug", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	var job int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&job))

	cfg, err := pgxpool.ParseConfig(b.db.Pool.Config().ConnString())
	require.NoError(t, err)
	tracer := &panicOnJobAudit{}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	escaped := make(chan string, 1)
	log := slog.New(panickyLog{next: b.log.Handler(), on: "a claim panicked", fired: new(atomic.Bool), escaped: escaped})
	w := replay.NewWorker(replay.New(pool, b.config(t)), b.js, b.auth, nil,
		replay.WorkerConfig{Owner: "survive", Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Lease: time.Hour}, log)
	tracer.job.Store(job)

	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		w.Run(ctx)
	}()
	select {
	case msg := <-escaped:
		require.Contains(t, msg, "the worker goes on")
	case v := <-done:
		t.Fatalf("Run returned before the panic was logged (panic: %v)", v)
	case <-time.After(time.Minute):
		t.Fatal("no panic escaped a round in a minute")
	}
	cancel()
	select {
	case v := <-done:
		require.Nil(t, v, "a panic left Run")
	case <-time.After(time.Minute):
		t.Fatal("Run did not stop when told to, in its pause")
	}
}
