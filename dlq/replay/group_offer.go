package replay

import (
	"cmp"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// GroupOfferLimit bounds the dead letters of one error group GroupOffers
// judges: the newest that a replay could take. A group with more is
// offered on what these say (GroupOffer.More).
const GroupOfferLimit = 200

// ReplayableStatuses are the statuses of a dead letter a new replay
// request may take: nothing holds it and its replay is not settled.
// JudgeItem blocks the others at draft (in a request already, or closed).
var ReplayableStatuses = []dlq.Status{dlq.StatusQuarantined, dlq.StatusReplayFailed}

// GroupOffer is what a replay of an error group could take now: Go of its
// dead letters would go (judged as a draft judges them, in a tenant and
// class the person may request), More says there are more than
// GroupOfferLimit candidates (Go counts only the ones judged), and Refused
// is why the first one judged would not go ("" when none was judged, or
// all go).
type GroupOffer struct {
	Go      int
	More    bool
	Refused string
}

// The newest dead letters of each error group ($1) in each tenant ($2) a
// replay could take (ReplayableStatuses, $3), at most $4 per group and
// tenant, with the facts JudgeItem needs (selectForJudge's) and their group.
// One tenant at a time: with the tenant equal, the scan walks
// dead_letters_group_time_idx newest first and stops at $4 (the status is
// checked on the row); with a list of tenants (tenant = ANY) PostgreSQL 15
// reads, and sorts, every row of the group in them, hundreds of thousands
// for a loud group kept 30 days.
var selectGroupCandidates = factsSelect + judgeHeaders + factsRest + `, d.fingerprint
FROM unnest($1::text[]) AS g(fingerprint)
CROSS JOIN unnest($2::text[]) AS t(tenant)
CROSS JOIN LATERAL (SELECT c.* FROM dead_letters c
    WHERE c.tenant = t.tenant AND c.fingerprint = g.fingerprint AND c.status = ANY($3)
    ORDER BY c.dead_lettered_at DESC, c.id DESC LIMIT $4) d
` + fixJoin + `
` + headerFacts

// GroupOffers judges, for each error group of fingerprints, its dead
// letters in tenants that a new replay request could take (the newest
// GroupOfferLimit + 1 of each group in each tenant, GroupOfferLimit of a
// group judged): each as a draft would
// (JudgeItem at draft), and whether the person may request its class
// there (can). The groups page offers a group's replay on it, so that it
// never offers a replay that selects nothing that can go.
func (s *Service) GroupOffers(ctx context.Context, tenants, fingerprints []string, can CanRequest) (map[string]GroupOffer, error) {
	out := make(map[string]GroupOffer, len(fingerprints))
	if len(tenants) == 0 || len(fingerprints) == 0 {
		return out, nil
	}
	seen := map[string]int{}
	rows, err := s.pool.Query(ctx, selectGroupCandidates, fingerprints, tenants, statusStrings(ReplayableStatuses), GroupOfferLimit+1)
	if err != nil {
		return nil, fmt.Errorf("judge group replays: %w", err)
	}
	var r judgeRow
	var fp string
	_, err = pgx.ForEachRow(rows, append(r.targets(), &fp), func() error {
		o := out[fp]
		if seen[fp]++; seen[fp] > GroupOfferLimit {
			o.More = true
		} else {
			v := s.judgeNow(&r)
			switch {
			case v.Outcome == replaypolicy.Go && can(r.f.tenant, v.Class):
				o.Go++
			case v.Outcome == replaypolicy.Go:
				o.Refused = cmp.Or(o.Refused, fmt.Sprintf("you may not request %s replays in %s", v.Class, r.f.tenant))
			default:
				o.Refused = cmp.Or(o.Refused, v.Reason)
			}
		}
		out[fp] = o
		r = judgeRow{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("judge group replays: %w", err)
	}
	return out, nil
}

func statusStrings(sts []dlq.Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = string(st)
	}
	return out
}
