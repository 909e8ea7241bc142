package dlq

import (
	"fmt"
	"unicode/utf8"
)

// SubjectLanes is how many distinct subjects of a tenant a subject prefix
// may start for the list to read them one lane each (see below); it is
// spelt out in subjectKeys and subjectLanes.
const SubjectLanes = 32

// A subject prefix (ListFilter.SubjectPrefix) had no index: each tenant's
// lane read its newest dead letters and tested every subject, so a prefix
// that few of them start with read the tenant's whole history for a page
// (TestRevList23SubjectPrefixReadsEveryDeadLetter). It is now read through
// dead_letters_subject_time_idx, (tenant, left(original_subject, 256)
// text_pattern_ops, dead_lettered_at, id), migration 0065, in the page's
// own statement (one round trip, as before):
//
//  1. subject_narrow: the tenants of the scope whose first 400 dead
//     letters (newest first, or from the cursor on the page's side) hold
//     fewer than a page of the prefix. The others have it common: their own
//     lane, as before, finds a page within those 400.
//  2. subject_keys walks, in each such tenant, the distinct keys (a
//     subject's first 256 characters) in the prefix's range, the next key
//     after the last one each step (a loose index scan: one descent per
//     partition a step), stopping at SubjectLanes + 1.
//  3. A tenant with at most SubjectLanes keys gets one lane per key:
//     equality on the key leaves that subject's dead letters in
//     (dead_lettered_at, id) order, so each lane is a backward range scan
//     that stops after a page, as the group filter's lanes on
//     dead_letters_group_time_idx are, and they merge as the tenants' do.
//     A tenant with none reads nothing more.
//  4. A tenant with more keys has its own lane (tenant_lanes). Such a
//     prefix starts many subjects and is rare in the tenant's newest rows:
//     its lane reads a page divided by the prefix's share of the rows,
//     which is not bounded (many subjects of a producer that puts ids in
//     them, all rare); the walk's SubjectLanes + 1 steps bound what is
//     spent finding that out. Left as it is: reading every subject's lane
//     would cost SubjectLanes pages and more.
//
// So a rare prefix costs the 400 rows of each tenant, a few descents per
// partition and a page per subject it starts; a common one the 400 rows
// and a page of the tenant's newest. The 400: eight pages, enough to tell
// a prefix common in the newest rows (an eighth of them or more) from a
// rare one, for about a third of a millisecond a tenant.
//
// The key's range is [lo, hi) in byte order (text_pattern_ops: the same
// whatever the database's collation), computed here (subjectRange), not
// by LIKE: the web pool plans each statement once per connection
// (generic plans), and a LIKE pattern given as a parameter cannot become
// an index range there. For a prefix of at most LookupPrefix characters a
// key in the range starts with it, and so does its subject; a longer
// prefix is checked on each row of the lanes too (the whole subject
// decides).
const (
	keyOfSubject = `left(d.original_subject, 256)`
	// %[1]s below: the time bounds of the statement (from, to, and its
	// cursor's side), which leave out the partitions past them and the
	// subjects found only there; %[2]s: the order the statement reads in.
	//
	// The tenants whose newest rows (of the statement's side of its
	// cursor) hold fewer than a page of the prefix's dead letters in
	// their first 400: those whose subjects are walked.
	subjectNarrow = `
WITH RECURSIVE subject_narrow(tenant) AS (
    SELECT p.tenant FROM unnest(@tenants::text[]) AS p(tenant)
    WHERE (SELECT count(*) FROM (
        SELECT d.original_subject FROM dead_letters d
        WHERE d.tenant = p.tenant%[1]s%[2]s LIMIT 400
    ) x WHERE x.original_subject LIKE @subject_like) < 51
),`
	// The walk: each step the next key in the prefix's range, one index
	// descent per partition. It stops at the key after SubjectLanes (spelt
	// out: a constant query), which says "more".
	subjectKeys = `
subject_keys(tenant, subject, n) AS (
    SELECT p.tenant, s.subject, 1 FROM subject_narrow p
    CROSS JOIN LATERAL (
        SELECT ` + keyOfSubject + ` AS subject FROM dead_letters d
        WHERE d.tenant = p.tenant AND ` + keyOfSubject + ` ~>=~ @subject_lo AND ` + keyOfSubject + ` ~<~ @subject_hi%[1]s
        ORDER BY ` + keyOfSubject + ` USING ~<~ LIMIT 1
    ) s
    UNION ALL
    SELECT k.tenant, s.subject, k.n + 1 FROM subject_keys k
    CROSS JOIN LATERAL (
        SELECT ` + keyOfSubject + ` AS subject FROM dead_letters d
        WHERE d.tenant = k.tenant AND ` + keyOfSubject + ` ~>~ k.subject AND ` + keyOfSubject + ` ~<~ @subject_hi%[1]s
        ORDER BY ` + keyOfSubject + ` USING ~<~ LIMIT 1
    ) s
    WHERE k.n <= 32
),`
	// A lane per subject of a tenant with at most SubjectLanes; a lane of
	// its own for each other tenant of the scope but those walked and
	// found to have none.
	subjectLanes = `
subject_lanes(tenant, subject) AS (
    SELECT k.tenant, k.subject FROM subject_keys k
    WHERE NOT EXISTS (SELECT 1 FROM subject_keys b WHERE b.tenant = k.tenant AND b.n > 32)
), tenant_lanes(tenant) AS (
    SELECT k.tenant FROM subject_keys k WHERE k.n > 32
    UNION ALL
    SELECT p.tenant FROM unnest(@tenants::text[]) AS p(tenant)
    WHERE p.tenant NOT IN (SELECT n.tenant FROM subject_narrow n)
)`
	// The lanes, each a (dead_lettered_at, id) in the statement's order. A
	// subject's: the key's one-value range, so the subject index holds its
	// rows in order. Not equality: the planner estimates an equality with a
	// value it does not know (the walk's) by the key's distinct values, a
	// few, so it takes each subject for a large share of the tenant and
	// would rather walk the narrower tenant-time index in order, testing
	// each row, until a page matches: the tenant's whole history for a rare
	// subject (TestRevList23SubjectPrefixReadsEveryDeadLetter, with the
	// table analyzed). A range it guesses keeps 0.5 %, and the order by the
	// key first (%[5]s, no change to the rows' order: the range is one
	// key) is one the tenant-time index cannot give without reading and
	// sorting them all. A tenant's: its rows newest first (or oldest, going
	// newer), each subject tested. The test is wrapped in coalesce for the
	// planner: a generic plan cannot know how many rows a LIKE pattern
	// given as a parameter keeps and guesses 0.5 %, so it would rather
	// read all the tenant's rows and sort them than walk its index in
	// order for a page it thinks is not there; coalesce(...) it guesses
	// keeps half, which is what a tenant lane is for (the prefix is
	// common in the tenant's newest rows, or starts many subjects).
	// %[1]s: the lane's conditions; %[2]s: its order; %[3]s: its LIMIT;
	// %[4]s: the subject's whole check, for a prefix longer than the key;
	// %[5]s: a subject lane's order.
	subjectLaneUnion = `
    SELECT k.dead_lettered_at, k.id FROM subject_lanes p
    CROSS JOIN LATERAL (
        SELECT d.dead_lettered_at, d.id FROM dead_letters d
        WHERE d.tenant = p.tenant AND ` + keyOfSubject + ` ~>=~ p.subject AND ` + keyOfSubject + ` ~<=~ p.subject%[1]s%[4]s%[5]s%[3]s
    ) k
    UNION ALL
    SELECT k.dead_lettered_at, k.id FROM tenant_lanes p
    CROSS JOIN LATERAL (
        SELECT d.dead_lettered_at, d.id FROM dead_letters d
        WHERE d.tenant = p.tenant AND coalesce(d.original_subject LIKE @subject_like, false)%[1]s%[2]s%[3]s
    ) k`
	laneOlder = `
        ORDER BY d.dead_lettered_at DESC, d.id DESC`
	laneNewer = `
        ORDER BY d.dead_lettered_at, d.id`
	keyLaneOlder = `
        ORDER BY ` + keyOfSubject + ` USING ~>~, d.dead_lettered_at DESC, d.id DESC`
	keyLaneNewer = `
        ORDER BY ` + keyOfSubject + ` USING ~<~, d.dead_lettered_at, d.id`
	laneLimit     = ` LIMIT 51`
	existsLimit   = ` LIMIT 1`
	matchingLimit = ` LIMIT @limit`

	keysBySubjectHead = `,
page AS (
    SELECT k.dead_lettered_at, k.id FROM (`
	keysBySubjectEnd = `
    ) k`
	existsBySubjectHead = `
SELECT EXISTS (`
	existsBySubjectEnd = `
)`
	matchingBySubjectHead = `
SELECT k.id FROM (`
	matchingBySubjectEnd = `
) k
ORDER BY k.dead_lettered_at DESC, k.id DESC LIMIT @limit`

	// The prefix's range of the key, for a count: its rows through the
	// index, at most 10,001 of them, rather than the scope's newest first
	// until 10,001 match.
	condSubjectKey = ` AND ` + keyOfSubject + ` ~>=~ @subject_lo AND ` + keyOfSubject + ` ~<~ @subject_hi`
)

// subjectRange returns the range [lo, hi) of keys (a subject's first
// LookupPrefix characters, compared byte by byte) that the subjects
// starting with prefix have: lo is the prefix's first LookupPrefix
// characters, hi the first string past every string starting with lo (its
// last character that has a next one, moved to that next one, and what
// follows it cut). In UTF-8, byte order is code point order, so the next
// character is the next code point (past the surrogates, which UTF-8 does
// not encode). ok is false when there is no such string (lo is all
// U+10FFFF) or prefix is not valid UTF-8 (no stored subject starts with
// it: PostgreSQL refuses such text).
func subjectRange(prefix string) (lo, hi string, ok bool) {
	if prefix == "" || !utf8.ValidString(prefix) {
		return "", "", false
	}
	r := []rune(prefix)
	if len(r) > LookupPrefix {
		r = r[:LookupPrefix]
	}
	for i := len(r) - 1; i >= 0; i-- {
		c := r[i]
		if c == utf8.MaxRune {
			continue
		}
		c++
		if c == 0xD800 {
			c = 0xE000 // past the surrogates
		}
		return string(r), string(append(r[:i:i], c)), true
	}
	return "", "", false
}

// subjectTimeConds are the time bounds of a statement in a form the walk
// can take: the filter's from and to, and the side of its cursor it reads
// (a page of newer rows reads at or after the cursor's time).
func (p *listPlan) subjectTimeConds(newer bool) string {
	var conds string
	if _, ok := p.args["from"]; ok {
		conds += condFrom
	}
	if _, ok := p.args["to"]; ok {
		conds += condTo
	}
	if _, ok := p.args["cursor_at"]; ok {
		if newer {
			conds += ` AND d.dead_lettered_at >= @cursor_at`
		} else {
			conds += ` AND d.dead_lettered_at <= @cursor_at`
		}
	}
	return conds
}

// subjectLanesSQL is the statement of the subjects' lanes reading newer
// (or older) rows: the walk, then head, each lane with conds and limit,
// and tail.
func (p *listPlan) subjectLanesSQL(newer bool, head, conds, limit, tail string) string {
	t, order, keyOrder := p.subjectTimeConds(newer), laneOlder, keyLaneOlder
	if newer {
		order, keyOrder = laneNewer, keyLaneNewer
	}
	var recheck string
	if p.subjectLong {
		recheck = condSubject
	}
	return fmt.Sprintf(subjectNarrow, t, order) + fmt.Sprintf(subjectKeys, t) + subjectLanes + head +
		fmt.Sprintf(subjectLaneUnion, conds, order, limit, recheck, keyOrder) + tail
}
