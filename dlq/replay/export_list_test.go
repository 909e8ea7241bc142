package replay

import "context"

// CountsWithin is Counts with other bounds: at most requests requests,
// and of those as many as hold items items.
func (s *Service) CountsWithin(ctx context.Context, f ListFilter, requests, items int) (ListCounts, error) {
	return s.counts(ctx, f, requests, items)
}

// The reads of the items that came back (came_back.go), for their plans.
var (
	SelectCameBack       = selectCameBack
	SelectCameBackCounts = selectCameBackCounts
)
