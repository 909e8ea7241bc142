package dlq

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
)

// ListPageSize is how many dead letters a page of ListDeadLetters holds.
const ListPageSize = 50

// CountCap is where counting stops: ListPage.Count is exact up to CountCap,
// and beyond it ListPage.CountCapped is set instead.
const CountCap = 10_000

// MinTextSearch is the shortest word a ListFilter.Text must hold (a run
// of letters or digits, TextSearchable): the trigram index takes its
// trigrams from words of a search's text, and a text with no word of
// three has none to look up, so PostgreSQL reads the whole index (pg_trgm
// falls back to every entry): "...", "a.b.c", "%%%" or "ab" would read
// every dead letter of the scope in each window of the search.
const MinTextSearch = 3

// TextSearchable reports whether text holds a word the trigram index can
// look up: MinTextSearch letters or digits in a row. (Letters beyond ASCII
// count, as pg_trgm counts them on a server whose locale classifies them;
// on a server created with the C locale, such as `make run`'s, they form
// no trigram, and a search of them alone reads every row of its window.)
func TextSearchable(text string) bool {
	run := 0
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if run++; run >= MinTextSearch {
				return true
			}
			continue
		}
		run = 0
	}
	return false
}

// TextSearchPrefix is how much of an error message text search covers
// (the trigram index holds the first 1,024 characters).
const TextSearchPrefix = 1024

// UnresolvedStatuses count towards depth and age: the dead letter still
// needs someone.
var UnresolvedStatuses = []Status{StatusQuarantined, StatusReplayRequested, StatusReplaying, StatusReplayFailed, StatusNeedsReconciliation}

// AllStatuses lists every status in life order.
var AllStatuses = []Status{StatusQuarantined, StatusReplayRequested, StatusReplaying, StatusReplayed, StatusReplayFailed,
	StatusNeedsReconciliation, StatusDiscarded, StatusResolved}

// Unresolved reports whether s is one of UnresolvedStatuses.
func (s Status) Unresolved() bool { return slices.Contains(UnresolvedStatuses, s) }

// Closable reports whether a discard or resolve takes a dead letter of
// status s (the guard of closeDeadLetters): one not replayed, not being
// replayed and not closed yet.
func (s Status) Closable() bool { return s == StatusQuarantined || s == StatusReplayFailed }

// Valid reports whether s is one of AllStatuses.
func (s Status) Valid() bool { return slices.Contains(AllStatuses, s) }

// ListFilter selects dead letters for ListDeadLetters. Zero fields do not
// filter; Tenants is required.
type ListFilter struct {
	// Tenants is the caller's scope: only these tenants are read. An empty
	// scope reads nothing.
	Tenants []string
	// Tenant narrows the scope to one tenant (ignored when outside it: the
	// page is empty).
	Tenant     string
	ItemType   string
	ErrorClass ErrorClass
	// Statuses matches any of these.
	Statuses []Status
	// SubjectPrefix matches the start of the original subject.
	SubjectPrefix string
	// From and To bound dead_lettered_at: From <= t < To.
	From, To    time.Time
	Fingerprint string
	// MsgID, OperationID and CorrelationID match exactly.
	MsgID         string
	OperationID   string
	CorrelationID string
	// Text is a case-insensitive substring of the error message (its first
	// TextSearchPrefix characters), at least MinTextSearch characters long.
	Text string
	// Before and After are cursors from a ListPage (at most one): Before
	// returns the page of older dead letters (ListPage.Next), After the page
	// of newer ones (ListPage.Prev).
	Before, After string
}

// Validate reports the first broken rule as an invalid quarantine.Error.
func (f *ListFilter) Validate() error {
	switch {
	case f.Before != "" && f.After != "":
		return quarantine.Errorf(quarantine.EINVALID, "before and after cannot both be set")
	case f.Text != "" && !TextSearchable(f.Text):
		return quarantine.Errorf(quarantine.EINVALID, "text search needs a word of at least %d letters or digits", MinTextSearch)
	case !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To):
		return quarantine.Errorf(quarantine.EINVALID, "from must be before to")
	}
	for _, st := range f.Statuses {
		if !st.Valid() {
			return quarantine.Errorf(quarantine.EINVALID, "unknown status %q", st)
		}
	}
	for _, c := range []string{f.Before, f.After} {
		if c != "" {
			if _, err := DecodeCursor(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// ListItem is one row of the quarantine list: everything but the payload,
// the headers and the stack trace, with the error, the ids and the original
// subject cut to their first ListTextChars characters.
type ListItem struct {
	ID              int64      `db:"id"`
	Tenant          string     `db:"tenant"`
	ItemType        string     `db:"item_type"`
	OriginalSubject string     `db:"original_subject"`
	MsgID           string     `db:"msg_id"`
	OperationID     string     `db:"operation_id"`
	CorrelationID   string     `db:"correlation_id"`
	Error           string     `db:"error"`
	ErrorClass      ErrorClass `db:"error_class"`
	Attempts        *int32     `db:"attempts"`
	DeadLetteredAt  time.Time  `db:"dead_lettered_at"`
	PayloadSize     int32      `db:"payload_size"`
	Fingerprint     string     `db:"fingerprint"`
	Malformed       bool       `db:"malformed"`
	Status          Status     `db:"status"`
	// Generation counts the replays of its message that came back before it.
	Generation int32 `db:"generation"`
}

// ListPage is one page of ListDeadLetters, newest first.
type ListPage struct {
	Items []ListItem
	// Next is the cursor of the older page (ListFilter.Before), Prev of the
	// newer one (ListFilter.After); empty when there is none.
	Next, Prev string
	// Counted says whether Count is known: from the counters, or because
	// the first page holds the whole result. Otherwise CountDeadLetters
	// counts. Count is exact up to CountCap; CountCapped says there are more.
	Counted     bool
	Count       int64
	CountCapped bool
}

// Cursor is a position in the list: a dead letter's (dead_lettered_at, id).
type Cursor struct {
	At time.Time
	ID int64
}

// Encode returns the cursor as an opaque URL-safe string.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMicro(), 10) + ":" + strconv.FormatInt(c.ID, 10)))
}

// DecodeCursor reads a string made by Cursor.Encode; anything else is an
// invalid quarantine.Error.
func DecodeCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, quarantine.Errorf(quarantine.EINVALID, "page cursor is not valid")
	}
	at, id, ok := strings.Cut(string(raw), ":")
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n < 1 {
		return Cursor{}, quarantine.Errorf(quarantine.EINVALID, "page cursor is not valid")
	}
	// A time no dead letter can have (the partitions' range of years 1 to
	// 9999: PostgreSQL refuses some such times outright) is an edited link.
	if at := time.UnixMicro(us).UTC(); !at.Before(minTime) && !at.After(maxTime) {
		return Cursor{At: at, ID: n}, nil
	}
	return Cursor{}, quarantine.Errorf(quarantine.EINVALID, "page cursor is not valid")
}

// ListTextChars is how many characters of a producer's ids, subject and
// error a page that lists many messages reads (the list, the items of a
// replay request): pages stay small however big the messages are; a
// message's own page shows them whole.
const ListTextChars = 300

// listTextChars is ListTextChars as listColumns writes it (a constant
// query is spelled out).
const listTextChars = "300"

// The list reads these columns and never payload, headers or stack, and
// cuts the producer's texts to ListTextChars: pages stay small however big
// the messages are (TestListNeverReadsPayload); the detail page shows them whole.
const listColumns = `d.id, d.tenant, d.item_type, left(d.original_subject, ` + listTextChars + `) AS original_subject,
    left(d.msg_id, ` + listTextChars + `) AS msg_id, left(d.operation_id, ` + listTextChars + `) AS operation_id,
    left(d.correlation_id, ` + listTextChars + `) AS correlation_id, left(d.error, ` + listTextChars + `) AS error, d.error_class,
    d.attempts, d.dead_lettered_at, d.payload_size, d.fingerprint, d.malformed, d.status, d.generation`

// A page is found in two steps. First the keys: one backward index range
// scan per lane (a tenant of the scope, or one tenant/item type/class/status
// combination of the counters), each stopping after a page, merged. The
// lane's equality columns lead every list index, so each scan is already in
// (dead_lettered_at, id) order; PostgreSQL 15 cannot merge ordered scans over
// an IN list by itself. dead_letters is partitioned by dead_lettered_at, so
// within a lane the partitions are read newest first (an ordered Append) and
// the scan stops in the newest partition that completes the page; a cursor
// also bounds dead_lettered_at, which leaves the partitions past it out
// before they are opened. Then the rows of the page by primary key (id and
// time: one partition each).
const (
	// A page's row by its key, one partition each: a lateral subquery that
	// is not flattened (LIMIT), so the plan is a loop of primary key probes,
	// each pruned to one partition when it runs, whatever the estimates.
	rowByKey = `SELECT ` + listColumns + ` FROM dead_letters d
    WHERE d.id = page.id AND d.dead_lettered_at = page.dead_lettered_at LIMIT 1`
	keysByTenant = `
WITH page AS (
    SELECT k.dead_lettered_at, k.id
    FROM unnest(@tenants::text[]) AS p(tenant)
    CROSS JOIN LATERAL (
        SELECT d.dead_lettered_at, d.id FROM dead_letters d
        WHERE d.tenant = p.tenant`
	// The combinations are read in the same statement, so a page never
	// misses one that appeared since the snapshot the plan came from.
	keysByCombination = `
WITH page AS (
    SELECT k.dead_lettered_at, k.id
    FROM dead_letter_counts p
    CROSS JOIN LATERAL (
        SELECT d.dead_lettered_at, d.id FROM dead_letters d
        WHERE d.tenant = p.tenant` + comboLane
	// A combination's lane reads dead_letters_dims_time_idx, its four
	// columns pinned. The lane is planned once for values the planner does
	// not know (the counters' row), and in a day's partition it estimates
	// an equality with one by the column's distinct values in that day:
	// for a tenant of one item type, class and status a day, every row of
	// the day, so a page costs as many rows by either index, and it took
	// the narrower tenant-time one, testing each row: the tenant's whole
	// history for the rare combination the lanes are chosen for
	// (TestCombinationLanesReadTheirIndex). `status >= p.status` adds
	// nothing to the equality but a guess (a third of the rows) that
	// the dims index reads as a bound and the tenant-time one as a filter,
	// so the tenant-time index now reads three rows for each the dims index
	// does. A third keeps the lane's estimate near what it was, so the
	// lane stays an Append in time order that stops at a page
	// (TestCombinationLanesStopAtAPage); a one-value range instead (a guess
	// of 0.5 %) made the planner take whole combinations for less than a
	// page and sort them (`make bench-ui`'s list-tenant-type-class 1.9 to
	// 5.2 ms).
	comboLane = ` AND d.item_type = p.item_type
          AND d.error_class = p.error_class AND d.status = p.status AND d.status >= p.status`
	// The page size is a literal, not a parameter, so that a cached generic
	// plan still knows it reads a few rows and keeps the ordered index scans.
	laneOlderFirst = `
        ORDER BY d.dead_lettered_at DESC, d.id DESC LIMIT 51
    ) k`
	laneNewerFirst = `
        ORDER BY d.dead_lettered_at, d.id LIMIT 51
    ) k`
	groupLaneOlderFirst = `
        ORDER BY d.fingerprint DESC, d.dead_lettered_at DESC, d.id DESC LIMIT 51
    ) k`
	groupLaneNewerFirst = `
        ORDER BY d.fingerprint, d.dead_lettered_at, d.id LIMIT 51
    ) k`
	// Every combination of the scope: one whose first dead letters are not
	// yet folded into its count has its row (n 0) already.
	combosOf = `
    WHERE p.tenant = ANY(@tenants)`
	olderFirst = `
    ORDER BY k.dead_lettered_at DESC, k.id DESC LIMIT 51
)
SELECT r.* FROM page CROSS JOIN LATERAL (` + rowByKey + `) r
ORDER BY page.dead_lettered_at DESC, page.id DESC`
	newerFirst = `
    ORDER BY k.dead_lettered_at, k.id LIMIT 51
)
SELECT r.* FROM page CROSS JOIN LATERAL (` + rowByKey + `) r
ORDER BY page.dead_lettered_at, page.id`
	// A text search reads windows of time outward from where the page
	// starts (now, or its cursor): in each, every match, however the
	// planner finds them (OFFSET 0 keeps the page's ORDER BY and LIMIT out
	// of the scan's plan, so no plan bets on finding a page among the
	// newest rows and reads a whole day of others when it loses), then the
	// newest of them; the next window only when this one did not fill the
	// page. A window's work is bounded by the rows it holds, and the
	// windows grow, so a common word costs one small window and a rare one
	// a few trigram index probes.
	textWindowKeys = `
WITH page AS (
    SELECT m.dead_lettered_at, m.id FROM (
        SELECT d.dead_lettered_at, d.id FROM dead_letters d
        WHERE d.tenant = ANY(@tenants) AND d.dead_lettered_at >= @win_lo AND d.dead_lettered_at < @win_hi`
	textWindowOlderFirst = `
        OFFSET 0
    ) m
    ORDER BY m.dead_lettered_at DESC, m.id DESC LIMIT 51
)
SELECT r.* FROM page CROSS JOIN LATERAL (` + rowByKey + `) r
ORDER BY page.dead_lettered_at DESC, page.id DESC`
	textWindowNewerFirst = `
        OFFSET 0
    ) m
    ORDER BY m.dead_lettered_at, m.id LIMIT 51
)
SELECT r.* FROM page CROSS JOIN LATERAL (` + rowByKey + `) r
ORDER BY page.dead_lettered_at, page.id`
	textWindowExists = `SELECT EXISTS (SELECT 1 FROM dead_letters d
    WHERE d.tenant = ANY(@tenants) AND d.dead_lettered_at >= @win_lo AND d.dead_lettered_at < @win_hi`

	// Whether anything lies beyond an edge: the same lanes, one row each.
	existsByTenant = `
SELECT EXISTS (
    SELECT 1 FROM unnest(@tenants::text[]) AS p(tenant)
    CROSS JOIN LATERAL (
        SELECT 1 FROM dead_letters d
        WHERE d.tenant = p.tenant`
	existsByCombination = `
SELECT EXISTS (
    SELECT 1 FROM dead_letter_counts p
    CROSS JOIN LATERAL (
        SELECT 1 FROM dead_letters d
        WHERE d.tenant = p.tenant` + comboLane
	existsLane = ` LIMIT 1) k`
	existsEnd  = `)`

	// Counting stops at CountCap + 1 rows.
	countCapped = `SELECT count(*) FROM (SELECT 1 FROM dead_letters d WHERE d.tenant = ANY(@tenants)`
	countEnd    = ` LIMIT 10001) x`

	condItemType   = ` AND d.item_type = @item_type`
	condErrorClass = ` AND d.error_class = @error_class`
	condStatuses   = ` AND d.status = ANY(@statuses)`
	condSubject    = ` AND d.original_subject LIKE @subject_like`
	condFrom       = ` AND d.dead_lettered_at >= @from`
	condTo         = ` AND d.dead_lettered_at < @to`
	// A group's: a one-value range, and its tenant lanes ordered by the
	// fingerprint first (groupLaneOlderFirst), an order only
	// dead_letters_group_time_idx gives. The web pool's generic plan
	// estimated an equality with a parameter by the fingerprints' distinct
	// values (a few in a tenant that has few), took a rare group for half
	// the tenant, and read its page through the narrower tenant-time index,
	// testing the tenant's whole history
	// (TestGroupLanesReadTheirIndexInAGenericPlan). A range it guesses keeps
	// 0.5 % of the tenant (a custom plan reads the value's share from the
	// statistics): for a tenant of over about 10,000 rows that is more
	// than a page, and the lane is a Merge Append of the partitions' index
	// scans that stops at one; below it the planner may sort the group's
	// rows in the tenant instead, at most those 10,000.
	condFingerprint = ` AND d.fingerprint >= @fingerprint AND d.fingerprint <= @fingerprint`
	// Ids are looked up through indexes on their first LookupPrefix
	// characters (so any length can be indexed); the row decides.
	condMsgID       = ` AND left(d.msg_id, 256) = left(@msg_id, 256) AND d.msg_id = @msg_id`
	condOperationID = ` AND left(d.operation_id, 256) = left(@operation_id, 256) AND d.operation_id = @operation_id`
	condCorrelation = ` AND left(d.correlation_id, 256) = left(@correlation_id, 256) AND d.correlation_id = @correlation_id`
	// Same expression as dead_letters_error_trgm_idx.
	condText = ` AND left(d.error, 1024) ILIKE @text_like`
	// The time bound repeats the row comparison's first column in a form
	// partition pruning understands: partitions past the cursor are left
	// out when the plan starts.
	condOlder = ` AND d.dead_lettered_at <= @cursor_at AND (d.dead_lettered_at, d.id) < (@cursor_at, @cursor_id)`
	condNewer = ` AND d.dead_lettered_at >= @cursor_at AND (d.dead_lettered_at, d.id) > (@cursor_at, @cursor_id)`
	// Whether the page has neighbours on the side it came from: anything at
	// or past its cursor (the page's first row is the nearest one before it).
	condAtOrNewer = ` AND d.dead_lettered_at >= @cursor_at AND (d.dead_lettered_at, d.id) >= (@cursor_at, @cursor_id)`
	condAtOrOlder = ` AND d.dead_lettered_at <= @cursor_at AND (d.dead_lettered_at, d.id) <= (@cursor_at, @cursor_id)`

	// Exact counts, read with the page: the scope, what a filter on counted
	// columns matches, or an error group.
	sumCounts = `SELECT coalesce(sum(n), 0)::bigint FROM dead_letter_counts p
WHERE p.tenant = ANY(@tenants) AND p.n > 0`
	countsItemType   = ` AND p.item_type = @item_type`
	countsErrorClass = ` AND p.error_class = @error_class`
	countsStatuses   = ` AND p.status = ANY(@statuses)`
	countGroupRows   = `SELECT coalesce(sum(n), 0)::bigint FROM dead_letter_groups
WHERE tenant = ANY(@tenants) AND fingerprint = @fingerprint`
)

// listPlan is how ListDeadLetters reads a filter: its lanes, its other
// conditions and arguments, and how to count it exactly when the counters
// can.
type listPlan struct {
	combos     bool   // one lane per matching combination of the counters; else one per tenant
	comboConds string // which combinations (conditions on dead_letter_counts p)
	conds      string
	args       pgx.NamedArgs
	empty      bool   // nothing can match
	countSQL   string // exact count from the counters, read with the page; "" when they cannot count
	text       bool   // a text search: planned per query (its selectivity depends on the words), read by windows
	// subjects: a subject prefix read by one lane per (tenant, subject) it
	// starts (query_subject.go) instead of one per tenant.
	subjects bool
	// countKey narrows a count to the prefix's range of subjects (rows
	// through dead_letters_subject_time_idx); "" without a prefix.
	countKey string
	// subjectLong: the prefix is longer than the key (LookupPrefix
	// characters), so a subject's key in its range may not start with it.
	subjectLong bool
}

func (f *ListFilter) tenants() []string {
	if f.Tenant == "" {
		return slices.Clone(f.Tenants)
	}
	if slices.Contains(f.Tenants, f.Tenant) {
		return []string{f.Tenant}
	}
	return nil
}

// dims reports whether f filters on a column of dead_letter_counts.
func (f *ListFilter) dims() bool {
	return f.ItemType != "" || f.ErrorClass != "" || len(f.Statuses) > 0
}

// onlyDims reports whether the counters alone can count f.
func (f *ListFilter) onlyDims() bool {
	return f.SubjectPrefix == "" && f.From.IsZero() && f.To.IsZero() && f.Fingerprint == "" &&
		f.MsgID == "" && f.OperationID == "" && f.CorrelationID == "" && f.Text == ""
}

// matches reports whether counter row c is one f's item type, class and
// statuses select.
func (f *ListFilter) matches(c DepthCount) bool {
	return (f.ItemType == "" || c.ItemType == f.ItemType) && (f.ErrorClass == "" || c.ErrorClass == f.ErrorClass) &&
		(len(f.Statuses) == 0 || slices.Contains(f.Statuses, c.Status))
}

// plan decides how to read f, from the process's counters snapshot (no
// query). With a filter on item type, class or status it compares two
// ways: scanning each tenant's newest rows and skipping those that do not
// match (cheap when most match), or one index scan per matching combination
// of the counters (cheap when few combinations match). The snapshot gives
// both costs; it may be a second old, which moves the costs a little and
// never the result: the combinations are read with the page, and so is the
// count.
func (s *Store) plan(ctx context.Context, f *ListFilter) (listPlan, error) {
	p := listPlan{args: pgx.NamedArgs{}}
	tenants := f.tenants()
	if len(tenants) == 0 {
		p.empty = true
		return p, nil
	}
	p.args["tenants"] = tenants
	var b strings.Builder
	add := func(cond, name string, v any) {
		b.WriteString(cond)
		p.args[name] = v
	}
	if f.SubjectPrefix != "" {
		// condSubject joins the conditions with the plan's lanes
		// (subjectConds): a subject's lanes need it only for a prefix
		// longer than their key.
		p.args["subject_like"] = likeEscape(f.SubjectPrefix) + "%"
		if lo, hi, ok := subjectRange(f.SubjectPrefix); ok {
			p.args["subject_lo"], p.args["subject_hi"] = lo, hi
			p.countKey = condSubjectKey
			p.subjectLong = utf8.RuneCountInString(f.SubjectPrefix) > LookupPrefix
		}
	}
	if !f.From.IsZero() {
		add(condFrom, "from", f.From)
	}
	if !f.To.IsZero() {
		add(condTo, "to", f.To)
	}
	if f.Fingerprint != "" {
		add(condFingerprint, "fingerprint", f.Fingerprint)
	}
	if f.MsgID != "" {
		add(condMsgID, "msg_id", f.MsgID)
	}
	if f.OperationID != "" {
		add(condOperationID, "operation_id", f.OperationID)
	}
	if f.CorrelationID != "" {
		add(condCorrelation, "correlation_id", f.CorrelationID)
	}
	if f.Text != "" {
		add(condText, "text_like", "%"+likeEscape(f.Text)+"%")
		p.text = true
	}
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return p, err
	}
	var total, matched, comboCost int64 // rows in scope, rows f's dims match, their cost by combination
	for _, c := range snap.Combos {
		if !slices.Contains(tenants, c.Tenant) {
			continue
		}
		total += c.N
		if f.matches(c) {
			matched += c.N
			comboCost += min(c.N, ListPageSize+1)
		}
	}
	if p.text {
		// Every condition in each window's statement; the counters cannot
		// count words.
		if f.ItemType != "" {
			add(condItemType, "item_type", f.ItemType)
		}
		if f.ErrorClass != "" {
			add(condErrorClass, "error_class", string(f.ErrorClass))
		}
		if len(f.Statuses) > 0 {
			add(condStatuses, "statuses", statusStrings(f.Statuses))
		}
		p.conds = b.String() + p.subjectConds(f)
		return p, nil
	}
	if !f.dims() {
		p.subjects = f.bySubject(&p)
		p.conds = b.String() + p.subjectConds(f)
		switch {
		case f.onlyDims():
			p.countSQL = sumCounts
		case f.Fingerprint != "" && f.onlyGroup():
			p.countSQL = countGroupRows
		}
		return p, nil
	}

	var dims string
	if f.ItemType != "" {
		dims += countsItemType
		p.args["item_type"] = f.ItemType
	}
	if f.ErrorClass != "" {
		dims += countsErrorClass
		p.args["error_class"] = string(f.ErrorClass)
	}
	if len(f.Statuses) > 0 {
		dims += countsStatuses
		p.args["statuses"] = statusStrings(f.Statuses)
	}
	if f.onlyDims() {
		p.countSQL = sumCounts + dims
	}
	// Scanning a tenant's rows reads about a page / selectivity rows, each
	// from the heap to test the filter; a combination's index scan reads at
	// most a page of index-only entries. Heap reads count double. With
	// nothing matching in the snapshot, the combinations (read with the
	// page) are the cheap way to find nothing, or what arrived since.
	if matched > 0 && 2*(ListPageSize+1)*total/matched <= comboCost {
		if f.ItemType != "" {
			b.WriteString(condItemType)
		}
		if f.ErrorClass != "" {
			b.WriteString(condErrorClass)
		}
		if len(f.Statuses) > 0 {
			b.WriteString(condStatuses)
		}
	} else {
		p.combos, p.comboConds = true, dims
	}
	p.subjects = f.bySubject(&p)
	p.conds = b.String() + p.subjectConds(f)
	return p, nil
}

// subjectConds is f's subject prefix as a condition of the plan's every
// lane: none with the subjects' lanes (query_subject.go), which put it
// where each lane needs it.
func (p *listPlan) subjectConds(f *ListFilter) string {
	if f.SubjectPrefix == "" || p.subjects {
		return ""
	}
	return condSubject
}

// bySubject reports whether plan p reads f's subject prefix by its
// subjects' lanes (query_subject.go): when it would read one lane per
// tenant, with no condition of its own that an index finds (a group's
// lanes read dead_letters_group_time_idx, ids their hash indexes), and
// the prefix has a range of keys. The combinations' lanes keep the
// prefix as a filter: they were chosen because the item type, class or
// status match few rows, which bounds what they read.
func (f *ListFilter) bySubject(p *listPlan) bool {
	return f.SubjectPrefix != "" && p.countKey != "" && !p.combos && !p.text &&
		f.Fingerprint == "" && f.MsgID == "" && f.OperationID == "" && f.CorrelationID == ""
}

// onlyGroup reports whether the group counters can count f: a fingerprint,
// maybe unresolved statuses, and nothing else.
func (f *ListFilter) onlyGroup() bool {
	g := *f
	g.Fingerprint = ""
	return g.onlyDims()
}

func scanDepth(row pgx.CollectableRow) (DepthCount, error) {
	var d DepthCount
	var c, st string
	err := row.Scan(&d.Tenant, &d.ItemType, &c, &st, &d.N)
	d.ErrorClass, d.Status = ErrorClass(c), Status(st)
	return d, err
}

func statusStrings(ss []Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// likeEscape makes s match itself in a LIKE pattern.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Text search windows: the first holds about textWindowRows dead letters
// at the table's average rate (the partitions' sizes), each next one is
// textWindowGrowth times longer, and the last reaches the end of time.
// None grows past textWindowMax: past it the last window takes the rest
// (a cursor of the year 1000 is centuries from any row, and a duration
// multiplied past 292 years wraps round).
const (
	textWindowRows   = 20_000
	textWindowGrowth = 8
	textWindowMin    = time.Minute
	textWindowMax    = 100 * 365 * 24 * time.Hour
)

// textWindows returns the windows of dead_lettered_at a text search reads,
// the first holding about first dead letters, outward from from: older
// ones for a page of older rows, newer ones for a page of newer rows.
// Together they cover all time on that side, in at most a dozen windows
// whatever from is (a page cursor is a link anyone can edit); how much the
// last of them holds depends on where they start, which windowStart keeps
// within the stored range.
func textWindows(parts []Partition, at, from time.Time, newer bool, first int64) []span {
	var rows int64
	oldest := at
	for _, pt := range parts {
		if pt.MinID > 0 {
			rows += pt.MaxID - pt.MinID + 1
			if pt.Day.Before(oldest) {
				oldest = pt.Day
			}
		}
	}
	w := time.Hour
	if rows > 0 && at.After(oldest) {
		w = max(textWindowMin, time.Duration(float64(at.Sub(oldest))*float64(first)/float64(rows)))
	}
	w = min(w, textWindowMax)
	var out []span
	if newer {
		lo, hi := minTime, from.Add(w)
		for hi.Before(at.Add(24 * time.Hour)) {
			out = append(out, span{lo, hi})
			if lo = hi; w > textWindowMax/textWindowGrowth {
				break
			}
			w *= textWindowGrowth
			hi = from.Add(w)
		}
		return append(out, span{lo, maxTime})
	}
	lo, hi := from.Add(-w), maxTime
	for lo.After(oldest) {
		out = append(out, span{lo, hi})
		if hi = lo; w > textWindowMax/textWindowGrowth {
			break
		}
		w *= textWindowGrowth
		lo = from.Add(-w)
	}
	return append(out, span{minTime, hi})
}

// windowStart is where a text search's windows start from a cursor at
// from: from itself, moved into the range the partitions' rows span when
// it lies past that range on the side the search goes: a page of older
// rows from after now (or, when rows are dated ahead, the start of the
// newest day holding some) starts there, a page of newer rows from before
// the start of the oldest day holding rows starts there.
// A page cursor is a link anyone can edit, and DecodeCursor takes any
// time a partition could hold: from 9999-12-30 going older (or the year
// 1 going newer) the windows grew through empty centuries, a dozen of
// them, and the last, reaching back to the year 1, held every match of
// the scope, read in one statement for a page the first window from now
// finds (TestRevList22EditedCursorMakesTextSearchReadEveryMatch). Only
// where the windows lie moves: the cursor's condition is in every
// window's statement and the windows still cover all time on their side,
// so the page is the same, for an honest cursor (one of a stored row,
// within the range) as for an edited one. A cursor past the range on the
// other side needs nothing: its first window is the last (textWindows),
// and the cursor's time bound leaves every partition out of it.
func windowStart(parts []Partition, at, from time.Time, newer bool) time.Time {
	oldest, newest := at, at
	for _, pt := range parts {
		if pt.MinID > 0 {
			if pt.Day.Before(oldest) {
				oldest = pt.Day
			}
			if pt.Day.After(newest) {
				newest = pt.Day // rows dated ahead; its first window reaches the end of time
			}
		}
	}
	switch {
	case newer && from.Before(oldest):
		return oldest
	case !newer && from.After(newest):
		return newest
	}
	return from
}

// firstWindowRows is how many dead letters a text search's first window
// holds.
func (s *Store) firstWindowRows() int64 {
	if s.windowRows > 0 {
		return s.windowRows
	}
	return textWindowRows
}

// span is a range of dead_lettered_at, [lo, hi).
type span struct{ lo, hi time.Time }

// windows returns the windows a text search reads (textWindows), from
// its cursor (windowStart: within the stored range) or, without one, from
// now, on the side the page goes.
func (s *Store) windows(ctx context.Context, p *listPlan, newer bool) ([]span, error) {
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	from := snap.At
	if at, ok := p.args["cursor_at"].(time.Time); ok {
		from = windowStart(snap.Partitions, snap.At, at, newer)
	}
	ws := textWindows(snap.Partitions, snap.At, from, newer, s.firstWindowRows())
	// The day the first window ends in (where the page starts going
	// older, or where it reaches going newer), when its minute arrivals
	// are still kept (MinuteArrivalsKept): yesterday or today.
	edge := ws[0].lo
	if newer {
		edge = ws[0].hi.Add(-time.Nanosecond)
	}
	day := Day(edge)
	if len(ws) == 1 || day.Before(Day(snap.At).AddDate(0, 0, -1)) || day.After(snap.At) {
		return ws, nil
	}
	rows, err := s.pool.Query(ctx, dayArrivals, p.args["tenants"], day, day.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	minutes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[minuteCount])
	if err != nil {
		return nil, err
	}
	return wholeDay(ws, newer, from, day, minutes), nil
}

// dayArrivals is how many dead letters of the scope each minute of a day
// holds (dead_lettered_at's minute, folded every FoldEvery).
const dayArrivals = `SELECT minute, sum(n)::bigint FROM dead_letter_arrivals_minute
WHERE tenant = ANY($1) AND minute >= $2 AND minute < $3 GROUP BY minute`

// minuteCount is a minute's dead letters.
type minuteCount struct {
	Minute time.Time
	N      int64
}

// wholeDay widens the text search windows ws (textWindows) that hold at
// least half of day's dead letters (minutes, that day's arrivals) to the
// whole day on the side the search goes: the rest of the day, older ones
// for a page of older rows, newer ones for newer. Such a window's
// statement reads the day's partition through the trigram index alone
// (the planner leaves out the time index when the window holds most of
// the partition: every match of the day, in and out of the window), so a
// window that did not fill the page was followed by another reading the
// same matches again: after a flood of dead letters without the words
// (on-call's moment to search), the search read today's matches two or
// three times. Widened, it reads them once, and costs at most twice what
// reading the window by time would have. The windows after it start
// where the day ends; those within it are gone.
func wholeDay(ws []span, newer bool, from, day time.Time, minutes []minuteCount) []span {
	end := day.Add(24 * time.Hour)
	var total int64
	for _, m := range minutes {
		total += m.N
	}
	if total == 0 {
		return ws
	}
	in := func(w span) int64 { // dead letters of the day the window reads (from the cursor, or now, on)
		lo, hi := w.lo, w.hi
		if newer && lo.Before(from) {
			lo = from
		}
		if !newer && hi.After(from) {
			hi = from
		}
		var n int64
		for _, m := range minutes {
			if !m.Minute.Before(lo.Truncate(time.Minute)) && m.Minute.Before(hi) {
				n += m.N
			}
		}
		return n
	}
	for i, w := range ws {
		// The window's edge on the side the search goes, that edge moved
		// to the day's end on that side, and which later windows keep what
		// lies past the day.
		edge, widened := w.lo, span{day, w.hi}
		if newer {
			edge, widened = w.hi, span{w.lo, end}
		}
		if !edge.After(day) || !edge.Before(end) || 2*in(w) < total {
			continue // not ending inside the day, or holding less than half of it
		}
		out := append(slices.Clone(ws[:i]), widened)
		for _, v := range ws[i+1:] {
			switch {
			case newer && v.hi.After(end):
				if v.lo.Before(end) {
					v.lo = end
				}
				out = append(out, v)
			case !newer && v.lo.Before(day):
				if v.hi.After(day) {
					v.hi = day
				}
				out = append(out, v)
			}
		}
		return out
	}
	return ws
}

// textSearch reads a text search's page (limit rows) or, with exists, one
// row past an edge, window by window from the cursor or now, until it has
// enough: keysSQL and existsSQL of each window in turn.
func (s *Store) textSearch(ctx context.Context, p *listPlan, newer, exists bool, limit int) ([]ListItem, bool, error) {
	windows, err := s.windows(ctx, p, newer)
	if err != nil {
		return nil, false, err
	}
	var items []ListItem
	for _, w := range windows {
		p.args["win_lo"], p.args["win_hi"] = w.lo, w.hi
		if exists {
			var found bool
			if err := s.pool.QueryRow(ctx, p.existsSQL(newer), pgx.QueryExecModeSimpleProtocol, p.args).Scan(&found); err != nil || found {
				return nil, found, err
			}
			continue
		}
		rows, err := s.pool.Query(ctx, p.keysSQL(newer), pgx.QueryExecModeSimpleProtocol, p.args)
		if err != nil {
			return nil, false, err
		}
		more, err := pgx.CollectRows(rows, pgx.RowToStructByName[ListItem])
		if err != nil {
			return nil, false, err
		}
		if items = append(items, more...); len(items) >= limit {
			return items[:limit], false, nil
		}
	}
	return items, false, nil
}

// keysSQL is the statement of one page's keys and rows.
func (p *listPlan) keysSQL(newer bool) string {
	cursor, lane, tail := condOlder, laneOlderFirst, olderFirst
	if newer {
		cursor, lane, tail = condNewer, laneNewerFirst, newerFirst
	}
	if _, ok := p.args["cursor_at"]; !ok {
		cursor = ""
	}
	switch {
	case p.combos:
		return keysByCombination + p.conds + cursor + lane + combosOf + p.comboConds + tail
	case p.subjects:
		return p.subjectLanesSQL(newer, keysBySubjectHead, p.conds+cursor, laneLimit, keysBySubjectEnd+tail)
	case p.text: // one window's (textSearch sets win_lo and win_hi)
		if newer {
			return textWindowKeys + p.conds + cursor + textWindowNewerFirst
		}
		return textWindowKeys + p.conds + cursor + textWindowOlderFirst
	}
	if _, group := p.args["fingerprint"]; group { // a tenant's lane reads the group's index in its order
		lane = groupLaneOlderFirst
		if newer {
			lane = groupLaneNewerFirst
		}
	}
	return keysByTenant + p.conds + cursor + lane + tail
}

// existsSQL is whether anything lies at or past the cursor on the side
// the page came from (newer for a page of older rows).
func (p *listPlan) existsSQL(newer bool) string {
	cursor := condAtOrOlder
	if newer {
		cursor = condAtOrNewer
	}
	switch {
	case p.combos:
		return existsByCombination + p.conds + cursor + existsLane + combosOf + p.comboConds + existsEnd
	case p.subjects:
		return p.subjectLanesSQL(newer, existsBySubjectHead, p.conds+cursor, existsLimit, existsBySubjectEnd)
	case p.text: // one window's (textSearch sets win_lo and win_hi)
		return textWindowExists + p.conds + cursor + `)`
	}
	return existsByTenant + p.conds + cursor + existsLane + existsEnd
}

// ListDeadLetters returns one page of the dead letters f selects, newest
// first, paged by keyset (dead_lettered_at, id), never OFFSET, with their
// count when the counters can give it exactly (see ListPage.Counted). It
// never reads payloads, headers or stack traces. The page, whether it has
// neighbours and its count are read in one round trip (a text search, which
// is planned with its words, takes a few). It returns an error wrapping an
// invalid quarantine.Error for an invalid f.
func (s *Store) ListDeadLetters(ctx context.Context, f ListFilter) (ListPage, error) {
	if err := f.Validate(); err != nil {
		return ListPage{}, fmt.Errorf("list dead letters: %w", err)
	}
	p, err := s.plan(ctx, &f)
	if err != nil {
		return ListPage{}, fmt.Errorf("list dead letters: %w", err)
	}
	if p.empty {
		return ListPage{Counted: true}, nil
	}
	newer := f.After != ""
	var cur Cursor
	if c := f.Before + f.After; c != "" {
		cur, _ = DecodeCursor(c) // validated
		p.args["cursor_at"], p.args["cursor_id"] = cur.At, cur.ID
	}
	var (
		items   []ListItem
		other   bool // anything past the page on the side it came from
		count   int64
		counted = p.countSQL != ""
	)
	collectItems := func(rows pgx.Rows) error {
		var err error
		items, err = pgx.CollectRows(rows, pgx.RowToStructByName[ListItem])
		return err
	}
	if p.text {
		// Planned with its words (simple queries: never a cached generic
		// plan, whatever the pool's plan_cache_mode), window by window, so
		// no batch.
		var err error
		items, _, err = s.textSearch(ctx, &p, newer, false, ListPageSize+1)
		if err == nil && cur.ID != 0 {
			_, other, err = s.textSearch(ctx, &p, !newer, true, 1)
		}
		if err == nil && counted {
			err = s.pool.QueryRow(ctx, p.countSQL, p.args).Scan(&count)
		}
		if err != nil {
			return ListPage{}, fmt.Errorf("list dead letters: %w", err)
		}
	} else {
		b := &pgx.Batch{}
		b.Queue(p.keysSQL(newer), p.args).Query(collectItems)
		if cur.ID != 0 {
			b.Queue(p.existsSQL(!newer), p.args).QueryRow(func(row pgx.Row) error { return row.Scan(&other) })
		}
		if counted {
			b.Queue(p.countSQL, p.args).QueryRow(func(row pgx.Row) error { return row.Scan(&count) })
		}
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return ListPage{}, fmt.Errorf("list dead letters: %w", err)
		}
	}
	more := len(items) > ListPageSize
	if more {
		items = items[:ListPageSize]
	}
	var page ListPage
	if newer {
		slices.Reverse(items)
	}
	page.Items = items
	hasNext, hasPrev := more, other
	if newer {
		hasNext, hasPrev = other, more
	}
	if hasNext {
		if len(items) > 0 {
			page.Next = Cursor{items[len(items)-1].DeadLetteredAt, items[len(items)-1].ID}.Encode()
		} else {
			page.Next = cur.Encode()
		}
	}
	if hasPrev {
		if len(items) > 0 {
			page.Prev = Cursor{items[0].DeadLetteredAt, items[0].ID}.Encode()
		} else {
			page.Prev = cur.Encode()
		}
	}

	switch {
	case counted:
		page.Count, page.Counted = count, true
	case cur.ID == 0 && !more:
		page.Count, page.Counted = int64(len(items)), true // the whole result is on this page
	}
	if page.Count > CountCap {
		page.Count, page.CountCapped = CountCap, true
	}
	return page, nil
}

// CountDeadLetters returns how many dead letters f selects (its cursors are
// ignored), exact up to CountCap; capped reports more than CountCap. From
// the counters when they can say, else by counting at most CountCap + 1
// rows: a text search common in a large table takes tens of milliseconds,
// which is why ListDeadLetters leaves such counts to this method.
func (s *Store) CountDeadLetters(ctx context.Context, f ListFilter) (n int64, capped bool, err error) {
	f.Before, f.After = "", ""
	if err := f.Validate(); err != nil {
		return 0, false, fmt.Errorf("count dead letters: %w", err)
	}
	p, err := s.plan(ctx, &f)
	if err != nil {
		return 0, false, fmt.Errorf("count dead letters: %w", err)
	}
	switch {
	case p.empty:
		return 0, false, nil
	case p.countSQL != "":
		if err := s.pool.QueryRow(ctx, p.countSQL, p.args).Scan(&n); err != nil {
			return 0, false, fmt.Errorf("count dead letters: %w", err)
		}
	default:
		conds := p.countKey + p.countConds(&f)
		if p.subjects {
			conds += condSubject // the lanes' own, which a count has not
		}
		rows, err := s.query(ctx, &p, countCapped+conds+countEnd)
		if err != nil {
			return 0, false, fmt.Errorf("count dead letters: %w", err)
		}
		if n, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64]); err != nil {
			return 0, false, fmt.Errorf("count dead letters: %w", err)
		}
	}
	if n > CountCap {
		return CountCap, true, nil
	}
	return n, false, nil
}

// query runs sql with the plan's arguments. A text search is planned with
// its words (a simple query, never a cached generic plan): whether the
// trigram index or the newest-first scan is faster depends on how common
// they are.
func (s *Store) query(ctx context.Context, p *listPlan, sql string) (pgx.Rows, error) {
	if p.text {
		return s.pool.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol, p.args)
	}
	return s.pool.Query(ctx, sql, p.args)
}

// countConds are the conditions of the count query: the plan's, plus the
// item type, class and status that the combinations stood for.
func (p *listPlan) countConds(f *ListFilter) string {
	if !p.combos {
		return p.conds
	}
	var b strings.Builder
	b.WriteString(p.conds)
	if f.ItemType != "" {
		b.WriteString(condItemType)
	}
	if f.ErrorClass != "" {
		b.WriteString(condErrorClass)
	}
	if len(f.Statuses) > 0 {
		b.WriteString(condStatuses)
	}
	return b.String()
}

// ItemTypeChoices is how many item types Facets offers at most. Item
// types are producer input (any subject tokens): a scope may have
// thousands, and a filter that lists every one grows each page that shows
// it (as MetricItemTypes bounds the metrics' series).
const ItemTypeChoices = 200

// Facets are the values present in a scope, for filter choices.
type Facets struct {
	// ItemTypes are the scope's item types, sorted; when it has more than
	// ItemTypeChoices (ItemTypeCount), the ItemTypeChoices with the most
	// dead letters stored.
	ItemTypes     []string
	ItemTypeCount int
	ErrorClasses  []string
}

// Facets returns the item types and error classes of the dead letters
// stored in tenants, sorted, from the process's counters snapshot (up to a
// second old: a new item type shows in the choices within a second); of
// the item types, at most ItemTypeChoices.
func (s *Store) Facets(ctx context.Context, tenants []string) (Facets, error) {
	if len(tenants) == 0 {
		return Facets{}, nil
	}
	snap, err := s.counters.Snapshot(ctx)
	if err != nil {
		return Facets{}, fmt.Errorf("read facets: %w", err)
	}
	return snap.Facets(tenants), nil
}
