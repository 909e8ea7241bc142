package dlq

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The ids a filter selects, newest first: the list's conditions over the
// (tenant, dead_lettered_at, id) and filter indexes, never a payload.
const (
	selectMatchingIDs = `SELECT d.id FROM dead_letters d WHERE d.tenant = ANY(@tenants)`
	matchingIDsEnd    = ` ORDER BY d.dead_lettered_at DESC, d.id DESC LIMIT @limit`
)

// MatchingIDs returns the ids of the dead letters f selects (its cursors
// are ignored), newest first, at most limit of them. It reads ids only, so
// a bulk action can count and bound a selection before loading anything
// of it. It returns an error wrapping an invalid quarantine.Error for an
// invalid f.
func (s *Store) MatchingIDs(ctx context.Context, f ListFilter, limit int) ([]int64, error) {
	f.Before, f.After = "", ""
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("match dead letters: %w", err)
	}
	p, err := s.plan(ctx, &f)
	if err != nil {
		return nil, fmt.Errorf("match dead letters: %w", err)
	}
	if p.empty {
		return nil, nil
	}
	conds := p.countConds(&f)
	p.args["limit"] = limit
	sql := selectMatchingIDs + conds + matchingIDsEnd
	if p.subjects {
		// A subject prefix's lanes, as the list reads them, each stopping
		// after limit ids (query_subject.go).
		sql = p.subjectLanesSQL(false, matchingBySubjectHead, conds, matchingLimit, matchingBySubjectEnd)
	}
	rows, err := s.query(ctx, &p, sql)
	if err != nil {
		return nil, fmt.Errorf("match dead letters: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("match dead letters: %w", err)
	}
	return ids, nil
}

// The dead letters of a selection as the list shows them, newest first:
// only those in the scope.
const selectItemsByID = `SELECT ` + listColumns + ` FROM dead_letters d
WHERE d.id = ANY($1) AND (d.tenant = ANY($2) OR $3)
ORDER BY d.dead_lettered_at DESC, d.id DESC LIMIT $4`

// ItemsByID returns up to limit of the dead letters ids names in tenants
// (every tenant when all), newest first, as the list shows them (for a
// confirmation page).
func (s *Store) ItemsByID(ctx context.Context, ids []int64, tenants []string, all bool, limit int) ([]ListItem, error) {
	rows, err := s.pool.Query(ctx, selectItemsByID, ids, tenants, all, limit)
	if err != nil {
		return nil, fmt.Errorf("read dead letters by id: %w", err)
	}
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[ListItem])
	if err != nil {
		return nil, fmt.Errorf("read dead letters by id: %w", err)
	}
	return items, nil
}

// UniqueIDs is ids with each named once, in the order first named: a
// selection that names a dead letter twice (a scripted form, two boxes of
// one row) is the selection that names it once. Every action on a list of
// ids reads it so (Close, Keys, replay's CreateDrafts): counted twice, it
// would break a bound, a count of what changed, or a key of a row.
func UniqueIDs(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
