package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestCountsExactAfterIngestAndClose takes dead letters in through NATS,
// discards, resolves and replays some of them through the pages (a replay
// that ends replayed, and one whose items end needing reconciliation, one
// of them settled as not applied), takes more in (and a dead letter that
// comes back from a replay), and checks that every count the dashboard and the list show (per
// tenant and in total, stored and unresolved, and a filter's) equals
// count(*) of the table, once the console has folded what it ingested.
func TestCountsExactAfterIngestAndClose(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	_, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)

	// The messages failed first well before the target stream's duplicate
	// window: their replays are not deferred.
	firstFailed := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	publish := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			tenant := []string{"acme", "globex"}[i%2]
			itemType := []string{"search.index_update", "orders.refund", "email.send"}[i%3]
			msg := &nats.Msg{Subject: "dlq." + tenant + "." + itemType, Data: fmt.Appendf(nil, `{"n":%d}`, i), Header: nats.Header{
				dlq.HeaderOriginalSubject: {"app." + tenant + "." + itemType}, dlq.HeaderOriginalMsgID: {fmt.Sprint("m-", i)},
				dlq.HeaderError: {fmt.Sprintf("item %d failed", i%4)}, dlq.HeaderErrorClass: {[]string{"transient", "permanent"}[i%2]},
				dlq.HeaderFirstFailedAt: {firstFailed},
			}}
			_, err := b.JetStream.PublishMsg(ctx, msg)
			require.NoError(t, err)
		}
		wait.Until(t, "ingested", 30*time.Second, func() bool {
			var stored int
			require.NoError(t, b.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&stored))
			return stored == from+n
		})
	}
	ids := func(where string) []int64 {
		t.Helper()
		rows, err := b.DB.OwnerPool.Query(ctx, `SELECT id FROM dead_letters WHERE `+where+` ORDER BY id`)
		require.NoError(t, err)
		var out []int64
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			out = append(out, id)
		}
		require.NoError(t, rows.Err())
		return out
	}
	selection := func(reason string, ids []int64) url.Values {
		form := url.Values{"reason": {reason}, "confirmed": {"1"}}
		for _, id := range ids {
			form.Add("id", fmt.Sprint(id))
		}
		return form
	}

	publish(0, 30)
	refunds := ids(`item_type = 'orders.refund'`)
	resp := b.Do(t, oncall, "POST", "/deadletters/discard", selection("handled upstream", refunds[:4]), nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	resp = b.Do(t, oncall, "POST", "/deadletters/resolve", selection("refunded by hand", refunds[4:7]), nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	index := ids(`item_type = 'search.index_update' AND tenant = 'acme'`)
	require.Len(t, index, 5)
	reqPath := requestReplay(t, b, oncall, index[:3]...)
	w := replay.NewWorker(b.Replays, b.JetStream, authz.Authority{Access: b.Access, Directory: authz.NewDirectory(b.Pool)}, nil,
		replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wait.Until(t, "the replay done", 30*time.Second, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		r, err := b.Replays.Request(ctx, mustID(t, reqPath))
		require.NoError(t, err)
		return r.Status == replay.StatusDone
	})
	// The other two: their publishes got no answer (as a lost PubAck leaves
	// jobs), and the request is cancelled: both need a person
	// (needs_reconciliation), who says one was not applied (quarantined
	// again); the other still waits.
	unsure := mustID(t, requestReplay(t, b, oncall, index[3:]...))
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'unknown', first_attempt_at = now() WHERE request_id = $1`, unsure)
	require.NoError(t, err)
	resp = b.Do(t, oncall, "POST", fmt.Sprintf("/replay/requests/%d/cancel", unsure),
		url.Values{"reason": {"wrong target"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, []int64{index[3], index[4]}, ids(`status = 'needs_reconciliation'`))
	approver, _ := b.SignIn(t, "acme:approver")
	resp = b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/items/%d/reconcile", unsure, index[3]),
		url.Values{"choice": {"not_applied"}, "note": {"the index has no trace of it"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, []int64{index[4]}, ids(`status = 'needs_reconciliation'`))

	publish(30, 12)
	// A replayed message that failed again comes back linked to the dead
	// letter it was replayed from (a replay loop, generation 1).
	_, err = b.JetStream.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(`{"n":0}`), Header: nats.Header{
		dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {"m-0"}, dlq.HeaderError: {"item 0 failed"},
		dlq.HeaderErrorClass: {"transient"}, dlq.HeaderReplayOf: {strconv.FormatInt(index[0], 10)},
	}})
	require.NoError(t, err)
	wait.Until(t, "the returning dead letter", 30*time.Second, func() bool { return len(ids(`replay_of IS NOT NULL`)) == 1 })

	count := func(where string) int64 {
		var n int64
		require.NoError(t, b.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE `+where).Scan(&n))
		return n
	}
	require.Positive(t, count(`status = 'replayed'`), "the replay replayed")
	wait.For(t, "every count the pages show equal to count(*)", 30*time.Second, func() error {
		var drift []string
		check := func(what string, shown, want int64) {
			if shown != want {
				drift = append(drift, fmt.Sprintf("%s: shown %d, count(*) %d", what, shown, want))
			}
		}
		d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
		var totalStored, totalUnresolved int64
		for _, tenant := range []string{"acme", "globex"} {
			row := byID(d, "tenant-row").FilterFunction(func(_ int, s *goquery.Selection) bool { return s.AttrOr("data-tenant", "") == tenant })
			stored := number(text(row.Find(`[data-testid="tenant-total"]`)))
			unresolved := number(text(row.Find(`[data-testid="tenant-unresolved"]`)))
			check("dashboard "+tenant+" stored", stored, count(`tenant = '`+tenant+`'`))
			check("dashboard "+tenant+" unresolved", unresolved, count(`tenant = '`+tenant+`' AND dead_letter_unresolved(status)`))
			totalStored += stored
			totalUnresolved += unresolved
		}
		check("dashboard unresolved", number(text(byID(d, "kpi-unresolved").Find(".kpi__value"))), count(`dead_letter_unresolved(status)`))
		check("dashboard stored (sum of tenants)", totalStored, count(`true`))
		for _, l := range []struct{ query, where string }{
			{"", `true`},
			{"status=unresolved", `dead_letter_unresolved(status)`},
			{"tenant=acme&type=orders.refund", `tenant = 'acme' AND item_type = 'orders.refund'`},
			{"status=discarded", `status = 'discarded'`},
			{"status=replayed&tenant=acme", `status = 'replayed' AND tenant = 'acme'`},
			{"status=needs_reconciliation", `status = 'needs_reconciliation'`},
			{"status=quarantined&tenant=acme&type=search.index_update", `status = 'quarantined' AND tenant = 'acme' AND item_type = 'search.index_update'`},
		} {
			d := b.Do(t, oncall, "GET", "/deadletters?"+l.query, nil, nil).Doc(t)
			shown := byID(d, "deadletter-count")
			if shown.AttrOr("data-counted", "") != "true" {
				drift = append(drift, "list "+l.query+": not counted")
				continue
			}
			check("list "+l.query, number(text(shown)), count(l.where))
		}
		if len(drift) > 0 {
			return fmt.Errorf("%w: %s", wait.ErrNotYet, strings.Join(drift, "; "))
		}
		return nil
	})
}

var digits = regexp.MustCompile(`[0-9][0-9,]*`)

// number reads the first number of s ("1,234 dead letters" is 1234).
func number(s string) int64 {
	n, err := strconv.ParseInt(strings.ReplaceAll(digits.FindString(s), ",", ""), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
