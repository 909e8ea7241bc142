package dlq

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ExplainList runs the page query ListDeadLetters would run for f under
// EXPLAIN (ANALYZE, BUFFERS) and returns the plan, for benchmarks and for
// finding out why a filter is slow.
func (s *Store) ExplainList(ctx context.Context, f ListFilter) (string, error) {
	if err := f.Validate(); err != nil {
		return "", fmt.Errorf("explain list: %w", err)
	}
	p, err := s.plan(ctx, &f)
	if err != nil {
		return "", fmt.Errorf("explain list: %w", err)
	}
	if p.empty {
		return "(nothing can match: no query runs)", nil
	}
	if c := f.Before + f.After; c != "" {
		cur, _ := DecodeCursor(c)
		p.args["cursor_at"], p.args["cursor_id"] = cur.At, cur.ID
	}
	// A text search runs as a simple query (planned with its words); the
	// others are planned with their values here, where the console's pool
	// plans them once, generically (Planning Time is then paid once per
	// connection, not per page).
	mode := pgx.QueryExecModeExec
	if p.text {
		// The first window's statement (textSearch reads more windows
		// only when it does not fill the page).
		mode = pgx.QueryExecModeSimpleProtocol
		windows, err := s.windows(ctx, &p, f.After != "")
		if err != nil {
			return "", fmt.Errorf("explain list: %w", err)
		}
		w := windows[0]
		p.args["win_lo"], p.args["win_hi"] = w.lo, w.hi
	}
	rows, err := s.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+p.keysSQL(f.After != ""), mode, p.args)
	if err != nil {
		return "", fmt.Errorf("explain list: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("explain list: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}
