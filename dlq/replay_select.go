package dlq

import (
	"context"
	"fmt"

	"github.com/quarantine-console/quarantine"
)

// MatchingIDs resolves a list filter, at this moment, to the ids of the
// dead letters it selects (newest first), at most limit of them. It returns
// an invalid quarantine.Error when the filter selects more: a bulk action works on an exact,
// frozen set, never on "whatever matches later".
func (s *Store) MatchingIDs(ctx context.Context, f ListFilter, limit int) ([]int64, error) {
	f.Before, f.After = "", ""
	var ids []int64
	for {
		page, err := s.ListDeadLetters(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("resolve selection: %w", err)
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if len(ids) > limit {
			return nil, quarantine.Errorf(quarantine.EINVALID, "the filter selects more than %d dead letters; narrow it", limit)
		}
		if page.Next == "" {
			return ids, nil
		}
		f.Before = page.Next
	}
}
