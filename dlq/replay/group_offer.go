package replay

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// GroupOfferLimit bounds the dead letters of one error group in one tenant
// GroupOffers judges: the newest that a replay could take. A group with
// more is offered on what these say (GroupOffer.More).
const GroupOfferLimit = 200

// ReplayableStatuses are the statuses of a dead letter a new replay
// request may take: nothing holds it and its replay is not settled.
// JudgeItem blocks the others at draft (in a request already, or closed).
var ReplayableStatuses = []dlq.Status{dlq.StatusQuarantined, dlq.StatusReplayFailed}

// GroupOffer is what a replay of an error group could take now: Go of its
// dead letters would go (judged as a draft judges them: each item, then
// the items of each tenant and class together, as the draft's requests
// hold them, in a tenant and class the person may request), More says a
// tenant holds more than GroupOfferLimit candidates (Go counts only the
// ones judged), and Refused is why the first one that would not go would
// not ("" when all go); Together says that was the draft's bulk rule (they
// could go one at a time, or fewer at once).
type GroupOffer struct {
	Go       int
	More     bool
	Refused  string
	Together bool
}

// GroupScope is an error group and the tenants a replay of it takes its
// dead letters from (what its link selects).
type GroupScope struct {
	Fingerprint string
	Tenants     []string
}

// The newest dead letters of each error group in each of its tenants (the
// pairs $1, $2) a replay could take (ReplayableStatuses, $3), of item type
// $5 (”: any), at most $4 per group and tenant, with the facts JudgeItem
// needs (selectForJudge's) and their group. One tenant at a time: with the
// tenant equal, the scan walks dead_letters_group_time_idx newest first
// and stops at $4 (the status and item type are checked on the row); with
// a list of tenants (tenant = ANY) PostgreSQL 15 reads, and sorts, every
// row of the group in them, hundreds of thousands for a loud group kept 30
// days.
var selectGroupCandidates = factsSelect + judgeHeaders + factsRest + `, d.fingerprint
FROM unnest($1::text[], $2::text[]) AS g(fingerprint, tenant)
CROSS JOIN LATERAL (SELECT c.* FROM dead_letters c
    WHERE c.tenant = g.tenant AND c.fingerprint = g.fingerprint AND c.status = ANY($3)
      AND ($5::text = '' OR c.item_type = $5)
    ORDER BY c.dead_lettered_at DESC, c.id DESC LIMIT $4) d
` + fixJoin + `
` + headerFacts

// offerKey is a group's dead letters of one tenant and class: what one
// request of the group's draft holds.
type offerKey struct{ fp, tenant, class string }

// GroupOffers judges, for each error group of groups, its dead letters
// (of itemType; "": any) in the group's tenants that a new replay request
// could take (the newest GroupOfferLimit of the group in each tenant): as
// a draft would, each item (JudgeItem at draft), then those of each
// tenant and class together (JudgeDraft: the bulk rules, and whether the
// person may request the class there, can). The groups page offers a
// group's replay on it, so that it never offers a replay that selects
// nothing that can go, nor counts what the draft would block.
func (s *Service) GroupOffers(ctx context.Context, groups []GroupScope, itemType string, can CanRequest) (map[string]GroupOffer, error) {
	out := make(map[string]GroupOffer, len(groups))
	var fps, tenants []string
	for _, g := range groups {
		for _, t := range g.Tenants {
			fps, tenants = append(fps, g.Fingerprint), append(tenants, t)
		}
	}
	if len(fps) == 0 {
		return out, nil
	}
	seen := map[[2]string]int{}
	judged := map[offerKey][]replaypolicy.Verdict{}
	var order []offerKey
	rows, err := s.pool.Query(ctx, selectGroupCandidates, fps, tenants, statusStrings(ReplayableStatuses), GroupOfferLimit+1, itemType)
	if err != nil {
		return nil, fmt.Errorf("judge group replays: %w", err)
	}
	var r judgeRow
	var fp string
	_, err = pgx.ForEachRow(rows, append(r.targets(), &fp), func() error {
		at := [2]string{fp, r.f.tenant}
		if seen[at]++; seen[at] > GroupOfferLimit {
			o := out[fp]
			o.More = true
			out[fp] = o
		} else {
			v := s.judgeNow(&r)
			k := offerKey{fp, r.f.tenant, string(v.Class)}
			if _, ok := judged[k]; !ok {
				order = append(order, k)
			}
			judged[k] = append(judged[k], v)
		}
		r = judgeRow{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("judge group replays: %w", err)
	}
	table := s.cfg.Policy()
	for _, k := range order {
		o := out[k.fp]
		class := replaypolicy.Class(k.class)
		for _, v := range replaypolicy.JudgeDraft(table, class, k.tenant, can(k.tenant, class), judged[k]) {
			switch {
			case v.Outcome == replaypolicy.Go:
				o.Go++
			case o.Refused == "":
				o.Refused, o.Together = v.Reason, v.Check == replaypolicy.CheckBulk || v.Check == replaypolicy.CheckBulkCap
			}
		}
		out[k.fp] = o
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
