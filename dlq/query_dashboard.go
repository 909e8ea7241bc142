package dlq

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// DashboardQuery says whose dashboard to build and over which span.
type DashboardQuery struct {
	// Tenants is the caller's scope; required.
	Tenants []string
	// Now is the end of every window (the caller's clock).
	Now time.Time
	// Span is how far back the arrivals chart goes, in whole hours from 1
	// hour to 31 days; 0 means 24 hours.
	Span time.Duration
	// TopGroups is how many error groups to list; 0 means 8.
	TopGroups int
	// Also are reads of other packages the same page shows (the replays
	// that wait for a person), sent in the dashboard's batch so that the
	// page costs one round trip whatever it shows.
	Also []BatchRead
}

// BatchRead is a read that rides in another package's batch: Queue adds
// its statements to b, each with the function that reads its answer into
// the BatchRead itself, which holds it once the batch is sent.
type BatchRead interface {
	Queue(b *pgx.Batch)
}

// TenantSummary is one tenant's line on the dashboard.
type TenantSummary struct {
	Tenant     string
	Unresolved int64
	Total      int64
	// OldestUnresolved is when the oldest unresolved dead letter arrived,
	// OldestUnresolvedID which one it is; zero when there is none.
	OldestUnresolved   time.Time
	OldestUnresolvedID int64
	// LastHour and LastDay are arrivals in the last 60 and 1,440 minutes
	// (whole minutes, the current one included).
	LastHour int64
	LastDay  int64
}

// DimensionCount is how many dead letters share one item type, or one
// error class.
type DimensionCount struct {
	Value      string
	Unresolved int64
	Total      int64
}

// ArrivalBucket is the number of dead letters that arrived in one hour.
type ArrivalBucket struct {
	Start time.Time
	N     int64
}

// Dashboard is everything the dashboard shows, read from the counter tables
// (no count over dead_letters) and one index probe per tenant for the
// oldest unresolved dead letter.
type Dashboard struct {
	Tenants []TenantSummary
	// ByItemType and ByErrorClass are sorted by unresolved, then total,
	// descending; ByItemType holds the first DashboardItemTypes, of
	// ItemTypesUnresolved item types with unresolved dead letters.
	ByItemType          []DimensionCount
	ItemTypesUnresolved int64
	ByErrorClass        []DimensionCount
	// Arrivals has one bucket per hour of the span, oldest first, the
	// current (partial) hour last.
	Arrivals  []ArrivalBucket
	TopGroups []Group
	// Snoozed is what the groups snoozed in Tenants hold (snoozedSQL):
	// TopGroups leaves them out.
	Snoozed SnoozedGroups
	// LastPurge is retention's newest pass that removed dead letters of
	// Tenants: when, and how many of theirs.
	LastPurge LastPurge
	// ActiveTerms is the active retention terms version (Version "" when
	// none is recorded yet), read in the same batch, so that the page
	// tells the terms in force from this process's own without a round
	// trip of its own while they are the same.
	ActiveTerms TermsActivation
}

// One probe per tenant down dead_letters_unresolved_age_idx: its first
// entry is the oldest unresolved dead letter (which one, for the
// dashboard's link to it). Ordered by time alone, as that partial index
// is: with id as a tie-break the planner walks the list's index
// (tenant, dead_lettered_at, id) instead, through every closed dead letter
// older than the oldest open one (EXPLAIN ANALYZE, 3,000 rows, 2,900
// resolved); of two as old, either is the oldest.
//
// A dead letter whose NATS server's clock was reset is kept under the
// midnight of the day it arrived (FlagImplausibleStoredAt) and dated by
// when it arrived (DeadLetteredBy); one whose server's clock runs ahead
// (by less than a year: taken at face value) is dated by when the console
// stored it, which is earlier (unresolvedSince). The probe reads the first
// oldestProbe entries by stored time and takes the oldest by that date.
// That is exact for a tenant whose dead letters were all stored by servers
// whose clocks agree (ahead by the same amount, or not at all). Not so with
// one server's clock hours ahead of the others': its dead letter, stored by
// the console five hours ago, sorts after the others' of the last hour,
// and past oldestProbe of them it is not read (a second probe, by when the
// console stored them, would need an index of its own; left alone).
const oldestProbe = "64"

// unresolvedSince dates an unresolved dead letter d for how long it has
// waited: when JetStream stored it (the NATS server's clock), or when the
// console stored it (the database's) where that is earlier, a server
// clock running ahead; when it arrived for one kept under its day's
// midnight (FlagImplausibleStoredAt). A clock ahead made every dead letter
// look younger by as much: DeadLetterOldestUnresolved and the dashboard's
// "stale" said nothing until the skew had passed as well (review round
// 39).
const unresolvedSince = `CASE WHEN '` + FlagImplausibleStoredAt + `' = ANY(d.flags) AND d.received_at > d.dead_lettered_at
    THEN d.received_at ELSE least(d.dead_lettered_at, d.received_at) END`

// unresolvedProbe is the probe above, of the tenant t.tenant: its first
// oldestProbe unresolved dead letters by when JetStream stored them, each
// with its id and since (unresolvedSince). The dashboard (the oldest, to
// link to) and the oldest-unresolved metric (Store.OldestUnresolved) read
// it alike.
const unresolvedProbe = `
        SELECT d.id, ` + unresolvedSince + ` AS since
        FROM dead_letters d
        WHERE d.tenant = t.tenant
          AND d.status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation')
        ORDER BY d.dead_lettered_at
        LIMIT ` + oldestProbe

const (
	selectOldestInScope = `
SELECT t.tenant, o.id, o.since
FROM unnest(@tenants::text[]) AS t(tenant)
CROSS JOIN LATERAL (
    SELECT f.id, f.since FROM (` + unresolvedProbe + `
    ) f ORDER BY f.since, f.id LIMIT 1
) o`
	// Per tenant, per item type and per class, summed in the database; of
	// the item types only the first DashboardItemTypes in the dashboard's
	// order (sortedDims: "C" is Go's order of strings), each row with how
	// many of its set have unresolved dead letters.
	selectDashboardCounts = `
SELECT set, tenant, item_type, error_class, unresolved, total, with_unresolved FROM (
    SELECT c.*, row_number() OVER (PARTITION BY set ORDER BY unresolved DESC, total DESC, item_type COLLATE "C") AS rank,
           count(*) FILTER (WHERE unresolved > 0) OVER (PARTITION BY set) AS with_unresolved
    FROM (
        SELECT GROUPING(tenant, item_type, error_class) AS set, coalesce(tenant, '') AS tenant,
               coalesce(item_type, '') AS item_type, coalesce(error_class, '') AS error_class,
               coalesce(sum(n) FILTER (WHERE dead_letter_unresolved(status)), 0)::bigint AS unresolved, sum(n)::bigint AS total
        FROM dead_letter_counts WHERE tenant = ANY(@tenants) AND n > 0
        GROUP BY GROUPING SETS ((tenant), (item_type), (error_class))
    ) c
) r
WHERE set <> @item_type_set OR rank <= @item_types`
	// The rolling day and the chart from whole hours per tenant (24 rows a
	// tenant for a day) and minutes only where an hour is partial: the
	// minutes of the last hour (its figure; it spans two hours), and the
	// day's first hour before day_hours and its current one, whose whole
	// hours are not part of the rolling day. Per tenant: its last hour,
	// its minutes of the rolling day, its current hour.
	selectRecentMinutes = `
SELECT tenant,
       coalesce(sum(n) FILTER (WHERE minute >= @hour_ago), 0)::bigint,
       coalesce(sum(n) FILTER (WHERE minute < @day_hours OR minute >= @hour), 0)::bigint,
       coalesce(sum(n) FILTER (WHERE minute >= @hour), 0)::bigint
FROM dead_letter_arrivals_minute
WHERE tenant = ANY(@tenants) AND minute <= @now
  AND ((minute >= @day_ago AND minute < @day_hours) OR minute >= @hour_ago)
GROUP BY tenant`
	selectWholeHours = `
SELECT tenant, hour, n FROM dead_letter_arrivals_tenant_hour
WHERE tenant = ANY(@tenants) AND hour >= least(@since::timestamptz, @day_hours::timestamptz) AND hour < @hour`
)

// GROUPING() of selectDashboardCounts: which set a row sums.
const (
	byTenantSet     = 3 // only tenant grouped
	byItemTypeSet   = 5
	byErrorClassSet = 6
)

// DashboardItemTypes is how many item types the dashboard lists, those
// with the most unresolved dead letters: item types are producer input,
// and the dashboard, every on-call's home page, polls itself.
const DashboardItemTypes = 10

// Dashboard returns the dashboard of q.Tenants in one round trip. It
// returns an invalid quarantine.Error for a span out of range.
func (s *Store) Dashboard(ctx context.Context, q DashboardQuery) (Dashboard, error) {
	span := q.Span
	if span == 0 {
		span = 24 * time.Hour
	}
	if span < time.Hour || span > 31*24*time.Hour || span%time.Hour != 0 {
		return Dashboard{}, fmt.Errorf("dashboard: %w", quarantine.Errorf(quarantine.EINVALID, "span %s is not a whole number of hours from 1h to 31 days", q.Span))
	}
	top := q.TopGroups
	if top == 0 {
		top = 8
	}
	var dash Dashboard
	if len(q.Tenants) == 0 {
		return dash, nil
	}
	now := q.Now.UTC()
	minute := now.Truncate(time.Minute)
	hour := now.Truncate(time.Hour)
	since := hour.Add(-span + time.Hour)
	// The rolling day is its 1,440 minutes: the end of the hour it starts
	// in (from day_ago), the 23 whole hours from dayHours, and the current
	// hour; dayHours is day_ago's hour when day_ago starts one.
	dayAgo := minute.Add(-1439 * time.Minute)
	dayHours := hour.Add(-23 * time.Hour)
	args := pgx.NamedArgs{
		"tenants": q.Tenants, "now": now, "hour_ago": minute.Add(-59 * time.Minute),
		"day_ago": dayAgo, "day_hours": dayHours, "hour": hour, "since": since,
		"item_type_set": byItemTypeSet, "item_types": DashboardItemTypes,
	}
	groups := &GroupFilter{Tenants: q.Tenants, Limit: top, Unresolved: true}
	groupsSQL, groupArgs, _ := groups.sql()

	byTenant := map[string]*TenantSummary{}
	for _, t := range q.Tenants {
		byTenant[t] = &TenantSummary{Tenant: t}
	}
	types, classes := map[string]*DimensionCount{}, map[string]*DimensionCount{}
	arrivals := map[time.Time]int64{}

	b := &pgx.Batch{}
	b.Queue(selectDashboardCounts, args).Query(func(rows pgx.Rows) error {
		var set int
		var tenant, itemType, class string
		var unresolved, total, withUnresolved int64
		_, err := pgx.ForEachRow(rows, []any{&set, &tenant, &itemType, &class, &unresolved, &total, &withUnresolved}, func() error {
			switch set {
			case byTenantSet:
				if ts := byTenant[tenant]; ts != nil {
					ts.Unresolved, ts.Total = unresolved, total
				}
			case byItemTypeSet:
				types[itemType] = &DimensionCount{Value: itemType, Unresolved: unresolved, Total: total}
				dash.ItemTypesUnresolved = withUnresolved
			case byErrorClassSet:
				classes[class] = &DimensionCount{Value: class, Unresolved: unresolved, Total: total}
			}
			return nil
		})
		return err
	})
	b.Queue(selectOldestInScope, args).Query(func(rows pgx.Rows) error {
		var tenant string
		var id int64
		var at time.Time
		_, err := pgx.ForEachRow(rows, []any{&tenant, &id, &at}, func() error {
			if ts := byTenant[tenant]; ts != nil {
				ts.OldestUnresolved, ts.OldestUnresolvedID = at, id
			}
			return nil
		})
		return err
	})
	b.Queue(selectRecentMinutes, args).Query(func(rows pgx.Rows) error {
		var tenant string
		var hourN, dayN, currentN int64
		_, err := pgx.ForEachRow(rows, []any{&tenant, &hourN, &dayN, &currentN}, func() error {
			if ts := byTenant[tenant]; ts != nil {
				ts.LastHour += hourN
				ts.LastDay += dayN
				arrivals[hour] += currentN
			}
			return nil
		})
		return err
	})
	b.Queue(selectWholeHours, args).Query(func(rows pgx.Rows) error {
		var tenant string
		var at time.Time
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&tenant, &at, &n}, func() error {
			ts := byTenant[tenant]
			if ts == nil {
				return nil
			}
			at = at.UTC()
			if !at.Before(dayHours) {
				ts.LastDay += n
			}
			if !at.Before(since) {
				arrivals[at] += n
			}
			return nil
		})
		return err
	})
	b.Queue(groupsSQL, groupArgs).Query(func(rows pgx.Rows) error {
		var err error
		dash.TopGroups, err = pgx.CollectRows(rows, scanGroup)
		return err
	})
	queueSnoozedCount(b, groups, &dash.Snoozed)
	b.Queue(selectLastPurge, q.Tenants).Query(func(rows pgx.Rows) error {
		var err error
		dash.LastPurge, err = scanLastPurge(rows)
		return err
	})
	QueueActiveTerms(b, &dash.ActiveTerms)
	for _, r := range q.Also {
		r.Queue(b)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return Dashboard{}, fmt.Errorf("dashboard: %w", err)
	}

	for _, t := range q.Tenants {
		dash.Tenants = append(dash.Tenants, *byTenant[t])
	}
	dash.ByItemType, dash.ByErrorClass = sortedDims(types), sortedDims(classes)
	for at := since; !at.After(hour); at = at.Add(time.Hour) {
		dash.Arrivals = append(dash.Arrivals, ArrivalBucket{Start: at, N: arrivals[at]})
	}
	return dash, nil
}

func sortedDims(m map[string]*DimensionCount) []DimensionCount {
	out := make([]DimensionCount, 0, len(m))
	for _, d := range m {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Unresolved != out[j].Unresolved {
			return out[i].Unresolved > out[j].Unresolved
		}
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Value < out[j].Value
	})
	return out
}
