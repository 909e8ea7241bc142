package dlq

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// letters stores dead letters for query tests without NATS.
type letters struct {
	db    *testdb.DB
	store *Store
	seq   uint64
}

func newLetters(t *testing.T) *letters {
	t.Helper()
	db := testdb.New(t)
	return &letters{db: db, store: NewStore(db.Pool)}
}

// letter is a test dead letter; zero fields get defaults.
type letter struct {
	tenant, itemType, err, stack, msgID, opID, corrID, subject string
	class                                                      ErrorClass
	at                                                         time.Time
	payload                                                    []byte
}

func (l *letters) record(x letter) Record {
	l.seq++
	if x.tenant == "" {
		x.tenant = "acme"
	}
	if x.itemType == "" {
		x.itemType = "orders.refund"
	}
	if x.class == "" {
		x.class = ClassPermanent
	}
	if x.msgID == "" {
		x.msgID = fmt.Sprintf("m-%d", l.seq)
	}
	if x.subject == "" {
		x.subject = "app." + x.tenant + "." + x.itemType
	}
	if x.at.IsZero() {
		x.at = time.Now().Add(-time.Duration(l.seq) * time.Second)
	}
	if x.payload == nil {
		x.payload = []byte(`{"n":1}`)
	}
	r := Record{
		Tenant: x.tenant, ItemType: x.itemType, Subject: "dlq." + x.tenant + "." + x.itemType, OriginalSubject: x.subject,
		MsgID: x.msgID, OperationID: x.opID, CorrelationID: x.corrID, Error: x.err, ErrorClass: x.class, Stack: x.stack,
		DeadLetteredAt: x.at.Truncate(time.Microsecond), Payload: x.payload, PayloadSHA256: sha256.Sum256(x.payload),
		Headers:    []HeaderValue{{Name: HeaderError, Value: x.err}},
		SourceKind: SourceDLQ, SourceStream: "DLQ", SourceSeq: l.seq,
	}
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, r.Stack)
	return r
}

func (l *letters) insert(t *testing.T, xs ...letter) []int64 {
	t.Helper()
	recs := make([]Record, len(xs))
	for i, x := range xs {
		recs[i] = l.record(x)
	}
	for start := 0; start < len(recs); start += 1000 {
		_, err := l.store.Insert(context.Background(), recs[start:min(start+1000, len(recs))])
		require.NoError(t, err)
	}
	_, err := FoldCounters(context.Background(), l.db.Pool)
	require.NoError(t, err)
	ids := make([]int64, len(recs))
	for i, r := range recs {
		require.NoError(t, l.db.Pool.QueryRow(context.Background(),
			`SELECT id FROM dead_letters WHERE source_stream = $1 AND source_seq = $2`, r.SourceStream, int64(r.SourceSeq)).Scan(&ids[i]))
	}
	return ids
}

func (l *letters) setStatus(t *testing.T, st Status, ids ...int64) {
	t.Helper()
	_, err := l.db.Pool.Exec(context.Background(), StatusMove(`SELECT d.id, d.dead_lettered_at, d.status FROM dead_letters d
        WHERE d.id = ANY($2) FOR UPDATE OF d`, "$1", "id"), string(st), ids)
	require.NoError(t, err)
}

// remove takes dead letters ids out of the table as a retention run does:
// deleted, and what left subtracted from the counters and the groups
// (subtract), in one transaction.
func (l *letters) remove(t *testing.T, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, l.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH gone AS (DELETE FROM dead_letters WHERE id = ANY($1)
                RETURNING tenant, item_type, error_class, status, fingerprint)
            SELECT tenant, item_type, error_class, status, fingerprint, count(*) FROM gone GROUP BY 1, 2, 3, 4, 5`, ids)
		if err != nil {
			return err
		}
		var gone []departure
		var d departure
		if _, err := pgx.ForEachRow(rows, []any{&d.tenant, &d.itemType, &d.errorClass, &d.status, &d.fingerprint, &d.n}, func() error {
			gone = append(gone, d)
			return nil
		}); err != nil {
			return err
		}
		return subtract(ctx, tx, gone)
	}))
}

// walk pages through f with Next until the end, then back with Prev, and
// returns the ids seen each way (the way back reversed to newest first).
func walk(t *testing.T, s *Store, f ListFilter) (forward, backward []int64, first ListPage) {
	t.Helper()
	ctx := context.Background()
	var pages []ListPage
	for {
		p, err := s.ListDeadLetters(ctx, f)
		require.NoError(t, err)
		if len(pages) == 0 {
			first = p
			assert.Empty(t, p.Prev, "the first page has no newer page")
		}
		pages = append(pages, p)
		for _, it := range p.Items {
			forward = append(forward, it.ID)
		}
		require.LessOrEqual(t, len(p.Items), ListPageSize)
		if p.Next == "" {
			break
		}
		require.Len(t, p.Items, ListPageSize, "only the last page is short")
		f.Before, f.After = p.Next, ""
		require.Less(t, len(pages), 100, "endless paging")
	}
	// Back from the last page.
	last := pages[len(pages)-1]
	var chunks [][]int64
	chunks = append(chunks, itemIDs(last.Items))
	for prev := last.Prev; prev != ""; {
		f.Before, f.After = "", prev
		p, err := s.ListDeadLetters(ctx, f)
		require.NoError(t, err)
		assert.NotEmpty(t, p.Next, "a newer page has an older one")
		chunks = append(chunks, itemIDs(p.Items))
		prev = p.Prev
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		backward = append(backward, chunks[i]...)
	}
	return forward, backward, first
}

func itemIDs(items []ListItem) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// reference lists the ids a filter selects with the simplest SQL.
func reference(t *testing.T, l *letters, where string, args ...any) []int64 {
	t.Helper()
	rows, err := l.db.Pool.Query(context.Background(), `SELECT id FROM dead_letters d WHERE `+where+` ORDER BY dead_lettered_at DESC, id DESC`, args...)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

func TestListDeadLetters(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	var xs []letter
	types := []string{"orders.refund", "email.send", "search.index_update"}
	classes := []ErrorClass{ClassTransient, ClassPermanent, ClassSchemaInvalid}
	for i := range 400 {
		x := letter{
			tenant:   []string{"acme", "globex", "initech"}[i%3],
			itemType: types[i%len(types)],
			class:    classes[(i/3)%len(classes)],
			err:      fmt.Sprintf("order %d failed: gateway 502", i),
			at:       base.Add(time.Duration(i/4) * time.Minute), // four share each instant: ties break by id
			corrID:   fmt.Sprintf("c-%d", i),
		}
		if i%50 == 7 {
			x.itemType = "accounts.permission_grant" // rare
			x.err = "grant billing:admin: principal lacks accounts:grant"
			x.opID = fmt.Sprintf("op-%d", i)
		}
		if i%100 == 42 {
			x.subject = "app.special.path"
			x.err = `value "<script>alert(1)</script>" 100%_done`
		}
		xs = append(xs, x)
	}
	ids := l.insert(t, xs...)
	l.setStatus(t, StatusResolved, ids[:60]...)
	l.setStatus(t, StatusReplayFailed, ids[390], ids[391])
	s := l.store
	all := []string{"acme", "globex", "initech"}

	cases := []struct {
		name  string
		f     ListFilter
		where string
		args  []any
	}{
		{"AllTenants", ListFilter{}, `tenant = ANY($1)`, []any{all}},
		{"Scope", ListFilter{Tenants: []string{"acme", "globex"}}, `tenant = ANY($1)`, []any{[]string{"acme", "globex"}}},
		{"Tenant", ListFilter{Tenant: "globex"}, `tenant = 'globex'`, nil},
		{"TenantOutsideScope", ListFilter{Tenants: []string{"acme"}, Tenant: "globex"}, `false`, nil},
		{"ItemType", ListFilter{ItemType: "email.send"}, `item_type = 'email.send'`, nil},
		{"RareItemType", ListFilter{ItemType: "accounts.permission_grant"}, `item_type = 'accounts.permission_grant'`, nil},
		{"TypeAndClass", ListFilter{Tenant: "acme", ItemType: "orders.refund", ErrorClass: ClassTransient},
			`tenant = 'acme' AND item_type = 'orders.refund' AND error_class = 'transient'`, nil},
		{"Unresolved", ListFilter{Statuses: UnresolvedStatuses}, `status IN ('quarantined','replay_requested','replaying','replay_failed')`, nil},
		{"RareStatus", ListFilter{Statuses: []Status{StatusReplayFailed}}, `status = 'replay_failed'`, nil},
		{"SubjectPrefix", ListFilter{SubjectPrefix: "app.special"}, `original_subject LIKE 'app.special%'`, nil},
		{"SubjectPrefixIsLiteral", ListFilter{SubjectPrefix: "app._pecial"}, `false`, nil},
		{"TimeRange", ListFilter{From: base.Add(10 * time.Minute), To: base.Add(70 * time.Minute)},
			`dead_lettered_at >= $1 AND dead_lettered_at < $2`, []any{base.Add(10 * time.Minute), base.Add(70 * time.Minute)}},
		{"Fingerprint", ListFilter{Fingerprint: Fingerprint(ClassTransient, "order 1 failed: gateway 502", "")},
			`fingerprint = $1`, []any{Fingerprint(ClassTransient, "order 1 failed: gateway 502", "")}},
		{"MsgID", ListFilter{MsgID: "m-17"}, `msg_id = 'm-17'`, nil},
		{"OperationID", ListFilter{OperationID: "op-57"}, `operation_id = 'op-57'`, nil},
		{"CorrelationID", ListFilter{CorrelationID: "c-3"}, `correlation_id = 'c-3'`, nil},
		{"Text", ListFilter{Text: "GATEWAY 5"}, `error ILIKE '%gateway 5%'`, nil},
		{"TextIsLiteral", ListFilter{Text: "100%_"}, `error LIKE '%100\%\_%'`, nil},
		{"TextAndType", ListFilter{Text: "principal lacks", ItemType: "accounts.permission_grant"}, `error LIKE '%principal lacks%'`, nil},
		{"Nothing", ListFilter{ItemType: "no.such.type"}, `false`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.f
			if f.Tenants == nil {
				f.Tenants = all
			}
			want := nilIfEmpty(reference(t, l, tc.where, tc.args...))
			forward, backward, first := walk(t, s, f)
			assert.Equal(t, want, nilIfEmpty(forward), "pages forward")
			assert.Equal(t, want, nilIfEmpty(backward), "pages back")
			n, capped, err := s.CountDeadLetters(context.Background(), f)
			require.NoError(t, err)
			assert.Equal(t, int64(len(want)), n)
			assert.False(t, capped)
			if first.Counted {
				assert.Equal(t, int64(len(want)), first.Count)
			}
			if len(want) <= ListPageSize {
				assert.True(t, first.Counted, "a result on one page counts itself")
			}
		})
	}

	t.Run("PlanFollowsSelectivity", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		rare := ListFilter{Tenants: all, ItemType: "accounts.permission_grant"}
		p, err := s.plan(ctx, &rare)
		require.NoError(t, err)
		assert.True(t, p.combos, "a rare item type is read one combination at a time")
		common := ListFilter{Tenants: all, Statuses: UnresolvedStatuses}
		p, err = s.plan(ctx, &common)
		require.NoError(t, err)
		assert.False(t, p.combos, "a common status is read by scanning the tenant's newest rows")
		assert.NotEmpty(t, p.countSQL, "the counters count a filter on counted columns")

	})

	t.Run("Items", func(t *testing.T) {
		t.Parallel()
		p, err := s.ListDeadLetters(context.Background(), ListFilter{Tenants: all, MsgID: "m-43"})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		it := p.Items[0]
		assert.Equal(t, ids[42], it.ID)
		assert.Equal(t, "acme", it.Tenant)
		assert.Equal(t, `value "<script>alert(1)</script>" 100%_done`, it.Error)
		assert.Equal(t, "app.special.path", it.OriginalSubject)
		assert.Equal(t, int32(7), it.PayloadSize)
		assert.Equal(t, StatusResolved, it.Status)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		for _, f := range []ListFilter{
			{Tenants: all, Before: "not-a-cursor"},
			{Tenants: all, Before: Cursor{time.Now(), 1}.Encode(), After: Cursor{time.Now(), 2}.Encode()},
			{Tenants: all, Text: "ab"},
			{Tenants: all, Text: "..."}, // no word: the trigram index would be read whole
			{Tenants: all, Text: "a.b.c d"},
			{Tenants: all, Text: "%%%"},
			{Tenants: all, Statuses: []Status{"gone"}},
			{Tenants: all, From: base, To: base},
		} {
			_, err := s.ListDeadLetters(context.Background(), f)
			assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%+v", f)
		}
	})

	t.Run("EmptyScope", func(t *testing.T) {
		t.Parallel()
		p, err := s.ListDeadLetters(context.Background(), ListFilter{})
		require.NoError(t, err)
		assert.Empty(t, p.Items)
		assert.Zero(t, p.Count)
	})
}

func nilIfEmpty(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

func TestListCountCapped(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	xs := make([]letter, CountCap+25)
	for i := range xs {
		xs[i] = letter{err: fmt.Sprintf("timeout %d", i), at: time.Now().Add(-time.Duration(i) * time.Millisecond)}
	}
	l.insert(t, xs...)
	ctx := context.Background()
	for _, f := range []ListFilter{
		{Tenants: []string{"acme"}},                            // counters
		{Tenants: []string{"acme"}, ItemType: "orders.refund"}, // counters, dimension filter
	} {
		p, err := l.store.ListDeadLetters(ctx, f)
		require.NoError(t, err)
		assert.True(t, p.Counted)
		assert.Equal(t, int64(CountCap), p.Count, "%+v", f)
		assert.True(t, p.CountCapped, "%+v", f)
		assert.Len(t, p.Items, ListPageSize)
	}
	p, err := l.store.ListDeadLetters(ctx, ListFilter{Tenants: []string{"acme"}, Text: "timeout"})
	require.NoError(t, err)
	assert.False(t, p.Counted, "a text search over more than a page is counted apart")
	n, capped, err := l.store.CountDeadLetters(ctx, ListFilter{Tenants: []string{"acme"}, Text: "timeout", Before: p.Next})
	require.NoError(t, err)
	assert.Equal(t, int64(CountCap), n)
	assert.True(t, capped)
	n, capped, err = l.store.CountDeadLetters(ctx, ListFilter{Tenants: []string{"acme"}, Text: "timeout 1002"})
	require.NoError(t, err)
	assert.Equal(t, int64(6), n, "1002 and 10020 to 10024: exact below the cap")
	assert.False(t, capped)
}

// TestListNeverReadsPayload checks the SQL of the list: it names no payload,
// headers or stack column (payload_size is fine).
func TestListNeverReadsPayload(t *testing.T) {
	t.Parallel()
	forbidden := regexp.MustCompile(`\b(payload|headers|stack|advisory)\b`)
	for name, sql := range map[string]string{
		"columns": listColumns, "older": olderFirst, "newer": newerFirst, "by tenant": keysByTenant,
		"by combination": keysByCombination, "count": countCapped,
	} {
		assert.False(t, forbidden.MatchString(sql), "%s reads a message body: %s", name, forbidden.FindString(sql))
	}
	assert.Contains(t, listColumns, "payload_size")
}

func TestGetInScope(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	big := []byte(strings.Repeat("x", PreviewPayloadMax+100))
	ids := l.insert(t, letter{tenant: "acme", payload: big}, letter{tenant: "globex"})
	ctx := context.Background()

	d, err := l.store.GetInScope(ctx, ids[0], []string{"acme"})
	require.NoError(t, err)
	assert.Len(t, d.Payload, len(big))

	p, err := l.store.GetPreview(ctx, ids[0], []string{"acme"}, nil)
	require.NoError(t, err)
	assert.Len(t, p.Payload, PreviewPayloadMax)
	assert.Equal(t, int32(len(big)), p.PayloadSize)

	pl, err := l.store.PayloadInScope(ctx, ids[0], []string{"acme", "globex"})
	require.NoError(t, err)
	assert.Equal(t, big, pl.Data)

	for _, get := range []func(int64, []string) error{
		func(id int64, ts []string) error { _, err := l.store.GetInScope(ctx, id, ts); return err },
		func(id int64, ts []string) error { _, err := l.store.GetPreview(ctx, id, ts, nil); return err },
		func(id int64, ts []string) error { _, err := l.store.PayloadInScope(ctx, id, ts); return err },
	} {
		err := get(ids[1], []string{"acme"})
		assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
		var out *OutOfScopeError
		require.ErrorAs(t, err, &out)
		assert.Equal(t, "globex", out.Tenant)
		err = get(ids[1]+1000, []string{"acme", "globex"})
		assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
		assert.False(t, errors.As(err, &out), "a missing one is not out of scope")
	}
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	now := time.Now().UTC()
	old := now.Add(-3 * time.Hour)
	ids := l.insert(t,
		letter{tenant: "acme", itemType: "orders.refund", class: ClassUnknownEffect, err: "refund ord-1 timed out", at: now.Add(-10 * time.Minute)},
		letter{tenant: "acme", itemType: "orders.refund", class: ClassUnknownEffect, err: "refund ord-2 timed out", at: now.Add(-50 * time.Minute)},
		letter{tenant: "acme", itemType: "email.send", class: ClassPermanent, err: "smtp 550", at: old},
		letter{tenant: "acme", itemType: "email.send", class: ClassPermanent, err: "smtp 550", at: now.Add(-30 * time.Hour)},
		letter{tenant: "globex", itemType: "email.send", class: ClassTransient, err: "dial tcp: refused", at: now.Add(-2 * time.Minute)},
		letter{tenant: "initech", itemType: "search.index_update", class: ClassStaleVersion, err: "version conflict", at: now.Add(-5 * time.Hour)},
	)
	l.setStatus(t, StatusResolved, ids[3])
	l.setStatus(t, StatusDiscarded, ids[5])

	d, err := l.store.Dashboard(context.Background(), DashboardQuery{Tenants: []string{"acme", "globex", "initech"}, Now: now})
	require.NoError(t, err)
	require.Len(t, d.Tenants, 3)
	acme, globex, initech := d.Tenants[0], d.Tenants[1], d.Tenants[2]
	assert.Equal(t, "acme", acme.Tenant)
	assert.Equal(t, int64(3), acme.Unresolved)
	assert.Equal(t, int64(4), acme.Total)
	assert.WithinDuration(t, old, acme.OldestUnresolved, time.Millisecond)
	assert.Equal(t, ids[2], acme.OldestUnresolvedID, "which dead letter is the oldest unresolved")
	assert.Equal(t, int64(2), acme.LastHour)
	assert.Equal(t, int64(3), acme.LastDay)
	assert.Equal(t, int64(1), globex.Unresolved)
	assert.Equal(t, int64(1), globex.LastHour)
	assert.Zero(t, initech.Unresolved)
	assert.True(t, initech.OldestUnresolved.IsZero(), "nothing unresolved")
	assert.Zero(t, initech.LastHour)
	assert.Equal(t, int64(1), initech.LastDay)

	byType := map[string]DimensionCount{}
	for _, c := range d.ByItemType {
		byType[c.Value] = c
	}
	assert.Equal(t, DimensionCount{Value: "email.send", Unresolved: 2, Total: 3}, byType["email.send"])
	assert.Equal(t, DimensionCount{Value: "orders.refund", Unresolved: 2, Total: 2}, byType["orders.refund"])
	assert.Equal(t, "email.send", d.ByItemType[0].Value, "ties on unresolved go to the bigger total")

	require.Len(t, d.Arrivals, 24)
	var sum int64
	for _, b := range d.Arrivals {
		sum += b.N
	}
	assert.Equal(t, int64(5), sum, "everything but the 30-hour-old one")
	assert.Equal(t, now.Truncate(time.Hour), d.Arrivals[23].Start)

	require.NotEmpty(t, d.TopGroups)
	assert.Equal(t, Fingerprint(ClassUnknownEffect, "refund ord-1 timed out", ""), d.TopGroups[0].Fingerprint)
	assert.Equal(t, int64(2), d.TopGroups[0].Unresolved)
	assert.Equal(t, "refund ord-2 timed out", d.TopGroups[0].SampleError, "the one stored last is the sample")
	for _, g := range d.TopGroups {
		assert.Positive(t, g.Unresolved, "only groups with unresolved dead letters")
	}

	week, err := l.store.Dashboard(context.Background(), DashboardQuery{Tenants: []string{"acme"}, Now: now, Span: 7 * 24 * time.Hour})
	require.NoError(t, err)
	assert.Len(t, week.Arrivals, 168)
	_, err = l.store.Dashboard(context.Background(), DashboardQuery{Tenants: []string{"acme"}, Now: now, Span: 90 * time.Minute})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
}

// TestGroupsFollowChanges checks the groups the statements keep against
// the table after inserts, status changes and retention's deletes.
func TestGroupsFollowChanges(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	var xs []letter
	for i := range 300 {
		xs = append(xs, letter{
			tenant: []string{"acme", "globex"}[i%2], itemType: []string{"orders.refund", "email.send", "analytics.event"}[i%3],
			class: []ErrorClass{ClassTransient, ClassPermanent}[i%2],
			err:   fmt.Sprintf("%s %d failed", []string{"refund", "send", "count", "index", "grant"}[i%5], i),
			stack: fmt.Sprintf("main.handle%d()\n\t/app/h.go:%d", i%4, i),
			at:    time.Now().Add(-time.Duration(i) * time.Minute),
		})
	}
	ids := l.insert(t, xs...)
	check := func(when string) {
		t.Helper()
		rows, err := l.db.Pool.Query(ctx, `
            SELECT tenant, fingerprint, item_type, count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
                   min(dead_lettered_at), max(dead_lettered_at), max(id)
            FROM dead_letters GROUP BY 1, 2, 3
            EXCEPT
            SELECT tenant, fingerprint, item_type, n, unresolved, first_seen, last_seen, sample_id FROM dead_letter_groups WHERE n > 0`)
		require.NoError(t, err)
		diff, err := pgx.CollectRows(rows, pgx.RowToMap)
		require.NoError(t, err)
		assert.Empty(t, diff, when)
	}
	check("after inserts")
	l.setStatus(t, StatusResolved, ids[:100]...)
	l.setStatus(t, StatusReplaying, ids[100:110]...) // unresolved to unresolved
	check("after status changes")
	// Retention removes the 100 oldest (200 minutes old and more), which
	// arrived as they were dead-lettered (retention judges by both).
	_, err := l.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = dead_lettered_at`)
	require.NoError(t, err)
	combos, err := l.store.Depth(ctx)
	require.NoError(t, err)
	run, err := l.store.purgeRows(ctx, l.db.Pool, combos, keepFor(199*time.Minute+30*time.Second), nil, time.Now(), 1000)
	require.NoError(t, err)
	require.Equal(t, int64(100), run.Rows)
	// Deletes keep first and last seen and the sample as they were; compare counts.
	var bad int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `
        SELECT count(*) FROM dead_letter_groups g
        FULL JOIN (SELECT tenant, fingerprint, item_type, count(*) AS n,
                          count(*) FILTER (WHERE dead_letter_unresolved(status)) AS u
                   FROM dead_letters GROUP BY 1, 2, 3) d USING (tenant, fingerprint, item_type)
        WHERE coalesce(g.n, 0) <> coalesce(d.n, 0) OR coalesce(g.unresolved, 0) <> coalesce(d.u, 0)`).Scan(&bad))
	assert.Zero(t, bad, "counts after deletes")

	page, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme", "globex"}, Sort: GroupsByCount})
	require.NoError(t, err)
	require.NotEmpty(t, page.Groups)
	assert.Equal(t, len(page.Groups), page.Total)
	var total int64
	for i, g := range page.Groups {
		total += g.N
		if i > 0 {
			assert.GreaterOrEqual(t, page.Groups[i-1].N, g.N, "by count")
		}
	}
	assert.Equal(t, int64(200), total)

	acme, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme", "globex"}, Tenant: "acme", ItemType: "email.send", Unresolved: true})
	require.NoError(t, err)
	for _, g := range acme.Groups {
		assert.Equal(t, []string{"acme"}, g.Tenants)
		assert.Equal(t, []string{"email.send"}, g.ItemTypes)
		assert.Positive(t, g.Unresolved)
		assert.NotEmpty(t, g.SampleError)
		assert.True(t, strings.HasPrefix(g.StackHead, "main.handle"), g.StackHead)
	}
	none, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Tenant: "globex"})
	require.NoError(t, err)
	assert.Empty(t, none.Groups, "a tenant outside the scope")
	_, err = l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Sort: "sideways"})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := Cursor{At: time.Date(2026, 11, 29, 10, 2, 11, 123456000, time.UTC), ID: 987654321}
	got, err := DecodeCursor(c.Encode())
	require.NoError(t, err)
	assert.Equal(t, c, got)
	for _, bad := range []string{"", "!!", "MTIz", "YTpi", "MTIzOi0x"} {
		_, err := DecodeCursor(bad)
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), bad)
	}
}

func TestStackHead(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a\n\tb\nc", StackHead("a\n\n\tb\r\nc\nd", 3))
	assert.Empty(t, StackHead("", 3))
	assert.True(t, slices.Equal([]string{"x"}, strings.Split(StackHead("x", 6), "\n")))
}

// keepFor is a retention policy keeping every dead letter the same time.
type keepFor time.Duration

func (k keepFor) Keep(string, string, Status) (time.Duration, bool) { return time.Duration(k), true }
func (k keepFor) Longest() (time.Duration, bool)                    { return time.Duration(k), true }
