package testfactory

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Statements is a pgx tracer that records the round trips of a pool: a
// statement, a batch (its statements in one entry, joined by " ; ") or a
// COPY. Give it to app.Config.WebTracer and read what one request did with
// Reset and Take.
type Statements struct {
	mu    sync.Mutex
	trips []string
	batch map[*pgx.Conn][]string // batches under way, by connection
}

// Reset forgets what was recorded.
func (s *Statements) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trips = nil
}

// Take returns the round trips recorded since Reset, in order.
func (s *Statements) Take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.trips...)
}

func (s *Statements) add(trip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trips = append(s.trips, strings.Join(strings.Fields(trip), " "))
}

// TraceQueryStart implements pgx.QueryTracer.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.add(data.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (s *Statements) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.batch == nil {
		s.batch = map[*pgx.Conn][]string{}
	}
	s.batch[conn] = []string{}
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (s *Statements) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch[conn] = append(s.batch[conn], data.SQL)
}

// TraceBatchEnd implements pgx.BatchTracer: the batch is one round trip.
func (s *Statements) TraceBatchEnd(_ context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.mu.Lock()
	sqls := s.batch[conn]
	delete(s.batch, conn)
	s.mu.Unlock()
	s.add("BATCH: " + strings.Join(sqls, " ; "))
}

// TraceCopyFromStart implements pgx.CopyFromTracer.
func (s *Statements) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	s.add("COPY " + data.TableName.Sanitize())
	return ctx
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (s *Statements) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
