package dlq

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevList23SubjectPrefixReadsEveryDeadLetter: severity medium. The
// list's "Subject prefix" filter (web's subject, dlq.ListFilter.SubjectPrefix:
// original_subject LIKE 'prefix%') is the one filter of the list with no
// index behind it: msg_id, op_id and corr_id have theirs, group has
// dead_letters_group_time_idx, type/class/status read the counters'
// combinations, q reads the trigram index by windows. A subject prefix is
// read by taking each tenant's dead letters, partition by partition
// newest first (by the tenant alone: here bitmap scans of every
// partition), and testing every row's heap tuple until 51 match: a prefix that matches few or none of them (an on-call typing
// "app.acme.payments" while orders fill the queue, a narrower prefix at
// every keystroke: the form submits as one types) reads the tenant's whole
// history, every partition, for one page. Here 20,000 dead letters of
// other subjects are read and dropped to show one page with the one
// match (5-14 ms here, warm, linear in the rows): at the 1M rows the console
// is held to (list p95 <= 15 ms, docs/BENCHMARKS.md) that is a million
// heap rows a keystroke, 0.3-0.7 s warm, and at 10M seconds, cold
// toward the web statement timeout (15 s, then an error page).
//
// Expected: a page of a subject prefix reads a bounded amount whatever
// the rows around it hold, as every other filter of the list does (an
// index on (tenant, left(original_subject, N) text_pattern_ops,
// dead_lettered_at) or windows as the text search has).
func TestRevList23SubjectPrefixReadsEveryDeadLetter(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := planNow()
	// The one dead letter of the subject asked for, the oldest.
	recs := []Record{l.record(letter{subject: "app.acme.payments.capture", itemType: "payments.capture", at: now.Add(-5 * 24 * time.Hour)})}
	const others = 20_000
	for i := range others {
		recs = append(recs, l.record(letter{subject: "app.acme.orders.refund", at: now.Add(-time.Duration(i) * 20 * time.Second)}))
	}
	for start := 0; start < len(recs); start += 1000 {
		_, err := l.store.Insert(ctx, recs[start:min(start+1000, len(recs))])
		require.NoError(t, err)
	}
	_, err := FoldCounters(ctx, l.db.Pool)
	require.NoError(t, err)
	_, err = l.db.OwnerPool.Exec(ctx, `ANALYZE dead_letters`) // the owner: the runtime role's is skipped
	require.NoError(t, err)

	f := ListFilter{Tenants: []string{"acme"}, SubjectPrefix: "app.acme.payments"}
	page, err := l.store.ListDeadLetters(ctx, f)
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "precondition: the page shows the one dead letter of the prefix")
	require.Equal(t, "app.acme.payments.capture", page.Items[0].OriginalSubject)

	plan, err := l.store.ExplainList(ctx, f)
	require.NoError(t, err)
	removed := removedByFilter(plan)
	t.Logf("rows read and dropped for a page of one: %d (%s)", removed, regexp.MustCompile(`Execution Time: [0-9.]+ ms`).FindString(plan))
	assert.LessOrEqual(t, removed, 1000,
		"a page of a subject prefix read and dropped %d dead letters of other subjects (the tenant's whole history) to show one; plan:\n%s", removed, plan)
}
