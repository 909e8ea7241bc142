package dlq

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// GroupSort orders the error groups.
type GroupSort string

// Orders of Groups; the zero value is GroupsByUnresolved.
const (
	GroupsByUnresolved GroupSort = "unresolved" // most unresolved first
	GroupsByCount      GroupSort = "count"      // most dead letters first
	GroupsByLastSeen   GroupSort = "recent"     // most recently seen first
	GroupsByFirstSeen  GroupSort = "new"        // newest groups first
)

// Valid reports whether s is one of the orders.
func (s GroupSort) Valid() bool {
	switch s {
	case "", GroupsByUnresolved, GroupsByCount, GroupsByLastSeen, GroupsByFirstSeen:
		return true
	}
	return false
}

// GroupSnooze says which groups snoozed in a tenant (GroupTriage) a
// listing keeps.
type GroupSnooze string

// Choices of GroupFilter.Snoozed; the zero value leaves snoozed groups out.
const (
	SnoozedHidden GroupSnooze = ""        // a group snoozed in a tenant is left out there
	SnoozedOnly   GroupSnooze = "snoozed" // only what is snoozed
	SnoozedToo    GroupSnooze = "all"     // snoozed or not
)

// Valid reports whether s is one of the choices.
func (s GroupSnooze) Valid() bool {
	return s == SnoozedHidden || s == SnoozedOnly || s == SnoozedToo
}

// Group limits.
const (
	DefaultGroupLimit = 100
	MaxGroupLimit     = 500
	// StackHeadLines is how many lines of the sample stack a Group carries.
	StackHeadLines = 6
	// GroupItemTypes is how many of its item types a Group names.
	GroupItemTypes = 5
)

// GroupFilter selects error groups. Zero fields do not filter; Tenants is
// the caller's scope and is required.
type GroupFilter struct {
	Tenants    []string
	Tenant     string
	ItemType   string
	ErrorClass ErrorClass
	// Fingerprint keeps only that group (a row of the page read again on
	// its own: the groups page's replay offer, web's groupOffer).
	Fingerprint string
	// Unresolved keeps only groups with unresolved dead letters.
	Unresolved bool
	Sort       GroupSort
	// Snoozed says what becomes of groups snoozed in a tenant: by default
	// their counters there are left out (a group snoozed in every tenant
	// is not listed).
	Snoozed GroupSnooze
	// Limit is 0 for DefaultGroupLimit, at most MaxGroupLimit; Offset skips
	// that many groups of the order (a page asked by number alone).
	Limit  int
	Offset int
	// After and Before are a shown group's position (at most one): the
	// groups that come after it in the order, or the Limit nearest before
	// it. Pages move on by them, not by Offset: a group dealt with on one
	// page moves the rest of the order up, and an offset would skip the
	// first group of the next page (keyset, as the dead letter list).
	After, Before *GroupCursor
}

// GroupCursor is a group's position in every order of Groups: its sort
// keys as a page showed them.
type GroupCursor struct {
	Unresolved, N       int64
	LastSeen, FirstSeen time.Time
	Fingerprint         string
}

// Cursor is g's position, for GroupFilter.After or Before.
func (g Group) Cursor() GroupCursor {
	return GroupCursor{Unresolved: g.Unresolved, N: g.N, LastSeen: g.LastSeen, FirstSeen: g.FirstSeen, Fingerprint: g.Fingerprint}
}

// Encode returns the cursor as an opaque URL-safe string.
func (c GroupCursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{strconv.FormatInt(c.Unresolved, 10),
		strconv.FormatInt(c.N, 10), strconv.FormatInt(c.LastSeen.UnixMicro(), 10), strconv.FormatInt(c.FirstSeen.UnixMicro(), 10),
		c.Fingerprint}, ":")))
}

// DecodeGroupCursor reads a string made by GroupCursor.Encode; anything
// else (a link anyone can edit) is an invalid quarantine.Error. Its
// counts may be any int64 but the least, negative too (a cursor only
// positions: a page written while a count was below 0 must still lead
// on); the least is refused, as the query negates the counts (bigint out
// of range). Its times are from 1970 on, and ones PostgreSQL takes.
func DecodeGroupCursor(s string) (GroupCursor, error) {
	bad := quarantine.Errorf(quarantine.EINVALID, "group page cursor is not valid")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return GroupCursor{}, bad
	}
	parts := strings.SplitN(string(raw), ":", 5)
	if len(parts) != 5 || parts[4] == "" || !StorableText(parts[4]) {
		return GroupCursor{}, bad
	}
	var n [4]int64
	for i := range n {
		// The times (n[2], n[3]) are never before 1970 on a page: a stored
		// dead letter is never dated before MinPlausibleStoredTime.
		if n[i], err = strconv.ParseInt(parts[i], 10, 64); err != nil || n[i] == math.MinInt64 || (i >= 2 && n[i] < 0) {
			return GroupCursor{}, bad
		}
	}
	c := GroupCursor{Unresolved: n[0], N: n[1], LastSeen: time.UnixMicro(n[2]).UTC(), FirstSeen: time.UnixMicro(n[3]).UTC(), Fingerprint: parts[4]}
	for _, at := range []time.Time{c.LastSeen, c.FirstSeen} {
		if at.Before(minTime) || at.After(maxTime) { // PostgreSQL refuses some such times outright
			return GroupCursor{}, bad
		}
	}
	return c, nil
}

// Group is an error group: dead letters of the same fingerprint in the
// caller's scope.
type Group struct {
	Fingerprint string
	ErrorClass  ErrorClass
	N           int64 // dead letters stored
	Unresolved  int64
	FirstSeen   time.Time
	LastSeen    time.Time
	Tenants     []string
	// ItemTypes are the group's first GroupItemTypes item types by name;
	// ItemTypeCount is how many it has (item types are producer input:
	// a group may have thousands).
	ItemTypes     []string
	ItemTypeCount int64
	// SampleID is the dead letter of the group stored last (or, when that
	// one was deleted, the newest the row counts: across its tenants, of
	// the filter's item type, unresolved when the filter keeps unresolved
	// groups); SampleError and StackHead (its first StackHeadLines lines)
	// are read from it. Zero and empty when none is left.
	SampleID    int64
	SampleError string
	StackHead   string

	total int // groups the query matched, from the window count
	ahead int // groups of the order not after the page's cursor (Before: before it)
}

// GroupPage is the groups Groups found, in order, and how many matched.
type GroupPage struct {
	Groups []Group
	Total  int
	// First is the place of Groups[0] in the order among Total (from 1);
	// 0 when the page is empty.
	First int
	// Snoozed is what the filter's snoozed groups hold when it leaves them
	// out (SnoozedHidden); zero otherwise.
	Snoozed SnoozedGroups
}

// SnoozedGroups is what a listing that leaves snoozed groups out does not
// show: how many groups are snoozed (in some tenant of the scope) and
// their unresolved dead letters there, so that a page can say they exist.
type SnoozedGroups struct {
	Groups     int64
	Unresolved int64
}

// Groups are aggregated from dead_letter_groups (one row per tenant, group
// and item type, kept with the dead letters: dlq/counters.go): first the page of groups with their
// counts and times, then, for those only, their tenants and item types and
// a sample read by primary key (or, when it was deleted, through the
// group's index, groupParts). No scan of dead_letters.
//
// A group's unresolved sum is read as at least 0: a status change moves
// it at once (StatusMove), an arrival only at the next fold, so an arrival
// closed before its fold leaves it below the truth, and below 0, until
// then. Clamped where it is summed, the order, HAVING, a page's cursor
// and what the page shows all read the same figure.
const (
	selectGroupsHead = `
WITH s AS (
    SELECT fingerprint, sum(n)::bigint AS n, greatest(sum(unresolved), 0)::bigint AS unresolved,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen,
           max(sample_id) AS sample_id, (array_agg(sample_at ORDER BY sample_id DESC))[1] AS sample_at
    FROM dead_letter_groups
    WHERE tenant = ANY(@tenants) AND n > 0`
	groupItemType   = ` AND item_type = @item_type`
	groupErrorClass = ` AND error_class = @error_class`
	groupOne        = ` AND fingerprint = @fingerprint`
	// Snoozes apply per tenant: the counters of a tenant where the group
	// is snoozed are left out (or kept alone).
	groupNotSnoozed = ` AND NOT EXISTS (SELECT 1 FROM group_triage t
        WHERE t.tenant = dead_letter_groups.tenant AND t.fingerprint = dead_letter_groups.fingerprint AND ` + snoozedNow + `)`
	groupSnoozed = ` AND EXISTS (SELECT 1 FROM group_triage t
        WHERE t.tenant = dead_letter_groups.tenant AND t.fingerprint = dead_letter_groups.fingerprint AND ` + snoozedNow + `)`
	groupTail = `
    GROUP BY fingerprint`
	groupUnresolved = `
    HAVING greatest(sum(unresolved), 0) > 0`
	// The groups a filter selects and their unresolved dead letters,
	// counted (countSQL): the snoozed groups a filter leaves out, and the
	// groups of a page past the last.
	selectCountHead = `
SELECT count(*)::bigint, coalesce(sum(unresolved), 0)::bigint FROM (
    SELECT fingerprint, greatest(sum(unresolved), 0) AS unresolved
    FROM dead_letter_groups
    WHERE tenant = ANY(@tenants) AND n > 0`
	selectCountTail = `
) s`
	// The groups of the filter are counted (total), and those ahead of the
	// page's cursor (ahead: the page's "101–200 of 250" however it was
	// reached, with no sort of them all), then the page is read from its
	// cursor, or its offset.
	groupRanked = `
), r AS (
    SELECT s.*, count(*) OVER () AS total, `
	groupPage = ` AS ahead FROM s
), g AS (
    SELECT * FROM r WHERE true`
	// A group's item types are producer input, as many as its subjects
	// name: the page gets the first GroupItemTypes by name and how many
	// there are, not the list. Both are of the one sorted list the
	// lateral builds (the plan is the one that sent the whole list).
	groupLimit = `
    LIMIT @limit OFFSET @offset
)
SELECT g.fingerprint, a.error_class, g.n, g.unresolved, g.first_seen, g.last_seen, a.tenants,
       a.item_types[1:@group_types], cardinality(a.item_types),
       coalesce(x.id, 0), g.total, g.ahead, coalesce(left(x.error, 2000), '') AS error, coalesce(left(x.stack, 4000), '') AS stack
FROM g
CROSS JOIN LATERAL (
    SELECT min(error_class) AS error_class, array_agg(DISTINCT tenant ORDER BY tenant) AS tenants,
           array_agg(DISTINCT item_type ORDER BY item_type) AS item_types
    FROM dead_letter_groups
    WHERE tenant = ANY(@tenants) AND fingerprint = g.fingerprint AND n > 0`
	// The recorded sample, or when it was deleted, the newest dead letter
	// the row stands for (the second branch only runs when the first finds
	// nothing): of the group, in each tenant of the row, of the filter's
	// item type and, on a page of unresolved groups, unresolved
	// (sampleConds), from the row's first to its last seen (the
	// counters' bounds of every such dead letter, which prune the
	// partitions outside them when the probe runs): one backward scan of
	// dead_letters_group_time_idx per tenant, stopping at its first match,
	// the newest of them. Where the filter leaves some of the group's dead
	// letters out (another item type, closed ones) the scan passes over
	// those of them in the range newer than its first match: what
	// retention, the only thing that deletes a recorded sample, kept there
	// (a few usually; 4,000 of another item type kept longer, all newer
	// than the match: 8,168 buffer hits, 3-14 ms on a shared test
	// machine). An index leading with
	// tenant, fingerprint and item type would make it one probe, at an
	// eighth index's cost to every insert.
	groupParts = `
) a
LEFT JOIN LATERAL (
    SELECT d.id, d.error, d.stack FROM dead_letters d WHERE d.id = g.sample_id AND d.dead_lettered_at = g.sample_at
    UNION ALL
    (SELECT k.id, k.error, k.stack FROM unnest(a.tenants) AS t(tenant)
     CROSS JOIN LATERAL (
         SELECT d.id, d.dead_lettered_at, d.error, d.stack FROM dead_letters d
         WHERE d.tenant = t.tenant AND d.fingerprint = g.fingerprint
           AND d.dead_lettered_at >= g.first_seen AND d.dead_lettered_at <= g.last_seen`
	groupPartsEnd = `
         ORDER BY d.dead_lettered_at DESC, d.id DESC LIMIT 1
     ) k
     ORDER BY k.dead_lettered_at DESC, k.id DESC LIMIT 1)
    LIMIT 1
) x ON true`
	sampleItemType   = ` AND d.item_type = @item_type`
	sampleUnresolved = ` AND dead_letter_unresolved(d.status)`

	orderUnresolved = ` ORDER BY unresolved DESC, n DESC, fingerprint`
	orderCount      = ` ORDER BY n DESC, fingerprint`
	orderLastSeen   = ` ORDER BY last_seen DESC, fingerprint`
	orderFirstSeen  = ` ORDER BY first_seen DESC, fingerprint`
	// The same orders backwards: the page before a cursor is read nearest
	// first.
	orderUnresolvedBack = ` ORDER BY unresolved, n, fingerprint DESC`
	orderCountBack      = ` ORDER BY n, fingerprint DESC`
	orderLastSeenBack   = ` ORDER BY last_seen, fingerprint DESC`
	orderFirstSeenBack  = ` ORDER BY first_seen, fingerprint DESC`

	// The groups after a cursor in each order (row comparisons, the
	// descending keys negated); afterTime is the two orders by a time.
	afterUnresolved = `(-unresolved, -n, fingerprint) > (-@c_unresolved::bigint, -@c_n::bigint, @c_fp::text)`
	afterCount      = `(-n, fingerprint) > (-@c_n::bigint, @c_fp::text)`
	afterTime       = `(%[1]s < @c_at OR (%[1]s = @c_at AND fingerprint > @c_fp::text))`
	// And before it.
	beforeUnresolved = `(-unresolved, -n, fingerprint) < (-@c_unresolved::bigint, -@c_n::bigint, @c_fp::text)`
	beforeCount      = `(-n, fingerprint) < (-@c_n::bigint, @c_fp::text)`
	beforeTime       = `(%[1]s > @c_at OR (%[1]s = @c_at AND fingerprint < @c_fp::text))`
)

// groupOrder is the ORDER BY of s, forwards or backwards.
func groupOrder(s GroupSort, back bool) string {
	switch {
	case s == GroupsByCount && back:
		return orderCountBack
	case s == GroupsByCount:
		return orderCount
	case s == GroupsByLastSeen && back:
		return orderLastSeenBack
	case s == GroupsByLastSeen:
		return orderLastSeen
	case s == GroupsByFirstSeen && back:
		return orderFirstSeenBack
	case s == GroupsByFirstSeen:
		return orderFirstSeen
	case back:
		return orderUnresolvedBack
	}
	return orderUnresolved
}

// groupKeyset is the condition on ranked groups that keeps those after
// (or, back, before) c in order s, its arguments set in args.
func groupKeyset(s GroupSort, c GroupCursor, back bool, args pgx.NamedArgs) string {
	args["c_fp"] = c.Fingerprint
	switch s {
	case GroupsByCount:
		args["c_n"] = c.N
		return either(back, beforeCount, afterCount)
	case GroupsByLastSeen, GroupsByFirstSeen:
		col, at := "last_seen", c.LastSeen
		if s == GroupsByFirstSeen {
			col, at = "first_seen", c.FirstSeen
		}
		args["c_at"] = at
		return fmt.Sprintf(either(back, beforeTime, afterTime), col)
	}
	args["c_unresolved"], args["c_n"] = c.Unresolved, c.N
	return either(back, beforeUnresolved, afterUnresolved)
}

func either(back bool, yes, no string) string {
	if back {
		return yes
	}
	return no
}

func (f *GroupFilter) sql() (string, pgx.NamedArgs, bool) {
	args, filters, ok := f.where()
	if !ok {
		return "", nil, false
	}
	var b strings.Builder
	b.WriteString(selectGroupsHead + filters + groupTail)
	if f.Unresolved {
		b.WriteString(groupUnresolved)
	}
	order := groupOrder(f.Sort, false)
	pageOrder, ahead, keep := order, "0::bigint", ""
	switch {
	case f.After != nil:
		after := groupKeyset(f.Sort, *f.After, false, args)
		ahead, keep = "count(*) FILTER (WHERE NOT "+after+") OVER ()", " AND "+after
	case f.Before != nil:
		before := groupKeyset(f.Sort, *f.Before, true, args)
		ahead, keep = "count(*) FILTER (WHERE "+before+") OVER ()", " AND "+before
		pageOrder = groupOrder(f.Sort, true)
	}
	b.WriteString(groupRanked + ahead + groupPage + keep)
	b.WriteString(pageOrder + groupLimit + filters + groupParts + f.sampleConds() + groupPartsEnd)
	b.WriteString(order) // output column names, the same in all three
	return b.String(), args, true
}

// sampleConds are the conditions on dead_letters of a row's sample when
// its recorded one was deleted: the filter's, on the dead letters the row
// counts. Its tenants are the row's (a.tenants: of the scope, not snoozed
// there, with the item type), and the error class is the fingerprint's.
func (f *GroupFilter) sampleConds() string {
	var conds string
	if f.ItemType != "" {
		conds += sampleItemType
	}
	if f.Unresolved {
		conds += sampleUnresolved
	}
	return conds
}

// countSQL counts the groups f selects, whatever its limit and page, and
// their unresolved dead letters. ok is false when f selects no tenant.
func (f *GroupFilter) countSQL() (string, pgx.NamedArgs, bool) {
	args, filters, ok := f.where()
	if !ok {
		return "", nil, false
	}
	sql := selectCountHead + filters + groupTail
	if f.Unresolved {
		sql += groupUnresolved
	}
	return sql + selectCountTail, args, true
}

// snoozedSQL counts the groups f leaves out because they are snoozed
// (SnoozedGroups): f's other conditions, only the snoozed counters, and
// every snoozed group, with unresolved dead letters or not (f.Unresolved
// dropped): what a page's link to the snoozed groups lists (web's
// state=snoozed), so that its count and its list agree. ok is false when f
// keeps snoozed groups, or selects no tenant.
func (f *GroupFilter) snoozedSQL() (string, pgx.NamedArgs, bool) {
	if f.Snoozed != SnoozedHidden {
		return "", nil, false
	}
	only := *f
	only.Snoozed, only.Unresolved = SnoozedOnly, false
	return only.countSQL()
}

// where is the conditions on dead_letter_groups f makes and their
// arguments; ok is false when f selects no tenant.
func (f *GroupFilter) where() (args pgx.NamedArgs, filters string, ok bool) {
	tenants := f.Tenants
	if f.Tenant != "" {
		tenants = nil
		for _, t := range f.Tenants {
			if t == f.Tenant {
				tenants = []string{t}
			}
		}
	}
	if len(tenants) == 0 {
		return nil, "", false
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultGroupLimit
	}
	args = pgx.NamedArgs{"tenants": tenants, "limit": limit, "offset": f.Offset, "group_types": GroupItemTypes}
	if f.ItemType != "" {
		filters += groupItemType
		args["item_type"] = f.ItemType
	}
	if f.ErrorClass != "" {
		filters += groupErrorClass
		args["error_class"] = string(f.ErrorClass)
	}
	if f.Fingerprint != "" {
		filters += groupOne
		args["fingerprint"] = f.Fingerprint
	}
	switch f.Snoozed {
	case SnoozedHidden:
		filters += groupNotSnoozed
	case SnoozedOnly:
		filters += groupSnoozed
	}
	return args, filters, true
}

// Groups returns the error groups f selects, in f.Sort order, how many it
// selects (past the last page too), and when f leaves snoozed groups out,
// how many there are (in the same round trip).
// It returns an invalid quarantine.Error for an unknown sort or a limit
// out of range.
func (s *Store) Groups(ctx context.Context, f GroupFilter) (GroupPage, error) {
	if !f.Sort.Valid() {
		return GroupPage{}, fmt.Errorf("list groups: %w", quarantine.Errorf(quarantine.EINVALID, "unknown order %q", f.Sort))
	}
	if f.Limit < 0 || f.Limit > MaxGroupLimit {
		return GroupPage{}, fmt.Errorf("list groups: %w", quarantine.Errorf(quarantine.EINVALID, "limit %d is not between 1 and %d", f.Limit, MaxGroupLimit))
	}
	if f.Offset < 0 || !f.Snoozed.Valid() || (f.After != nil && f.Before != nil) {
		return GroupPage{}, fmt.Errorf("list groups: %w", quarantine.Errorf(quarantine.EINVALID, "offset %d, snoozed %q or two cursors are not valid", f.Offset, f.Snoozed))
	}
	sql, args, ok := f.sql()
	if !ok {
		return GroupPage{}, nil
	}
	var page GroupPage
	b := &pgx.Batch{}
	b.Queue(sql, args).Query(func(rows pgx.Rows) error {
		var err error
		page.Groups, err = pgx.CollectRows(rows, scanGroup)
		return err
	})
	queueSnoozedCount(b, &f, &page.Snoozed)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return GroupPage{}, fmt.Errorf("list groups: %w", err)
	}
	if len(page.Groups) > 0 {
		page.Total, page.First = page.Groups[0].total, page.firstPlace(f)
	} else if f.Offset > 0 || f.After != nil || f.Before != nil {
		// Past the last page no row carries the window count: the groups
		// are counted on their own, then only (a page within the list
		// makes no second round trip).
		sql, args, _ := f.countSQL()
		var unresolved int64
		if err := s.pool.QueryRow(ctx, sql, args).Scan(&page.Total, &unresolved); err != nil {
			return GroupPage{}, fmt.Errorf("count groups: %w", err)
		}
	}
	return page, nil
}

// firstPlace is the place of the page's first group in the order (from 1):
// after the groups not after its cursor; the page read back from a cursor
// ends next to it, ahead of which its groups are the last; or after the
// groups its offset skipped.
func (p GroupPage) firstPlace(f GroupFilter) int {
	switch {
	case f.After != nil:
		return p.Groups[0].ahead + 1
	case f.Before != nil:
		return p.Groups[0].ahead - len(p.Groups) + 1
	}
	return f.Offset + 1
}

// queueSnoozedCount queues on b the count of the groups f leaves out as
// snoozed, read into out; nothing when f keeps them.
func queueSnoozedCount(b *pgx.Batch, f *GroupFilter, out *SnoozedGroups) {
	sql, args, ok := f.snoozedSQL()
	if !ok {
		return
	}
	b.Queue(sql, args).QueryRow(func(row pgx.Row) error {
		return row.Scan(&out.Groups, &out.Unresolved)
	})
}

func scanGroup(row pgx.CollectableRow) (Group, error) {
	var g Group
	var class, stack string
	err := row.Scan(&g.Fingerprint, &class, &g.N, &g.Unresolved, &g.FirstSeen, &g.LastSeen, &g.Tenants, &g.ItemTypes,
		&g.ItemTypeCount, &g.SampleID, &g.total, &g.ahead, &g.SampleError, &stack)
	g.ErrorClass, g.StackHead = ErrorClass(class), StackHead(stack, StackHeadLines)
	return g, err
}

// StackHead returns the first n non-blank lines of stack.
func StackHead(stack string, n int) string {
	var out []string
	for line := range strings.SplitSeq(stack, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, strings.TrimRight(line, "\r"))
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, "\n")
}
