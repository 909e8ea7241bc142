package audit_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

var (
	ann = quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ann", Email: "ann@example.com", EmailVerified: true}
	bob = quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-bob", Email: "bob@example.com", EmailVerified: true}
	t0  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

// fixture appends 30 varied events, an hour apart, and returns them by seq
// (index i is seq i+1).
func fixture(t *testing.T, b bundle) []audit.Event {
	t.Helper()
	var events []audit.Event
	for i := range 30 {
		e := audit.Event{
			Actor:      []quarantine.Actor{ann, bob}[i%2],
			Tenant:     []string{"acme", "globex", ""}[i%3],
			Action:     []string{"replay.request", "replay.approve", "deadletter.discard", "login"}[i%4],
			ObjectType: "dead_letter",
			ObjectID:   fmt.Sprint(i % 6),
			MessageID:  fmt.Sprintf("msg-%d", i%6),
			Outcome:    audit.OutcomeOK,
			At:         t0.Add(time.Duration(i) * time.Hour),
		}
		switch {
		case i%5 == 3:
			e.Outcome = audit.OutcomeDenied
		case i%7 == 6:
			e.Outcome = audit.OutcomeError
		}
		if e.Action == "login" {
			e.ObjectType, e.ObjectID, e.MessageID = "", "", ""
		}
		if i == 29 { // an object whose id reads as a message id: not found by MessageID
			e.ObjectType, e.ObjectID, e.MessageID = "message", "msg-2", ""
		}
		events = append(events, e)
	}
	appendAll(t, b, events...)
	return events
}

// newestFirst returns the seqs of the events keep selects, newest first.
func newestFirst(events []audit.Event, keep func(e audit.Event) bool) []int64 {
	seqs := []int64{}
	for i := len(events) - 1; i >= 0; i-- {
		if keep(events[i]) {
			seqs = append(seqs, int64(i+1))
		}
	}
	return seqs
}

func seqsOf(entries []audit.Entry) []int64 {
	out := make([]int64, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Seq)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := fixture(t, b)

	tests := []struct {
		name   string
		filter audit.Filter
		keep   func(e audit.Event) bool
	}{
		{"All", audit.Filter{}, func(audit.Event) bool { return true }},
		{"ActorEmail", audit.Filter{Actor: "ann@example.com"}, func(e audit.Event) bool { return e.Actor == ann }},
		{"ActorSubject", audit.Filter{Actor: "sub-bob"}, func(e audit.Event) bool { return e.Actor == bob }},
		{"ActorIsExact", audit.Filter{Actor: "ann"}, func(audit.Event) bool { return false }},
		{"Action", audit.Filter{Action: "replay.approve"}, func(e audit.Event) bool { return e.Action == "replay.approve" }},
		{"Tenant", audit.Filter{Tenant: "globex"}, func(e audit.Event) bool { return e.Tenant == "globex" }},
		{"ObjectType", audit.Filter{ObjectType: "message"}, func(e audit.Event) bool { return e.ObjectType == "message" }},
		{"Object", audit.Filter{ObjectType: "dead_letter", ObjectID: "4"}, func(e audit.Event) bool {
			return e.ObjectType == "dead_letter" && e.ObjectID == "4"
		}},
		{"MessageIDNotObjectID", audit.Filter{MessageID: "msg-2"}, func(e audit.Event) bool {
			return e.MessageID == "msg-2"
		}},
		{"OutcomeOK", audit.Filter{Outcome: audit.OutcomeOK}, func(e audit.Event) bool { return e.Outcome == audit.OutcomeOK }},
		{"OutcomeDenied", audit.Filter{Outcome: audit.OutcomeDenied}, func(e audit.Event) bool { return e.Outcome == audit.OutcomeDenied }},
		{"OutcomeError", audit.Filter{Outcome: audit.OutcomeError}, func(e audit.Event) bool { return e.Outcome == audit.OutcomeError }},
		{"FromInclusiveToExclusive", audit.Filter{From: t0.Add(5 * time.Hour), To: t0.Add(9 * time.Hour)}, func(e audit.Event) bool {
			return !e.At.Before(t0.Add(5*time.Hour)) && e.At.Before(t0.Add(9*time.Hour))
		}},
		{"FromOnly", audit.Filter{From: t0.Add(25 * time.Hour)}, func(e audit.Event) bool { return !e.At.Before(t0.Add(25 * time.Hour)) }},
		{"Combined", audit.Filter{Tenant: "acme", Action: "replay.request", Actor: "ann@example.com"}, func(e audit.Event) bool {
			return e.Tenant == "acme" && e.Action == "replay.request" && e.Actor == ann
		}},
		{"TenantsOne", audit.Filter{Tenants: []string{"acme"}}, func(e audit.Event) bool { return e.Tenant == "acme" }},
		{"TenantsTwo", audit.Filter{Tenants: []string{"acme", "globex"}}, func(e audit.Event) bool { return e.Tenant != "" }},
		{"TenantsAll", audit.Filter{Tenants: []string{"acme", audit.AllTenants}}, func(audit.Event) bool { return true }},
		{"TenantsNone", audit.Filter{Tenants: []string{}}, func(audit.Event) bool { return false }},
		{"TenantOutsideTenants", audit.Filter{Tenant: "globex", Tenants: []string{"acme"}}, func(audit.Event) bool { return false }},
		{"TenantsWithOtherFilters", audit.Filter{Tenants: []string{"globex"}, Outcome: audit.OutcomeDenied}, func(e audit.Event) bool {
			return e.Tenant == "globex" && e.Outcome == audit.OutcomeDenied
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.filter
			f.Limit = audit.MaxLimit
			page, err := audit.List(b.ctx, b.db.Pool, f)
			require.NoError(t, err)
			want := newestFirst(events, tt.keep)
			require.Equal(t, want, seqsOf(page.Entries))
			require.False(t, page.HasNext)
			require.False(t, page.HasPrev)
			if tt.name != "All" && tt.name != "TenantsAll" {
				require.Less(t, len(want), len(events), "the filter narrows")
			}
		})
	}

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		for _, f := range []audit.Filter{
			{Limit: audit.MaxLimit + 1},
			{Limit: -1},
			{Before: 5, After: 2},
			{Before: -1},
			{Outcome: "maybe"},
			{From: t0, To: t0},
		} {
			_, err := audit.List(b.ctx, b.db.Pool, f)
			require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%+v: %v", f, err)
		}
	})
}

func TestListKeysetPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := fixture(t, b)

	for _, tt := range []struct {
		name   string
		filter audit.Filter
		keep   func(e audit.Event) bool
	}{
		{"All", audit.Filter{}, func(audit.Event) bool { return true }},
		{"Tenant", audit.Filter{Tenants: []string{"acme"}}, func(e audit.Event) bool { return e.Tenant == "acme" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := newestFirst(events, tt.keep)
			f := tt.filter
			f.Limit = 4

			// Forward (older) to the end.
			var pages []audit.Page
			for {
				page, err := audit.List(b.ctx, b.db.Pool, f)
				require.NoError(t, err)
				require.NotEmpty(t, page.Entries)
				require.Equal(t, len(pages) > 0, page.HasPrev, "page %d", len(pages))
				pages = append(pages, page)
				if !page.HasNext {
					break
				}
				require.Equal(t, page.Entries[len(page.Entries)-1].Seq, page.NextBefore)
				f.Before, f.After = page.NextBefore, 0
			}
			var walked []int64
			for _, p := range pages {
				require.LessOrEqual(t, len(p.Entries), 4)
				walked = append(walked, seqsOf(p.Entries)...)
			}
			require.Equal(t, want, walked, "the pages cover every entry once, newest first")
			require.Len(t, pages, (len(want)+3)/4)

			// Back (newer) from the last page: the same pages again.
			for i := len(pages) - 1; i > 0; i-- {
				require.True(t, pages[i].HasPrev)
				f.Before, f.After = 0, pages[i].PrevAfter
				page, err := audit.List(b.ctx, b.db.Pool, f)
				require.NoError(t, err)
				require.Equal(t, seqsOf(pages[i-1].Entries), seqsOf(page.Entries), "page %d", i-1)
				require.True(t, page.HasNext)
				require.Equal(t, i-1 > 0, page.HasPrev)
			}
		})
	}

	t.Run("PastTheEnds", func(t *testing.T) {
		t.Parallel()
		page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Before: 1})
		require.NoError(t, err)
		require.Empty(t, page.Entries)
		require.False(t, page.HasNext)
		require.True(t, page.HasPrev)
		require.Equal(t, int64(0), page.PrevAfter)

		page, err = audit.List(b.ctx, b.db.Pool, audit.Filter{After: 1000})
		require.NoError(t, err)
		require.Empty(t, page.Entries)
		require.False(t, page.HasPrev)
		require.True(t, page.HasNext)
		require.Equal(t, int64(1001), page.NextBefore)
	})
}

func TestGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := fixture(t, b)
	// seq 1 is acme, seq 2 globex, seq 3 has no tenant.
	require.Equal(t, []string{"acme", "globex", ""}, []string{events[0].Tenant, events[1].Tenant, events[2].Tenant})

	tests := []struct {
		name    string
		seq     int64
		tenants []string
		wantErr string // error code
	}{
		{"Success", 1, []string{"acme"}, ""},
		{"AllTenantsNil", 2, nil, ""},
		{"AllTenantsStar", 3, []string{audit.AllTenants}, ""},
		{"NotFound", 999, nil, quarantine.ENOTFOUND},
		{"OtherTenant", 2, []string{"acme"}, quarantine.ENOTFOUND},
		{"NoTenantHiddenFromTenantViewer", 3, []string{"acme", "globex"}, quarantine.ENOTFOUND},
		{"NoTenants", 1, []string{}, quarantine.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := audit.Get(b.ctx, b.db.Pool, tt.seq, tt.tenants)
			if tt.wantErr != "" {
				require.Equal(t, tt.wantErr, quarantine.ErrorCode(err), "%v", err)
				require.Zero(t, e)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.seq, e.Seq)
			require.Equal(t, events[tt.seq-1].Action, e.Action)
		})
	}
}

func TestForObject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := fixture(t, b)
	keep := func(e audit.Event) bool { return e.ObjectType == "dead_letter" && e.ObjectID == "1" }
	all := newestFirst(events, keep)
	slices.Reverse(all)
	require.Greater(t, len(all), 2)

	trail, err := audit.ForObject(b.ctx, b.db.Pool, "dead_letter", "1", 0)
	require.NoError(t, err)
	require.Equal(t, all, seqsOf(trail), "oldest first")

	trail, err = audit.ForObject(b.ctx, b.db.Pool, "dead_letter", "1", 2)
	require.NoError(t, err)
	require.Equal(t, all[len(all)-2:], seqsOf(trail), "the two most recent, oldest first")

	trail, err = audit.ForObject(b.ctx, b.db.Pool, "dead_letter", "nope", 0)
	require.NoError(t, err)
	require.Empty(t, trail)

	_, err = audit.ForObject(b.ctx, b.db.Pool, "dead_letter", "1", audit.MaxLimit+1)
	require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
}

func TestSplitObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, typ, id string
		ok          bool
	}{
		{"dead_letter 83", "dead_letter", "83", true},
		{"dead_letter:83", "dead_letter", "83", true},
		{"  dead_letter   83 ", "dead_letter", "83", true},
		{"route GET /policy", "route", "GET /policy", true},
		{"route:GET /policy", "route", "GET /policy", true},
		{"83", "", "", false},
		{"dead_letter", "", "", false},
		{"dead_letter:", "", "", false},
		{":83", "", "", false},
		{"Order 83", "", "", false}, // no type looks like that
	} {
		typ, id, ok := audit.SplitObject(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.typ, typ, tc.in)
		require.Equal(t, tc.id, id, tc.in)
	}
}
