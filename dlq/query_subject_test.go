package dlq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubjectRange(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", LookupPrefix+10)
	cases := []struct {
		name, prefix, lo, hi string
		ok                   bool
	}{
		{"ASCII", "app.acme", "app.acme", "app.acmf", true},
		{"LastByteMax", "app.\x7f", "app.\x7f", "app.\u0080", true},
		{"BeforeSurrogates", "a\ud7ff", "a\ud7ff", "a\ue000", true},
		{"MaxRuneCarries", "ab\U0010FFFF", "ab\U0010FFFF", "ac", true},
		{"AllMaxRunes", "\U0010FFFF\U0010FFFF", "", "", false},
		{"LongerThanTheKey", long, strings.Repeat("é", LookupPrefix), strings.Repeat("é", LookupPrefix-1) + "ê", true},
		{"NotUTF8", "app.\xff", "", "", false},
		{"Empty", "", "", "", false},
	}
	assert.Contains(t, subjectKeys, fmt.Sprintf("k.n <= %d", SubjectLanes), "SubjectLanes as the walk spells it")
	assert.Equal(t, 2, strings.Count(subjectLanes, fmt.Sprintf("n > %d", SubjectLanes)), "SubjectLanes as the lanes spell it")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, ok := subjectRange(tc.prefix)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.lo, lo)
			assert.Equal(t, tc.hi, hi)
			if ok {
				assert.Less(t, lo, hi, "Go compares strings by bytes, as text_pattern_ops does")
			}
		})
	}
}

// TestListSubjectPrefixLanes: a subject prefix reads the same dead
// letters, in the same order, both ways, counted and selected alike,
// whichever lanes the statement takes for each tenant: one per subject
// (few subjects under the prefix), the tenant's own (the prefix common in
// its newest rows, or starting more than SubjectLanes subjects), or none
// (no subject under it). And each reads a bounded number of rows: the
// subjects' lanes a page each, the tenant's a page of its common prefix.
func TestListSubjectPrefixLanes(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := planNow()
	longSubject := "app.acme.long." + strings.Repeat("x", 300)
	var xs []letter
	for i := range 3000 {
		x := letter{tenant: []string{"acme", "globex"}[i%2], at: now.Add(-time.Duration(i) * 7 * time.Minute)} // 14 days
		x.subject = "app." + x.tenant + ".orders.refund"
		switch {
		case i%50 == 0: // acme: 30 rare subjects under app.acme.payments.
			x.tenant, x.subject = "acme", fmt.Sprintf("app.acme.payments.p%02d", i/50%30)
		case i%77 == 1: // SubjectLanes + 8 rare subjects under app.globex.many.
			x.tenant, x.subject = "globex", fmt.Sprintf("app.globex.many.m%02d", i%(SubjectLanes+8))
		case i%97 == 3: // a subject longer than the key, and one with LIKE's characters
			x.tenant, x.subject = "acme", longSubject+fmt.Sprint(i%2)
		case i%101 == 5:
			x.tenant, x.subject = "globex", "app.globex.100%_done"
		}
		xs = append(xs, x)
	}
	l.insert(t, xs...)
	_, err := l.db.OwnerPool.Exec(ctx, `ANALYZE dead_letters`) // the owner: the runtime role's ANALYZE is skipped with a warning
	require.NoError(t, err)
	s := l.store
	all := []string{"acme", "globex"}

	cases := []struct{ name, prefix string }{
		{"RarePrefix", "app.acme.payments.p0"},
		{"OneSubject", "app.acme.payments.p07"},
		{"ThirtySubjects", "app.acme.payments."},
		{"CommonSubject", "app.globex.orders.refund"},
		{"BroadPrefix", "app."},
		{"MoreSubjectsThanLanes", "app.globex.many."},
		{"LongerThanTheKey", longSubject + "1"},
		{"LikeCharactersAreLiteral", "app.globex.100%_"},
		{"LikeCharactersMatchNothingElse", "app.globex.1_0"},
		{"Nothing", "zzz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ListFilter{Tenants: all, SubjectPrefix: tc.prefix}
			want := nilIfEmpty(reference(t, l, `tenant = ANY($1) AND starts_with(original_subject, $2)`, all, tc.prefix))
			p, err := s.plan(ctx, &f)
			require.NoError(t, err)
			assert.True(t, p.subjects, "read by the subjects' lanes (query_subject.go)")
			forward, backward, first := walk(t, s, f)
			assert.Equal(t, want, nilIfEmpty(forward), "pages forward")
			assert.Equal(t, want, nilIfEmpty(backward), "pages back")
			n, capped, err := s.CountDeadLetters(ctx, f)
			require.NoError(t, err)
			assert.Equal(t, int64(len(want)), n)
			assert.False(t, capped)
			if len(want) <= ListPageSize {
				assert.True(t, first.Counted)
				assert.Equal(t, int64(len(want)), first.Count)
			}
			ids, err := s.MatchingIDs(ctx, f, 1000)
			require.NoError(t, err)
			assert.Equal(t, want[:min(len(want), 1000)], nilIfEmpty(ids), "all matching")
		})
	}

	t.Run("WithOtherFilters", func(t *testing.T) {
		t.Parallel()
		from, to := now.Add(-5*24*time.Hour), now.Add(-2*24*time.Hour)
		f := ListFilter{Tenants: all, SubjectPrefix: "app.acme.payments.", From: from, To: to}
		want := nilIfEmpty(reference(t, l, `tenant = ANY($1) AND starts_with(original_subject, $2) AND dead_lettered_at >= $3 AND dead_lettered_at < $4`,
			all, f.SubjectPrefix, from, to))
		require.NotEmpty(t, want)
		forward, backward, _ := walk(t, s, f)
		assert.Equal(t, want, nilIfEmpty(forward))
		assert.Equal(t, want, nilIfEmpty(backward))
		f = ListFilter{Tenants: all, SubjectPrefix: "app.globex.", Statuses: []Status{StatusQuarantined}}
		want = nilIfEmpty(reference(t, l, `tenant = ANY($1) AND starts_with(original_subject, $2)`, all, f.SubjectPrefix))
		forward, backward, _ = walk(t, s, f)
		assert.Equal(t, want, nilIfEmpty(forward))
		assert.Equal(t, want, nilIfEmpty(backward))
	})

	// What a page reads (EXPLAIN ANALYZE): rows tested and dropped by a
	// tenant's lane, and index entries read past the page.
	t.Run("Bounded", func(t *testing.T) {
		t.Parallel()
		for _, prefix := range []string{"app.acme.payments.p07", "app.acme.payments.", "app.globex.orders.refund", "app.", "zzz"} {
			plan, err := s.ExplainList(ctx, ListFilter{Tenants: all, SubjectPrefix: prefix})
			require.NoError(t, err)
			removed := removedByFilter(plan)
			// Each tenant's first 400 rows are tested once (which lanes),
			// then the prefix common in them needs a page's worth.
			assert.LessOrEqual(t, removed, 2*400+200, "%s: rows read and dropped; plan:\n%s", prefix, plan)
		}
	})

	t.Run("EveryPartitionHasTheIndex", func(t *testing.T) {
		t.Parallel()
		var parts, without int
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
                SELECT 1 FROM pg_index x WHERE x.indrelid = c.oid
                  AND pg_get_indexdef(x.indexrelid) LIKE '%(tenant, "left"(original_subject, 256) text_pattern_ops, dead_lettered_at, id)'))
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'dead_letters'::regclass`).Scan(&parts, &without))
		assert.Greater(t, parts, 14, "the dead letters' days and the days made ahead")
		assert.Zero(t, without, "partitions without the subject index")
	})
}
