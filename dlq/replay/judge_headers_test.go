package replay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// judged is what the page's verdict (QueueJudge) and the verdict on every
// header decoded in Go (QueueJudgeEveryHeader, as QueueJudge judged before
// and as a draft judges) make of ids, in one round trip.
func judged(t testing.TB, s *replay.Service, b *replayBundle, ids ...int64) (page, every []replaypolicy.Verdict) {
	t.Helper()
	page, every = make([]replaypolicy.Verdict, len(ids)), make([]replaypolicy.Verdict, len(ids))
	found, foundEvery := make([]bool, len(ids)), make([]bool, len(ids))
	lo, hi := time.Now().Add(-24*time.Hour), time.Now().Add(time.Hour)
	batch := &pgx.Batch{}
	for i, id := range ids {
		s.QueueJudge(batch, id, lo, hi, &page[i], &found[i])
		s.QueueJudgeEveryHeader(batch, id, lo, hi, &every[i], &foundEvery[i])
	}
	require.NoError(t, b.db.Pool.SendBatch(context.Background(), batch).Close())
	for i, id := range ids {
		require.True(t, found[i] && foundEvery[i], "dead letter %d not found", id)
	}
	return page, every
}

// TestQueueJudgeHeaderFactsAsEveryHeader: the page's verdict reads only
// what the rules judge of a dead letter's headers (the first header name
// NATS cannot send, the first value it would send changed, their bytes),
// computed by PostgreSQL; for headers of every shape a producer can send,
// it is the verdict judged on every header decoded in Go, field for field
// (the message's size and the header named included).
func TestQueueJudgeHeaderFactsAsEveryHeader(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	cases := []struct {
		name    string
		letter  testfactory.Letter
		check   string // the verdict's check
		names   string // the header the reason names, if any
		headers map[string][]string
	}{
		{name: "Plain"},
		{name: "SpaceInName", headers: map[string][]string{"Bad Name": {"v"}}, check: replaypolicy.CheckUnsendable, names: `"Bad Name"`},
		{name: "ColonInName", headers: map[string][]string{"a:b": {"v"}}, check: replaypolicy.CheckUnsendable, names: `"a:b"`},
		{name: "NonASCIIName", headers: map[string][]string{"Ünïcode": {"v"}}, check: replaypolicy.CheckUnsendable, names: `"Ünïcode"`},
		{name: "TabAndDELInName", headers: map[string][]string{"X\tY": {"v"}, "X\x7fZ": {"v"}}, check: replaypolicy.CheckUnsendable},
		{name: "GoLowersToASCII", headers: map[string][]string{"\u0130nats-x": {"v"}, "NAT\u017F-x": {"v"}, "\u212Aey": {"v"}}, check: replaypolicy.CheckUnsendable},
		{name: "NameNotText", headers: map[string][]string{"\xffname": {"a\rb"}}},
		{name: "EmptyName", headers: map[string][]string{"": {"a\rb"}}, check: replaypolicy.CheckUnsendable, names: "a header with an empty name"},
		{name: "EmptyNameThenBad", headers: map[string][]string{"": {"v"}, "B d": {"one\rtwo"}}, check: replaypolicy.CheckUnsendable, names: "a header with an empty name"},
		{name: "NameTheClientRefuses", headers: map[string][]string{"X-A": {"v"}, "a/b": {"v"}, "k=v": {"v"}}, check: replaypolicy.CheckUnsendable, names: `"a/b"`},
		{name: "LineBreakInValue", headers: map[string][]string{"X-Note": {"one\rtwo"}}, check: replaypolicy.CheckUnsendable, names: `"X-Note"`},
		{name: "LFInValue", headers: map[string][]string{"X-Note": {"one\ntwo"}}, check: replaypolicy.CheckUnsendable, names: `"X-Note"`},
		// A reader trims the blanks at a value's start only (nats.go, the
		// server): a line break past them, or a blank at the end, its
		// consumers read, and NATS sends otherwise (review round 36).
		{name: "BlanksAroundValue", headers: map[string][]string{"X-Note": {"\t \r\npadded\r\n "}}, check: replaypolicy.CheckUnsendable, names: `"X-Note"`},
		{name: "BlankAtTheEnd", headers: map[string][]string{"Idempotency-Key": {"k1 "}}, check: replaypolicy.CheckUnsendable, names: `"Idempotency-Key"`},
		{name: "BlanksAtTheStart", headers: map[string][]string{"X-Note": {" \tk1"}}},
		{name: "BinaryValueLineBreakInside", headers: map[string][]string{"X-Bin": {"\xff\r\nx"}}, check: replaypolicy.CheckUnsendable, names: `"X-Bin"`},
		{name: "BinaryValueLineBreakAround", headers: map[string][]string{"X-Bin": {"\n\r\x00\xfe \t\r"}}, check: replaypolicy.CheckUnsendable, names: `"X-Bin"`},
		{name: "BinaryValueBlanksAtTheStart", headers: map[string][]string{"X-Bin": {" \t\x00\xfe"}}},
		{name: "BinaryValueLFOnly", headers: map[string][]string{"X-Bin": {"\x00\n\x00"}}, check: replaypolicy.CheckUnsendable, names: `"X-Bin"`},
		{name: "DuplicateValues", headers: map[string][]string{"X-Dup": {"a", "b\rc", "d"}}, check: replaypolicy.CheckUnsendable, names: `"X-Dup"`},
		{name: "BadNameBeforeLineBreak", headers: map[string][]string{"A b": {"v"}, "B": {"x\ny"}}, check: replaypolicy.CheckUnsendable, names: `"A b"`},
		{name: "NotForwarded", headers: map[string][]string{"nats-x y": {"a\rb"}, "NATS-Rollup": {"all"}, "dLq-No te": {"a\nb"},
			"upstream-DLQ-Principal x": {"p\r"}, dlq.UpstreamPrefix + "Dlq-Replay-Of": {"1\n2"}}},
		{name: "UpstreamButNotDlq", headers: map[string][]string{"Upstream-Other x": {"v"}}, check: replaypolicy.CheckUnsendable, names: `"Upstream-Other x"`},
		{name: "LineBreakInMessageID", letter: testfactory.Letter{MsgID: "cr\rid"}, headers: map[string][]string{"X-Note": {"a\rb"}},
			check: replaypolicy.CheckUnsendable, names: `"Nats-Msg-Id"`},
		{name: "BrokerKeyTextInValue", headers: map[string][]string{"X-Note": {"Nats-Msg-IdNats-Msg-Id"}}, check: replaypolicy.CheckBrokerKeyText,
			names: `header "X-Note" holds the text "Nats-" in its value`},
		{name: "BrokerKeyTextInName", headers: map[string][]string{"X-Nats-Note": {"v"}}, check: replaypolicy.CheckBrokerKeyText,
			names: `header "X-Nats-Note" holds the text "Nats-" in its name`},
		{name: "BrokerKeyTextOtherCase", headers: map[string][]string{"X-Ref": {"see nATs-x", "NATS-MSG-ID"}, "X-nats-bridge": {"nats-bridge-17"}}},
		{name: "BrokerKeyTextBinaryValue", headers: map[string][]string{"X-Bin": {"\xffNats-Msg-Id\x00"}}, check: replaypolicy.CheckBrokerKeyText, names: `"X-Bin"`},
		{name: "BrokerKeyTextNotASCII", headers: map[string][]string{"X-Ref": {"Nat\u017F-x", "\xffNAT\u017F-"}}},
		{name: "BrokerKeyTextNotForwarded", headers: map[string][]string{"Nats-Expected-Stream": {"Nats-Msg-IdNats-Msg-Id"}, "Dlq-Note": {"Nats-"}}},
		{name: "BrokerKeyTextEmptyName", headers: map[string][]string{"": {"Nats-"}}, check: replaypolicy.CheckUnsendable, names: "a header with an empty name"},
		{name: "BrokerKeyTextInCorrelationID", letter: testfactory.Letter{CorrelationID: "Nats-Msg-IdNats-Msg-Id"}, headers: map[string][]string{"X-Note": {"Nats-"}},
			check: replaypolicy.CheckBrokerKeyText, names: `header "Dlq-Correlation-Id" holds the text "Nats-" in its value`},
		{name: "BrokerKeyTextInOperationID", letter: testfactory.Letter{OperationID: "op-Nats-1"}, check: replaypolicy.CheckBrokerKeyText, names: `"Dlq-Operation-Id"`},
		{name: "BrokerKeyTextInMessageID", letter: testfactory.Letter{MsgID: "Nats-id-1"}, check: replaypolicy.CheckBrokerKeyText,
			names: `the message id (header "Nats-Msg-Id")`},
		{name: "BrokerKeyTextAfterLineBreak", headers: map[string][]string{"X-Note": {"one\rNats-two"}}, check: replaypolicy.CheckUnsendable, names: `"X-Note"`},
		{name: "TooBig", letter: testfactory.Letter{Payload: []byte(strings.Repeat("p", int(b.nc.MaxPayload())-600))},
			headers: map[string][]string{"X-Pad": {strings.Repeat("h", 400)}}, check: replaypolicy.CheckUnsendable},
		{name: "JustFits", letter: testfactory.Letter{Payload: []byte(strings.Repeat("p", int(b.nc.MaxPayload())-2000))},
			headers: map[string][]string{"X-Pad": {strings.Repeat("h", 400)}}},
	}
	letters := make([]testfactory.Letter, len(cases))
	for i, c := range cases {
		l := c.letter
		if l.ItemType == "" {
			l.ItemType = "search.index_update"
		}
		if l.MsgID == "" {
			l.MsgID = "judge-" + c.name
		}
		l.Headers = c.headers
		letters[i] = l
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	page, every := judged(t, b.replays, b, ids...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, every[i], page[i])
			assert.Equal(t, c.check, page[i].Check, page[i].Reason)
			assert.Contains(t, page[i].Reason, c.names)
		})
	}
}

// TestQueueJudgeHeaderFactsAsEveryHeaderRandom holds the page's verdict to
// the verdict on every header decoded in Go for dead letters whose headers
// are drawn at random from the shapes that decide it (names NATS cannot
// send, line breaks inside and around values, binary values, the headers a
// replay does not forward, in any case, duplicates), many to a dead letter.
func TestQueueJudgeHeaderFactsAsEveryHeaderRandom(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	letters := randomHeaderLetters(rand.New(rand.NewPCG(20261202, 55203)), "random", 200)
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	page, every := judged(t, b.replays, b, ids...)
	refused := 0
	for i := range ids {
		assert.Equal(t, every[i], page[i], "dead letter %d, headers %q", ids[i], letters[i].Headers)
		if page[i].Outcome != replaypolicy.Go {
			refused++
		}
	}
	assert.Greater(t, refused, 20, "the shapes that refuse a replay were drawn")
	assert.Less(t, refused, 180, "the shapes that do not were drawn")
}

// randomHeaderLetters are n dead letters (message ids prefix-0 on) whose
// headers rng draws from the shapes that decide a verdict (names NATS
// cannot send, line breaks inside and around values, binary values, the
// broker's key text, the headers a replay does not forward, in any case,
// duplicates), many to a dead letter, and some of whose ids NATS would
// send changed or hold the broker's key text.
func randomHeaderLetters(rng *rand.Rand, prefix string, n int) []testfactory.Letter {
	names := []string{"X-A", "x-a", "X-B", "Bad Name", "a:b", "", "\xffname", "Ünï", "nats-x", "NATS-MSG-ID", "Nats-Expected-Stream",
		"dlq-operation-id", "DLQ-Note x", "Dlq-Principal", "upstream-dlq-principal", "Upstream-Dlq-Replay-Of", "Upstream-Other", "X\x7f",
		"\u0130nats-x", "Z", "X-Nats-Ref", "X-NAT\u017F-Ref"}
	values := []string{"v", "", "one\rtwo", "one\ntwo", "\tpadded\r", " \r\n", "\xff", "\xff\rx", "\x00\n", "\n\x00\n", "a\x00b", strings.Repeat("w", 300),
		"Nats-Msg-IdNats-Msg-Id", "\xffnAtS-\x00", "\xffNats-\x00", "NAT\u017F-"}
	letters := make([]testfactory.Letter, n)
	for i := range letters {
		hs := map[string][]string{}
		for range rng.IntN(8) {
			n := names[rng.IntN(len(names))]
			hs[n] = append(hs[n], values[rng.IntN(len(values))])
		}
		letters[i] = testfactory.Letter{ItemType: "search.index_update", MsgID: fmt.Sprintf("%s-%d", prefix, i), Headers: hs}
		if rng.IntN(10) == 0 {
			letters[i].MsgID += "\r"
		}
		if rng.IntN(10) == 0 {
			letters[i].OperationID = "op\n" + letters[i].MsgID
		}
		if rng.IntN(20) == 0 {
			letters[i].CorrelationID = "Nats-Msg-Id"
		}
	}
	return letters
}

// TestRequestFactsHeaderFactsAsEveryHeader: a request's items are judged
// (requestFacts: its page and its confirm page on every view, its
// approval, its submit) on what PostgreSQL reads of the headers they send
// (headerFactsOf over replay_items.headers), never on the headers
// themselves (TestRevLimits23RequestPageReadsEveryItemsHeaders). For
// headers of every shape a producer can send (the broker's key text, names
// NATS cannot send, values it would send changed, big ones, a conflicting
// identity header, and many drawn at random from such shapes), each item
// is given to the rules as it was when every header was decoded in Go
// (sendFacts), field for field: the live items and those left out alike,
// and again once the items' rows hold their dead letters' headers as
// received, those a replay does not forward among them.
func TestRequestFactsHeaderFactsAsEveryHeader(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	big := strings.Repeat("b", 200<<10)
	letters := []testfactory.Letter{
		{MsgID: "req-plain"},
		{MsgID: "req-trace", Headers: map[string][]string{"X-Trace": {"t-1"}, "x-trace": {"t-2"}}},
		{MsgID: "req-keytext-value", Headers: map[string][]string{"X-Note": {"Nats-Msg-IdNats-Msg-Id"}}},
		{MsgID: "req-keytext-name", Headers: map[string][]string{"X-Nats-Note": {"v"}}},
		{MsgID: "req-keytext-binary", Headers: map[string][]string{"X-Bin": {"\xffNats-Msg-Id\x00"}}},
		{MsgID: "req-keytext-correlation", CorrelationID: "Nats-Msg-Id", Headers: map[string][]string{"X-Note": {"Nats-"}}},
		{MsgID: "req-bad-name", Headers: map[string][]string{"Bad Name": {"v"}, "X-A": {"a\rb"}}},
		{MsgID: "req-empty-name", Headers: map[string][]string{"": {"Nats-"}}},
		{MsgID: "req-lowers-to-ascii", Headers: map[string][]string{"\u0130nats-x": {"v"}, "\u212Aey": {"v"}}},
		{MsgID: "req-altered", Headers: map[string][]string{"X-Note": {"one\rtwo"}}},
		{MsgID: "req-altered-binary", Headers: map[string][]string{"X-Bin": {"\x00\n\x00"}}},
		{MsgID: "req-blanks-around", Headers: map[string][]string{"X-Note": {"\t \r\npadded\r\n "}}},
		{MsgID: "req-blank-at-end", Headers: map[string][]string{"Idempotency-Key": {"k1 "}}},
		{MsgID: "req-tab-at-end-binary", Headers: map[string][]string{"X-Bin": {"\xffk1\t"}}},
		{MsgID: "req-blanks-at-start", Headers: map[string][]string{"X-Note": {" \tk1"}}},
		{MsgID: "req-big", Headers: map[string][]string{"X-Big-1": {big}, "X-Big-2": {big, big}}},
		{MsgID: "req-too-big", Payload: []byte(strings.Repeat("p", int(b.nc.MaxPayload())-600)), Headers: map[string][]string{"X-Pad": {strings.Repeat("h", 400)}}},
		{MsgID: "req-conflicting", Headers: map[string][]string{dlq.HeaderOperationID: {"op-a", "op-b"}}},
		{MsgID: "req-not-forwarded", Headers: map[string][]string{"nats-x y": {"a\rb"}, "Dlq-Note": {"Nats-"}, "Status": {"409"},
			"upstream-DLQ-Principal x": {"p\r"}, "NATS-Rollup": {"all"}}},
	}
	for i := range letters {
		letters[i].ItemType = "search.index_update"
	}
	named := map[string]int{} // the case's index by message id
	for i, l := range letters {
		named[l.MsgID] = i
	}
	letters = append(letters, randomHeaderLetters(rand.New(rand.NewPCG(20261205, 23)), "req-random", 100)...)
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	_, drafts := b.draft(t, oncall, ids...)
	table := b.policy.Load()

	agree := func(t *testing.T) map[int64]replaypolicy.Item {
		t.Helper()
		all := map[int64]replaypolicy.Item{}
		for _, d := range drafts {
			judged, every, err := b.replays.RequestItemsJudged(ctx, d.ID)
			require.NoError(t, err)
			require.Len(t, judged, len(every))
			for id, it := range every {
				assert.Equal(t, it, judged[id], "dead letter %d: its facts from PostgreSQL are those sendFacts reads of every header", id)
				assert.Equal(t, replaypolicy.JudgeItem(table, it, replaypolicy.AtRequest), replaypolicy.JudgeItem(table, judged[id], replaypolicy.AtRequest))
				all[id] = judged[id]
			}
		}
		require.Len(t, all, len(ids), "every item judged, those left out too")
		return all
	}
	item := func(items map[int64]replaypolicy.Item, msgID string) replaypolicy.Send {
		return items[ids[named[msgID]]].Send
	}
	t.Run("AsDrafted", func(t *testing.T) {
		items := agree(t)
		// The shapes reached the facts they decide.
		assert.Equal(t, "X-Note", item(items, "req-keytext-value").BrokerKeyText)
		assert.Equal(t, "X-Nats-Note", item(items, "req-keytext-name").BrokerKeyText)
		assert.Equal(t, "X-Bin", item(items, "req-keytext-binary").BrokerKeyText)
		assert.Equal(t, dlq.HeaderCorrelationID, item(items, "req-keytext-correlation").BrokerKeyText, "the ids first")
		assert.Equal(t, "Bad Name", item(items, "req-bad-name").BadHeader)
		assert.True(t, item(items, "req-empty-name").HasBadHeader)
		assert.True(t, item(items, "req-lowers-to-ascii").HasBadHeader)
		assert.Equal(t, "X-Note", item(items, "req-altered").AlteredHeader)
		assert.Equal(t, "X-Bin", item(items, "req-altered-binary").AlteredHeader)
		// A reader trims blanks at a value's start only: those at its end,
		// and a line break anywhere past them, its consumers read, and
		// NATS would send without them (review round 36).
		assert.Equal(t, "X-Note", item(items, "req-blanks-around").AlteredHeader)
		assert.Equal(t, "Idempotency-Key", item(items, "req-blank-at-end").AlteredHeader)
		assert.Equal(t, "X-Bin", item(items, "req-tab-at-end-binary").AlteredHeader)
		assert.Empty(t, item(items, "req-blanks-at-start").AlteredHeader)
		assert.Greater(t, item(items, "req-big").Size, int64(3*len(big)), "every big header's bytes counted")
		assert.Greater(t, item(items, "req-too-big").Size, b.nc.MaxPayload())
		assert.NotEmpty(t, items[ids[named["req-conflicting"]]].Conflicting)
		nf := item(items, "req-not-forwarded")
		assert.False(t, nf.HasBadHeader || nf.AlteredHeader != "" || nf.BrokerKeyText != "", "the headers a replay does not forward are not judged: %+v", nf)
	})
	t.Run("RowsHoldingTheHeadersAsReceived", func(t *testing.T) {
		// A draft keeps the headers a replay forwards; whatever a row holds,
		// PostgreSQL reads of it what sendFacts does.
		reqs := make([]int64, len(drafts))
		for i, d := range drafts {
			reqs[i] = d.ID
		}
		tag, err := b.db.Pool.Exec(ctx, `UPDATE replay_items i SET headers = d.headers FROM dead_letters d
            WHERE d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at AND i.request_id = ANY($1) AND i.headers <> d.headers`, reqs)
		require.NoError(t, err)
		require.Positive(t, tag.RowsAffected(), "some rows hold fewer headers than their dead letters")
		agree(t)
	})
}

// junk is n headers of 90 bytes each that NATS sends as they are.
func junk(n int) map[string][]string {
	hs := make(map[string][]string, n)
	for i := range n {
		hs[fmt.Sprintf("X-Junk-%05d", i)] = []string{strings.Repeat("<&>", 30)}
	}
	return hs
}

// TestQueueJudgeSameVerdictWithThousandsOfJunkHeaders: a dead letter with
// thousands of headers a replay sends on as they are gets the verdict of
// the same dead letter without them, whatever its class and contract
// headers; one bad header among them (a name NATS cannot send, a line
// break inside a value) still refuses it, and the reason names it.
func TestQueueJudgeSameVerdictWithThousandsOfJunkHeaders(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	letters := []testfactory.Letter{
		{ItemType: "search.index_update", MsgID: "junk-rebuildable", CorrelationID: "corr-1"},
		{ItemType: "analytics.event", MsgID: "junk-dedupe"},
		{ItemType: "email.send", MsgID: "junk-same-op", OperationID: "op-1"},
		{ItemType: "email.send", MsgID: "junk-same-op-no-id"}, // refused: no operation id
		{ItemType: "accounts.permission_grant", MsgID: "junk-revalidate", Principal: "user:1"},
		{ItemType: "accounts.permission_grant", MsgID: "junk-revalidate-no-principal"},
		{ItemType: "orders.refund", MsgID: "junk-manual", Class: string(dlq.ClassStaleVersion)},
		{ItemType: "search.index_update", MsgID: "junk-other-subject", Subject: "elsewhere.acme.x"},
	}
	var all []testfactory.Letter
	for _, l := range letters {
		with := l
		with.MsgID += "-with-junk"
		with.Headers = junk(3000)
		all = append(all, l, with)
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, all...)
	page, every := judged(t, b.replays, b, ids...)
	for i, l := range letters {
		without, with := page[2*i], page[2*i+1]
		t.Run(l.MsgID, func(t *testing.T) {
			assert.Equal(t, every[2*i+1], with)
			assert.Equal(t, without.Outcome, with.Outcome)
			assert.Equal(t, without.Check, with.Check)
			assert.Equal(t, without.Reason, with.Reason)
			assert.Equal(t, without.Class, with.Class)
			assert.Equal(t, without.Rule, with.Rule)
			assert.Equal(t, without.Classing, with.Classing)
			// The replay names its dead letter (Dlq-Replay-Of): the two ids
			// may differ in digits.
			ofDigits := len(strconv.FormatInt(ids[2*i+1], 10)) - len(strconv.FormatInt(ids[2*i], 10))
			assert.Equal(t, without.Item.Send.Size+int64(len("-with-junk")+3000*(len("X-Junk-00000")+90+4)+ofDigits), with.Item.Send.Size,
				"every junk header's bytes counted (and the longer message id's)")
		})
	}

	badName, lineBreak := junk(3000), junk(3000)
	badName["X-Junk-02000 "] = []string{"v"}
	badName["X-Junk-02999 "] = []string{"v"}
	lineBreak["X-Junk-01500"] = []string{"one\r\ntwo"}
	bad := testfactory.DeadLetters(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "junk-bad-name", Headers: badName},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "junk-line-break", Headers: lineBreak})
	page, every = judged(t, b.replays, b, bad...)
	assert.Equal(t, every, page)
	assert.Equal(t, replaypolicy.CheckUnsendable, page[0].Check)
	assert.Contains(t, page[0].Reason, `header "X-Junk-02000 " cannot be sent over NATS`)
	assert.Equal(t, replaypolicy.CheckUnsendable, page[1].Check)
	assert.Contains(t, page[1].Reason, `header "X-Junk-01500" holds a line break inside its value`)
}

// TestQueueJudgeOddCaseAndDuplicateContractHeaders: the contract's headers
// are read at ingest (the stored columns the verdict reads: a header in
// another case is read as the contract's, the first of several values
// is), and a replay forwards no Dlq-* or Nats-* header in any case, so
// their names and line breaks do not refuse it: the page's verdict on
// such dead letters is the one judged on every header.
func TestQueueJudgeOddCaseAndDuplicateContractHeaders(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "email.send", MsgID: "odd-1", Headers: map[string][]string{ // no operation id but in lower case
			"dlq-operation-id": {"op-lower"}, "DLQ-PRINCIPAL": {"p\r\nq"}}},
		testfactory.Letter{ItemType: "email.send", MsgID: "odd-2", Headers: map[string][]string{
			dlq.HeaderOperationID: {"op-a", "op-b\r"}}},
		testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "odd-3", Headers: map[string][]string{
			dlq.HeaderPrincipal: {"user:1", "user:2"}, "dlq-original-subject": {"other subject\n"}, "nats-msg-id": {"x\ry"}}},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "odd-4", Headers: map[string][]string{
			"Dlq-Original-Msg-Id": {"odd-4", "odd-4b"}, "dLQ-eRROR": {"a\nb"}, "Nats-Msg-Id": {"dup\n"}}},
	)
	page, every := judged(t, b.replays, b, ids...)
	assert.Equal(t, every, page)
	for i, v := range page {
		assert.NotContains(t, v.Reason, "holds a line break", "dead letter %d: Dlq-*/Nats-* headers are not forwarded", ids[i])
		assert.Empty(t, v.Item.Send.BadHeader)
	}
	assert.Equal(t, "op-lower", page[0].Item.OperationID, "a contract header in another case is read as the contract's")
	assert.Equal(t, replaypolicy.Go, page[0].Outcome, page[0].Reason)
	assert.Equal(t, "op-a", page[1].Item.OperationID, "of a contract header sent twice, the first value is read")
	assert.Equal(t, "user:1", page[2].Item.Principal)
}

// judgedOnce judges dead letter id for its page, alone in its round trip.
func judgedOnce(t testing.TB, b *replayBundle, id int64) replaypolicy.Verdict {
	t.Helper()
	var v replaypolicy.Verdict
	var found bool
	batch := &pgx.Batch{}
	b.replays.QueueJudge(batch, id, time.Now().Add(-24*time.Hour), time.Now().Add(time.Hour), &v, &found)
	require.NoError(t, b.db.Pool.SendBatch(context.Background(), batch).Close())
	require.True(t, found)
	return v
}

// BenchmarkQueueJudge reports the bytes judging one dead letter for its
// page allocates (B/op), without extra headers and with 10,000 of 90
// bytes: they should be about the same.
func BenchmarkQueueJudge(b *testing.B) {
	for _, n := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("headers=%d", n), func(b *testing.B) {
			rb := benchReplaySetup(b)
			id := testfactory.DeadLetter(b, rb.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "bench", Headers: junk(n)})
			judgedOnce(b, rb, id)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				judgedOnce(b, rb, id)
			}
		})
	}
}
