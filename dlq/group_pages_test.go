package dlq

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupPagesWalkEveryOrderByPosition: in each order, pages read from
// the last group shown (After) list every group once, in the order one
// whole page lists them, each page numbered by its place (First); from
// the last page, pages read before the first shown (Before) give the
// same pages back. Ties (equal counts, equal times) are broken by the
// fingerprint, as the order does.
func TestGroupPagesWalkEveryOrderByPosition(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	var xs []letter
	for _, g := range []struct {
		err   string
		times []int
	}{
		{"alpha failed", []int{1, 2, 30}}, {"bravo failed", []int{3, 4, 5}}, {"charlie failed", []int{6, 20}},
		{"delta failed", []int{7, 20}}, {"echo failed", []int{8}}, {"foxtrot failed", []int{8}}, {"golf failed", []int{9}},
	} {
		for _, m := range g.times {
			xs = append(xs, letter{err: g.err, at: at(m)})
		}
	}
	ids := l.insert(t, xs...)
	l.setStatus(t, StatusResolved, ids[0]) // alpha: 3 dead letters, 2 unresolved
	_, err := FoldCounters(ctx, l.db.Pool)
	require.NoError(t, err)

	for _, sort := range []GroupSort{GroupsByUnresolved, GroupsByCount, GroupsByLastSeen, GroupsByFirstSeen} {
		f := GroupFilter{Tenants: []string{"acme"}, Sort: sort}
		whole, err := l.store.Groups(ctx, f)
		require.NoError(t, err)
		require.Len(t, whole.Groups, 7)
		assert.Equal(t, 1, whole.First)
		want := fingerprints(whole.Groups)

		f.Limit = 2
		var pages []GroupPage
		for {
			p, err := l.store.Groups(ctx, f)
			require.NoError(t, err)
			if len(p.Groups) == 0 {
				break
			}
			assert.Equal(t, 7, p.Total, "%s: the total on every page", sort)
			assert.Equal(t, 2*len(pages)+1, p.First, "%s: page %d's place", sort, len(pages)+1)
			pages = append(pages, p)
			c := p.Groups[len(p.Groups)-1].Cursor()
			f.After = &c
		}
		var got []string
		for _, p := range pages {
			got = append(got, fingerprints(p.Groups)...)
		}
		assert.Equal(t, want, got, "%s: forwards by position, every group once in order", sort)

		f.After = nil
		for i := len(pages) - 1; i > 0; i-- {
			c := pages[i].Groups[0].Cursor()
			f.Before = &c
			p, err := l.store.Groups(ctx, f)
			require.NoError(t, err)
			assert.Equal(t, fingerprints(pages[i-1].Groups), fingerprints(p.Groups), "%s: back from page %d", sort, i+1)
			assert.Equal(t, pages[i-1].First, p.First, "%s: back from page %d", sort, i+1)
		}
		f.Before = nil
	}

	// Past the last group there is none, and the total is still counted.
	all, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}})
	require.NoError(t, err)
	last := all.Groups[len(all.Groups)-1].Cursor()
	past, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, After: &last})
	require.NoError(t, err)
	assert.Empty(t, past.Groups)
	assert.Equal(t, 7, past.Total)
	_, err = l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, After: &last, Before: &last})
	assert.Error(t, err, "one cursor at most")
}

// TestGroupPageAfterAGroupDealtWithKeepsTheNext: the on-call reads the
// first page of groups with unresolved dead letters, resolves the first
// group shown, and moves on from the last one shown: the next page starts
// with the group that followed it, which an offset would have skipped
// (it moved up onto the page already read).
func TestGroupPageAfterAGroupDealtWithKeepsTheNext(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{err: "alpha failed"}, letter{err: "alpha failed"}, letter{err: "alpha failed"},
		letter{err: "bravo failed"}, letter{err: "bravo failed"}, letter{err: "charlie failed"})
	f := GroupFilter{Tenants: []string{"acme"}, Unresolved: true, Limit: 1}
	first, err := l.store.Groups(ctx, f)
	require.NoError(t, err)
	require.Len(t, first.Groups, 1)
	require.Equal(t, int64(3), first.Groups[0].N, "alpha first")

	l.setStatus(t, StatusResolved, ids[0], ids[1], ids[2])
	_, err = FoldCounters(ctx, l.db.Pool)
	require.NoError(t, err)

	c := first.Groups[0].Cursor()
	f.After = &c
	next, err := l.store.Groups(ctx, f)
	require.NoError(t, err)
	require.Len(t, next.Groups, 1)
	assert.Equal(t, int64(2), next.Groups[0].N, "bravo, second when the first page was read, comes next")
	assert.Equal(t, 1, next.First, "now first of the groups with unresolved dead letters")
	assert.Equal(t, 2, next.Total)
}

// TestGroupCursorIsReadBackOrRefused: a cursor is read back as it was
// made; an edited one is refused as invalid.
func TestGroupCursorIsReadBackOrRefused(t *testing.T) {
	c := GroupCursor{Unresolved: 2, N: 3, LastSeen: time.UnixMicro(1_700_000_000_123_456).UTC(),
		FirstSeen: time.UnixMicro(1_600_000_000_000_001).UTC(), Fingerprint: "ab:cd"}
	got, err := DecodeGroupCursor(c.Encode())
	require.NoError(t, err)
	assert.Equal(t, c, got)
	// A count below 0 (an arrival closed before its fold) is a position
	// the page may have written: read back too.
	below := c
	below.Unresolved, below.N = -1, -2
	got, err = DecodeGroupCursor(below.Encode())
	require.NoError(t, err)
	assert.Equal(t, below, got)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"", "!!", "MTox", enc("x:3:1700000000123456:1600000000000001:ab"),
		enc("-9223372036854775808:3:1700000000123456:1600000000000001:ab"),
		GroupCursor{Unresolved: 2, N: 3, LastSeen: time.UnixMicro(-1).UTC(), FirstSeen: c.FirstSeen, Fingerprint: "x"}.Encode(),
		GroupCursor{LastSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Fingerprint: "x"}.Encode(),
		GroupCursor{LastSeen: c.LastSeen, FirstSeen: c.FirstSeen}.Encode()} {
		_, err := DecodeGroupCursor(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func fingerprints(gs []Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Fingerprint
	}
	return out
}
