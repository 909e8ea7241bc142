//go:build screens

package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestServeScreens serves a console with a little of everything (dead
// letters of several tenants, types and groups, replay requests, audit
// rows) for looking at its screens with scripts/screenshot.sh, which
// cannot sign in: one port per person, from $SCREENS_PORT (default 18140),
// forwards to the console with that person's session (oncall, viewer,
// approver, auditor, admin). It serves for $SCREENS_FOR (default 20m). It
// is a tool, not a test: it builds only with -tags screens.
func TestServeScreens(t *testing.T) {
	base := 18140
	if v := os.Getenv("SCREENS_PORT"); v != "" {
		var err error
		base, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	serveFor := 20 * time.Minute
	if v := os.Getenv("SCREENS_FOR"); v != "" {
		var err error
		serveFor, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	pool := b.DB.OwnerPool
	now := time.Now()
	var letters []testfactory.Letter
	for i := range 57 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503 from payments-gateway",
			Stack: "payments.Refund\n\tpayments/refund.go:88\nconsumer.Handle\n\tconsumer/handle.go:41", At: now.Add(-time.Duration(i) * 7 * time.Minute)})
	}
	for i := range 12 {
		letters = append(letters, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", Class: "transient", Error: "index shard 4 unavailable",
			At: now.Add(-time.Duration(i) * 90 * time.Minute)})
	}
	for i := range 6 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "notifications.customer_lifecycle.email_send_with_template_rendering",
			OperationID: fmt.Sprintf("op-%d", i), Error: "template <b>welcome</b> missing variable {{.Name}}", Class: "schema_invalid",
			At: now.Add(-time.Duration(i) * 20 * time.Hour)})
	}
	for i := range 4 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "email.send", OperationID: fmt.Sprintf("mail-%d", i),
			MsgID: fmt.Sprintf("mail-msg-%d", i), Error: "smtp 451 try again later", Class: "transient", At: now.Add(-time.Duration(i) * 3 * time.Minute)})
	}
	// A producer's dead letter with more headers than its page shows.
	many := map[string][]string{}
	for i := range 520 {
		many[fmt.Sprintf("X-Trace-%03d", i)] = []string{fmt.Sprintf("span-%d", i)}
	}
	// And an error, a stack trace and an operation id longer than it shows.
	letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "many-headers", Headers: many,
		OperationID: "op-" + strings.Repeat("0123456789abcdef", 100),
		Error:       "refund failed: header table too large: " + strings.Repeat("<tr><td>X-Trace</td></tr> ", 4000),
		Stack:       strings.Repeat("payments.(*Refunder).Refund(...)\n\t/srv/payments/refund.go:88\n", 3000), At: now.Add(-2 * time.Minute)})
	ids := testfactory.DeadLetters(t, pool, letters...)
	// A producer's dead letter whose values hide or reorder text ("Trojan
	// Source"): a right-to-left override, zero-width spaces, isolates.
	hidden := testfactory.DeadLetter(t, pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send",
		Subject: "app.acme.email.\u202ednes", MsgID: "mail-\u202e77-\u2066x", OperationID: "send-\u200b77",
		Error: "refund \u202edeliaf\u200b for \u2066order 7\u2069\nat mailer.Send (mailer.go:12)\u200b\u200b\u200b",
		Class: "transient", Headers: map[string][]string{"X-Note": {"a\u2066b\u200bc\u202e"}},
		Payload: []byte("{\"to\":\"ops\u202e@example.com\",\"note\":\"\u200b\"}"), At: now.Add(-time.Minute)})

	// A hostile producer's dead letter: a megabyte of error and of stack
	// trace, 10,000 headers, a megabyte of binary payload (hostileLetter).
	hostile := testfactory.DeadLetter(t, pool, hostileLetter("hostile-screens"))

	// What people recorded about two groups: a ticket link, and one saved
	// before the rule it breaks (the console's own export by its IPv4
	// number), which the pages show as text, not linked.
	for id, ticket := range map[int64]string{ids[0]: "https://tickets.example.com/browse/PAY-12",
		ids[57]: "http://0x7f.0.0.1/audit/export.jsonl?action=deadletter.download"} {
		_, err := pool.Exec(context.Background(), `INSERT INTO group_triage (tenant, fingerprint, note, ticket_url, updated_by)
    SELECT tenant, fingerprint, 'tracked in the ticket', $2, 'oncall' FROM dead_letters WHERE id = $1`, id, ticket)
		require.NoError(t, err)
	}

	oncallC, oncall := b.SignIn(t, "acme:oncall", "globex:oncall")
	viewerC, _ := b.SignIn(t, "acme:viewer")
	approverC, _ := b.SignIn(t, "acme:approver", "globex:approver")
	auditorC, _ := b.SignIn(t, "*:auditor")
	adminC, _ := b.SignIn(t, "*:admin", "acme:oncall")
	mail := ids[len(ids)-5 : len(ids)-1]
	testfactory.Request(t, b.Replays, oncall.Actor, mail[:2], replay.SubmitInput{Reason: "smtp relay fixed"})
	testfactory.Draft(t, b.Replays, oncall.Actor, ids[0], ids[1])
	testfactory.Request(t, b.Replays, oncall.Actor, []int64{hidden}, replay.SubmitInput{Reason: "relay fixed"})
	// A request done with problems whose items wait for a person: the
	// approver may still stop it.
	problems := testfactory.Request(t, b.Replays, oncall.Actor, ids[57:60], replay.SubmitInput{Reason: "shard 4 back"})
	testfactory.NeedsPerson(t, pool, problems.ID)
	t.Logf("request %d is done with problems", problems.ID)
	// And a refund done with problems: its item needed two approvers, so
	// no one may republish it alone and there is nothing to stop.
	refund := testfactory.Request(t, b.Replays, oncall.Actor, ids[2:3], replay.SubmitInput{Reason: "payments gateway back"})
	phrase, err := b.Replays.ConfirmationFor(context.Background(), refund.ID)
	require.NoError(t, err)
	for range 2 {
		c, _ := b.SignIn(t, "acme:approver")
		resp := b.Do(t, c, "POST", fmt.Sprintf("/replay/requests/%d/approve", refund.ID), url.Values{"intent": {refund.IntentHex()}, "version": {strconv.Itoa(refund.Version)}, "confirmation": {phrase}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	testfactory.NeedsPerson(t, pool, refund.ID)
	t.Logf("request %d (a refund, two approvers) is done with problems", refund.ID)

	// A refund whose one approval expired: the page says why it no longer
	// counts.
	lapsed := testfactory.Request(t, b.Replays, oncall.Actor, ids[3:4], replay.SubmitInput{Reason: "payments gateway back"})
	phrase, err = b.Replays.ConfirmationFor(context.Background(), lapsed.ID)
	require.NoError(t, err)
	resp := b.Do(t, approverC, "POST", fmt.Sprintf("/replay/requests/%d/approve", lapsed.ID), url.Values{"intent": {lapsed.IntentHex()}, "version": {strconv.Itoa(lapsed.Version)}, "confirmation": {phrase}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	for _, q := range []string{
		`UPDATE replay_requests SET created_at = created_at - interval '6 hours', submitted_at = submitted_at - interval '6 hours' WHERE id = $1`,
		`UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours' WHERE request_id = $1`,
	} {
		_, err = pool.Exec(context.Background(), q, lapsed.ID)
		require.NoError(t, err)
	}
	t.Logf("request %d (a refund) has an expired approval", lapsed.ID)

	// A dead letter whose error class makes a replay of it stricter than
	// its rule: its policy card says so.
	raised := testfactory.DeadLetter(t, pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "raised-policy",
		Class: "policy", Principal: "user:7", Error: "not allowed on index acme-main", At: now.Add(-5 * time.Minute)})
	// A rebuildable request that waits only for its edit's approver: its
	// Undo edit approves and publishes it, and its form says so.
	edited := testfactory.DeadLetter(t, pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "undo-publishes",
		Payload: []byte(`{"doc":"sku-9","fields":["title","price"]}`), Error: "index shard 4 unavailable", At: now.Add(-4 * time.Minute)})
	batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, edited)
	require.NoError(t, b.Replays.EditPayload(context.Background(), drafts[0].ID, edited, oncall.Actor,
		replay.PayloadEdit{Payload: []byte(`{"doc":"sku-10","fields":["title","price"]}`), Reason: "the sku was wrong"}, quarantine.RequestMeta{}))
	undoable, err := b.Replays.Submit(context.Background(), batch, oncall.Actor, replay.SubmitInput{Reason: "reindex after the shard came back"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	t.Logf("dead letter %d: its policy card is raised by its error class; request %d: its Undo edit publishes", raised, undoable[0].ID)

	// Two edited items of a draft, one of which another request took:
	// the submit left it out, holding its edit, which its own form offers
	// to undo; submitted again, the request shows the same form.
	_, taker := b.SignIn(t, "acme:oncall")
	for n, resubmit := range []bool{false, true} {
		var pair []int64
		for i, doc := range []string{"sku-11", "sku-12"} {
			pair = append(pair, testfactory.DeadLetter(t, pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
				MsgID: fmt.Sprintf("left-out-%d-%d", n, i), Payload: []byte(`{"doc":"` + doc + `"}`), Error: "index shard 4 unavailable", At: now.Add(-3 * time.Minute)}))
		}
		batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, pair...)
		for _, dl := range pair {
			require.NoError(t, b.Replays.EditPayload(context.Background(), drafts[0].ID, dl, oncall.Actor,
				replay.PayloadEdit{Payload: []byte(`{"doc":"sku-0"}`), Reason: "the sku was wrong"}, quarantine.RequestMeta{}))
		}
		testfactory.Request(t, b.Replays, taker.Actor, pair[:1], replay.SubmitInput{Reason: "taken first"})
		_, err := b.Replays.Submit(context.Background(), batch, oncall.Actor, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
		require.Error(t, err, "the submit leaves the taken item out")
		if resubmit {
			_, err = b.Replays.Submit(context.Background(), batch, oncall.Actor, replay.SubmitInput{Reason: "reindex the other one"}, quarantine.RequestMeta{})
			require.NoError(t, err)
			t.Logf("request %d: an item left out holding an edit", drafts[0].ID)
		} else {
			t.Logf("/replay/batches/%s: a draft with an item left out holding an edit", batch)
		}
	}

	// A replay chain wider than its page shows (a producer copying a
	// replay's identity onto its messages): the page says there is more.
	var wide []testfactory.Letter
	for i := range 103 {
		wide = append(wide, testfactory.Letter{Tenant: "acme", ItemType: "inventory.reserve", Error: "reservation expired",
			At: now.Add(-72*time.Hour + time.Duration(i)*time.Minute)})
	}
	chain := testfactory.DeadLetters(t, pool, wide...)
	_, err = pool.Exec(context.Background(), `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = ANY($2)`, chain[0], chain[1:])
	require.NoError(t, err)
	t.Logf("dead letter %d: a replay chain wider than its page shows", chain[0])

	// A replay chain deeper than its page shows: one message replayed and
	// back 52 times; the newest's page says the chain goes back further.
	var deep []testfactory.Letter
	for i := range dlq.MaxChain + 3 {
		deep = append(deep, testfactory.Letter{Tenant: "acme", ItemType: "inventory.reserve", Error: "reservation expired again",
			At: now.Add(-48*time.Hour + time.Duration(i)*time.Minute)})
	}
	deepIDs := testfactory.DeadLetters(t, pool, deep...)
	for i := 1; i < len(deepIDs); i++ {
		_, err = pool.Exec(context.Background(), `UPDATE dead_letters SET replay_of = $1, generation = $2 WHERE id = $3`, deepIDs[i-1], i, deepIDs[i])
		require.NoError(t, err)
	}
	t.Logf("dead letter %d: a replay chain deeper than its page shows", deepIDs[len(deepIDs)-1])

	people := []struct {
		name   string
		client *http.Client
	}{{"oncall", oncallC}, {"viewer", viewerC}, {"approver", approverC}, {"auditor", auditorC}, {"admin", adminC}}
	target, err := url.Parse(b.URL())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), serveFor)
	defer cancel()
	for i, p := range people {
		cookie := b.SessionCookie(t, p.client)
		proxy := httputil.NewSingleHostReverseProxy(target)
		director := proxy.Director
		proxy.Director = func(r *http.Request) {
			director(r)
			r.Host = target.Host
			r.AddCookie(cookie)
			if r.Method == http.MethodPost {
				r.Header.Set("Origin", b.URL())
				r.Header.Set("Sec-Fetch-Site", "same-origin")
			}
		}
		addr := fmt.Sprintf("127.0.0.1:%d", base+i)
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
		t.Logf("%s: http://%s/", p.name, addr)
	}
	t.Logf("dead letters %d..%d (%d has 526 headers and cut texts, %d hidden characters, %d is hostile); serving for %s",
		ids[0], hostile, ids[len(ids)-1], hidden, hostile, serveFor)
	<-ctx.Done()
}
