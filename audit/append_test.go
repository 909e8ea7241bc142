package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

type bundle struct {
	ctx context.Context
	db  *testdb.DB
}

func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{ctx: t.Context(), db: testdb.New(t)}
}

// event returns a valid event; tests change what they need.
func event(action string) audit.Event {
	return audit.Event{
		Actor:   quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ann", Email: "ann@example.com"},
		Tenant:  "acme",
		Action:  action,
		Outcome: audit.OutcomeOK,
	}
}

func appendAll(t *testing.T, b bundle, events ...audit.Event) []audit.Entry {
	t.Helper()
	out := make([]audit.Entry, 0, len(events))
	for _, e := range events {
		entry, err := audit.AppendFunc(b.ctx, b.db.Pool, e)
		require.NoError(t, err)
		out = append(out, entry)
	}
	return out
}

func requireIntact(t *testing.T, b bundle, rows int64) audit.Result {
	t.Helper()
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	require.NoError(t, res.Err())
	require.Equal(t, rows, res.Rows)
	require.Equal(t, rows, res.HeadSeq)
	return res
}

func TestAppend(t *testing.T) {
	t.Parallel()

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := time.Date(2025, 1, 2, 3, 4, 5, 678901234, time.FixedZone("CET", 3600))
		e := audit.Event{
			Actor:       quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ann", Email: "ann@example.com"},
			Tenant:      "acme",
			Action:      "deadletter.discard",
			ObjectType:  "dead_letter",
			ObjectID:    "7",
			MessageID:   "msg-7",
			OperationID: "op-7",
			Reason:      "duplicate of 6",
			Outcome:     audit.OutcomeOK,
			Before:      map[string]any{"status": "quarantined", "version": 1},
			After:       map[string]any{"status": "discarded", "version": 2},
			RequestMeta: quarantine.RequestMeta{RequestID: "req-7", RemoteAddr: "192.0.2.7", UserAgent: "Mozilla/5.0"},
			At:          at,
		}
		first, err := audit.AppendFunc(b.ctx, b.db.Pool, e)
		require.NoError(t, err)
		require.Equal(t, int64(1), first.Seq)
		require.Nil(t, first.PrevHash)
		require.Len(t, first.Hash, 32)
		require.Equal(t, at.Truncate(time.Microsecond).UTC(), first.At, "stored with PostgreSQL's precision, in UTC")
		require.JSONEq(t, `{"status":"quarantined","version":1}`, string(first.Before))

		got, err := audit.Get(b.ctx, b.db.Pool, 1, nil)
		require.NoError(t, err)
		require.Equal(t, first, got, "Append returns the entry as stored")

		second, err := audit.AppendFunc(b.ctx, b.db.Pool, event("login"))
		require.NoError(t, err)
		require.Equal(t, int64(2), second.Seq)
		require.Equal(t, first.Hash, second.PrevHash)
		require.WithinDuration(t, time.Now(), second.At, time.Minute, "zero At is the database clock")
		require.Nil(t, second.Before, "nil Before is NULL")

		res := requireIntact(t, b, 2)
		require.Equal(t, second.Hash, res.Head)
	})

	// jsonb reorders keys, drops whitespace and duplicate keys, rewrites
	// numbers and escapes: the hash must be over what PostgreSQL gives back.
	t.Run("JSONIsHashedAsStored", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		type state struct {
			Status string `json:"status"`
		}
		var nilState *state
		tests := []struct {
			name   string
			before any
			want   string // canonical form; "" for SQL NULL
		}{
			{"KeyOrderAndSpaces", json.RawMessage(` { "zz" : 1 , "a" : [ 1 , 2 ] , "mm": {"y":1,"x":2} } `), `{"a":[1,2],"mm":{"x":2,"y":1},"zz":1}`},
			{"DuplicateKeys", json.RawMessage(`{"a":1,"a":2}`), `{"a":2}`},
			{"Numbers", json.RawMessage(`[1e3, 2.50, -0, 1E-2, 12345678901234567890123]`), `[1000,2.50,0,0.01,12345678901234567890123]`},
			{"Escapes", json.RawMessage(`{"s":"\u00e9\u0041\/\t<&>"}`), `{"s":"éA/\t<&>"}`},
			{"Unicode", map[string]string{"name": "Zoë ✓ \u2028"}, "{\"name\":\"Zoë ✓ \u2028\"}"},
			{"String", "just text", `"just text"`},
			{"TypedNilPointerIsNull", nilState, ""},
			{"JSONNullIsNull", json.RawMessage(`null`), ""},
			{"Struct", state{Status: "ok"}, `{"status":"ok"}`},
		}
		for _, tt := range tests {
			e := event("state.change")
			e.Before, e.After = tt.before, tt.before
			got, err := audit.AppendFunc(b.ctx, b.db.Pool, e)
			require.NoError(t, err, tt.name)
			if tt.want == "" {
				require.Nil(t, got.Before, tt.name)
				require.Nil(t, got.After, tt.name)
				continue
			}
			require.Equal(t, tt.want, string(got.Before), tt.name)
			require.Equal(t, tt.want, string(got.After), tt.name)
		}
		requireIntact(t, b, int64(len(tests)))
	})

	t.Run("OddBytesAreStored", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := event("login")
		e.UserAgent = "bad\xff\x00agent"
		e.Reason = "line\nbreak, \"quoted\""
		got, err := audit.AppendFunc(b.ctx, b.db.Pool, e)
		require.NoError(t, err)
		require.Equal(t, "bad\uFFFD\uFFFDagent", got.UserAgent)
		requireIntact(t, b, 1)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tests := []struct {
			name   string
			change func(e *audit.Event)
		}{
			{"NoAction", func(e *audit.Event) { e.Action = " " }},
			{"NoOutcome", func(e *audit.Event) { e.Outcome = "" }},
			{"UnknownOutcome", func(e *audit.Event) { e.Outcome = "maybe" }},
			{"BeforeNotJSON", func(e *audit.Event) { e.Before = make(chan int) }},
			{"AfterNotJSON", func(e *audit.Event) { e.After = json.RawMessage(`{`) }},
			{"JSONWithNUL", func(e *audit.Event) { e.Before = map[string]string{"s": "a\x00b"} }},
			{"AtOutOfRange", func(e *audit.Event) { e.At = time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		}
		for _, tt := range tests {
			e := event("login")
			tt.change(&e)
			_, err := audit.AppendFunc(b.ctx, b.db.Pool, e)
			require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%s: %v", tt.name, err)
		}
		requireIntact(t, b, 0)
	})

	t.Run("RepeatableReadRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		err := pgx.BeginTxFunc(b.ctx, b.db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
			_, err := audit.Append(b.ctx, tx, event("login"))
			return err
		})
		require.ErrorContains(t, err, "appends need read committed")
		requireIntact(t, b, 0)
	})
}

func TestAuditAppendRollsBackWithCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("one"), event("two"))

	errChangeFailed := errors.New("the change failed")
	err := pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
		entry, err := audit.Append(b.ctx, tx, event("three"))
		require.NoError(t, err)
		require.Equal(t, int64(3), entry.Seq)
		return errChangeFailed // rolls back the entry with the change
	})
	require.ErrorIs(t, err, errChangeFailed)

	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_log`).Scan(&n))
	require.Equal(t, 2, n)

	more := appendAll(t, b, event("four"), event("five"))
	require.Equal(t, int64(3), more[0].Seq, "the rolled-back seq is reused: no gap")
	requireIntact(t, b, 4)
}

func TestAuditAppendConcurrentNeverForks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const workers, each = 8, 500
	cfg, err := pgxpool.ParseConfig(b.db.URL)
	require.NoError(t, err)
	cfg.MaxConns = workers
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seqs = map[int64]bool{}
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := event("concurrent.append")
				e.ObjectID = fmt.Sprintf("w%d-%d", w, i)
				var entry audit.Entry
				// Each append in its own transaction, with other work in it.
				err := pgx.BeginFunc(b.ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(b.ctx, `SELECT 1`); err != nil {
						return err
					}
					var err error
					entry, err = audit.Append(b.ctx, tx, e)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seqs[entry.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d appends from %d goroutines in %v", workers*each, workers, time.Since(start))

	require.Len(t, seqs, workers*each, "every append got its own seq")
	var lo, hi, n int64
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT min(seq), max(seq), count(*) FROM audit_log`).Scan(&lo, &hi, &n))
	require.Equal(t, []int64{1, workers * each, workers * each}, []int64{lo, hi, n}, "seqs 1..N, contiguous")
	requireIntact(t, b, workers*each)
}
