package dlq

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func received(subject string, h map[string][]string, data string) Received {
	return Received{Subject: subject, Header: h, Data: []byte(data), Stream: "DLQ", Seq: 42, Time: t0}
}

func fullHeaders() map[string][]string {
	return map[string][]string{
		HeaderOriginalSubject: {"app.acme.email.send"},
		HeaderOriginalMsgID:   {"msg-123"},
		HeaderOperationID:     {"op-9"},
		HeaderTenant:          {"acme"},
		HeaderItemType:        {"email.send"},
		HeaderError:           {"smtp 550: mailbox unavailable"},
		HeaderErrorClass:      {"permanent"},
		HeaderStack:           {"main.send()\n\t/app/send.go:42 +0x1d"},
		HeaderAttempts:        {"5"},
		HeaderFirstFailedAt:   {"2026-11-29T09:00:00Z"},
		HeaderLastFailedAt:    {"2026-11-29T09:59:59.5Z"},
		HeaderConsumer:        {"mailer"},
		HeaderCorrelationID:   {"corr-1"},
		HeaderPrincipal:       {"user:42"},
		"X-Custom":            {"a", "b"},
	}
}

func TestParseDLQ(t *testing.T) {
	t.Parallel()
	t.Run("FullContract", func(t *testing.T) {
		r := ParseDLQ("dlq", received("dlq.acme.email.send", fullHeaders(), `{"to":"x"}`))
		assert.Empty(t, r.MalformedReasons)
		assert.Equal(t, "acme", r.Tenant)
		assert.Equal(t, "email.send", r.ItemType)
		assert.Equal(t, "app.acme.email.send", r.OriginalSubject)
		assert.Equal(t, "msg-123", r.MsgID)
		assert.False(t, r.MsgIDDerived)
		assert.Equal(t, "op-9", r.OperationID)
		assert.Equal(t, ClassPermanent, r.ErrorClass)
		assert.Equal(t, int32(5), *r.Attempts)
		assert.Equal(t, time.Date(2026, 11, 29, 9, 59, 59, 5e8, time.UTC), *r.LastFailedAt)
		assert.Equal(t, "user:42", r.Principal)
		assert.Equal(t, "mailer", r.Consumer)
		assert.Equal(t, "corr-1", r.CorrelationID)
		assert.Equal(t, t0, r.DeadLetteredAt)
		assert.Equal(t, "DLQ", r.SourceStream)
		assert.Equal(t, uint64(42), r.SourceSeq)
		back, err := DecodeHeaders(r.Headers)
		require.NoError(t, err)
		assert.Equal(t, fullHeaders(), back)
	})

	// Header names are case-sensitive in NATS; a client or gateway that
	// sends them in lower case still has its dead letter read, flagged.
	t.Run("ContractNamesInOtherCase", func(t *testing.T) {
		sent := map[string][]string{}
		for k, vs := range fullHeaders() {
			sent[strings.ToLower(k)] = vs
		}
		sent[HeaderOperationID] = []string{"op-exact"} // spelled as the contract does: it wins
		sent["DLQ-OPERATION-ID"] = []string{"op-shouting"}
		sent["nats-msg-id"] = []string{"not-jetstream's"}
		r := ParseDLQ("dlq", received("dlq.acme.email.send", sent, `{"to":"x"}`))
		assert.Equal(t, "app.acme.email.send", r.OriginalSubject)
		assert.Equal(t, "msg-123", r.MsgID)
		assert.False(t, r.MsgIDDerived)
		assert.Equal(t, "op-exact", r.OperationID)
		assert.Equal(t, ClassPermanent, r.ErrorClass)
		assert.Equal(t, "main.send()\n\t/app/send.go:42 +0x1d", r.Stack)
		assert.Equal(t, int32(5), *r.Attempts)
		assert.Equal(t, "user:42", r.Principal)
		assert.Contains(t, r.Flags, "header_name_case:original_subject")
		assert.Contains(t, r.Flags, "header_name_case:msg_id")
		assert.NotContains(t, r.Flags, "header_name_case:operation_id", "the exact spelling was sent too")
		assert.NotContains(t, r.Flags, "missing:original_subject")
		assert.Contains(t, strings.Join(r.MalformedReasons, "\n"), `Dlq-Original-Subject sent as "dlq-original-subject", read all the same`)
		back, err := DecodeHeaders(r.Headers)
		require.NoError(t, err)
		assert.Equal(t, sent, back, "every header is stored as it was sent")

		// Two other spellings of one header: read in the order of their names.
		r = ParseDLQ("dlq", received("dlq.acme.email.send", map[string][]string{"dlq-error": {"second"}, "DLQ-ERROR": {"first"}}, ""))
		assert.Equal(t, "first\nsecond", r.Error)
	})

	t.Run("PartReadBlockUnavailable", func(t *testing.T) {
		// The client read the block in part (it skips what it cannot
		// read) and the stream's copy could not be read: the headers it
		// read are kept, and the flag says so, not that they are missing.
		m := received("dlq.acme.email.send", fullHeaders(), `{}`)
		m.HeaderBlockErr = errors.New("read DLQ #42 from the stream: message not found")
		r := ParseDLQ("dlq", m)
		assert.Equal(t, []string{"header_block_unavailable"}, r.Flags)
		assert.Contains(t, r.MalformedReasons[0], "the headers it read are kept")
		assert.Equal(t, "app.acme.email.send", r.OriginalSubject)
	})

	cases := []struct {
		name       string
		subject    string
		headers    map[string][]string
		wantTenant string
		wantType   string
		wantReason string // substring of one malformed reason; empty means none
		check      func(t *testing.T, r Record)
	}{
		{
			name: "HeaderCannotMoveTenant", subject: "dlq.acme.email.send",
			headers:    map[string][]string{HeaderTenant: {"globex"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "email.send", wantReason: `Dlq-Tenant "globex" disagrees`,
		},
		{
			name: "ItemTypeFromHeaderWhenSubjectHasNone", subject: "dlq.acme",
			headers:    map[string][]string{HeaderItemType: {"email.send"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "email.send", wantReason: "has no item type; taken from",
		},
		{
			name: "NoHeadersAtAll", subject: "dlq.acme.orders.refund", headers: nil,
			wantTenant: "acme", wantType: "orders.refund", wantReason: "Dlq-Original-Subject is missing",
			check: func(t *testing.T, r Record) {
				assert.Equal(t, "DLQ:42@2026-11-29T10:00:00Z", r.MsgID, "where and when the DLQ stream stored it")
				assert.True(t, r.MsgIDDerived)
				assert.Equal(t, ClassUnclassified, r.ErrorClass)
				assert.Nil(t, r.Attempts)
			},
		},
		{
			name: "GarbageClass", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderErrorClass: {"kaboom"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "x", wantReason: `Dlq-Error-Class "kaboom" is not one of`,
			check: func(t *testing.T, r Record) { assert.Equal(t, ClassUnclassified, r.ErrorClass) },
		},
		{
			name: "GarbageAttempts", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderAttempts: {"-3"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "x", wantReason: "not a whole number",
		},
		{
			name: "GarbageTime", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderFirstFailedAt: {"yesterday"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "x", wantReason: "not an RFC 3339 time",
		},
		{
			name: "WildcardOriginalSubject", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderOriginalSubject: {"orders.*"}},
			wantTenant: "acme", wantType: "x", wantReason: "wildcard",
		},
		{
			name: "InvalidUTF8Error", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderError: {"bad \xff\xfe byte\x00"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "x", wantReason: "Dlq-Error is not valid UTF-8",
			check: func(t *testing.T, r Record) {
				assert.Equal(t, "bad \uFFFD\uFFFD byte\uFFFD", r.Error, "one U+FFFD per bad byte, as JetStream's JSON API writes them")
				back, err := DecodeHeaders(r.Headers)
				require.NoError(t, err)
				assert.Equal(t, "bad \xff\xfe byte\x00", back[HeaderError][0], "raw header kept exactly")
			},
		},
		{
			name: "RepeatedContractHeader", subject: "dlq.acme.x",
			headers:    map[string][]string{HeaderOperationID: {"a", "b"}, HeaderOriginalSubject: {"a.b"}},
			wantTenant: "acme", wantType: "x", wantReason: "sent 2 times",
			check: func(t *testing.T, r Record) { assert.Equal(t, "a", r.OperationID) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseDLQ("dlq", received(tc.subject, tc.headers, ""))
			assert.Equal(t, tc.wantTenant, r.Tenant)
			assert.Equal(t, tc.wantType, r.ItemType)
			if tc.wantReason == "" {
				assert.Empty(t, r.MalformedReasons)
			} else {
				assert.Contains(t, strings.Join(r.MalformedReasons, "\n"), tc.wantReason)
			}
			assert.NotEmpty(t, r.Fingerprint)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestFingerprintGroupsVariants(t *testing.T) {
	t.Parallel()
	stackA := "goroutine 7 [running]:\nmain.send(0xc000123)\n\t/app/send.go:42 +0x1d\nmain.main()\n\t/app/main.go:10 +0x2f"
	stackB := "goroutine 99 [running]:\nmain.send(0xc000999)\n\t/app/send.go:47 +0x3d\nmain.main()\n\t/app/main.go:11 +0x2f"
	same := [][2]string{
		{`order 12345 not found`, `order 987 not found`},
		{`user "alice" has no quota`, `user "bob" has no quota`},
		{`lookup 3f2b8c1e-1d2c-4c3b-9f0e-0a1b2c3d4e5f failed`, `lookup 00000000-1111-2222-3333-444444444444 failed`},
		{`bad checksum deadbeef01`, `bad checksum 0a1b2c3d4e`},
		{`timeout after 30s on order-7781`, `timeout after 5s on order-12`},
	}
	for _, p := range same {
		assert.Equal(t, Fingerprint(ClassTransient, p[0], stackA), Fingerprint(ClassTransient, p[1], stackB), "%q ~ %q", p[0], p[1])
	}
	assert.NotEqual(t, Fingerprint(ClassTransient, "order 1 not found", ""), Fingerprint(ClassPermanent, "order 1 not found", ""), "class splits")
	assert.NotEqual(t, Fingerprint(ClassTransient, "order not found", ""), Fingerprint(ClassTransient, "customer not found", ""), "words split")
	assert.NotEqual(t, Fingerprint(ClassTransient, "x", "main.a()\n"), Fingerprint(ClassTransient, "x", "main.b()\n"), "frames split")
}

// TestRev38ApostrophesInWordsDoNotMergeErrors: an apostrophe inside a
// word ("can't") is not a quote. Before, it opened a quoted value that
// the next apostrophe closed, and the words between, those that say what
// went wrong, were dropped: these pairs shared one group, its triage, its
// snooze and its group actions.
func TestRev38ApostrophesInWordsDoNotMergeErrors(t *testing.T) {
	t.Parallel()
	for _, p := range [][2]string{
		{"can't reach payments gateway, won't retry", "can't decode invoice schema, won't retry"},
		{"can't find 'order-1'", "can't charge 'order-1'"},
		{"couldn't connect to ledger; don't retry", "couldn't verify signature; don't retry"},
		{"l'entrée n'est pas valide", "l'adresse n'est pas valide"},
	} {
		assert.NotEqual(t, Fingerprint(ClassPermanent, p[0], ""), Fingerprint(ClassPermanent, p[1], ""), "%q / %q (%q)", p[0], p[1], NormaliseMessage(p[0]))
	}
	for _, p := range [][2]string{
		{"it's the users' fault", "it's the admins' fault"},
		{"I'm unable to load 'x'", "I'm unable to save 'x'"},
	} {
		assert.NotEqual(t, Fingerprint(ClassPermanent, p[0], ""), Fingerprint(ClassPermanent, p[1], ""), "%q / %q (%q)", p[0], p[1], NormaliseMessage(p[0]))
	}
	// Values quoted after a word or a character beyond ASCII stay values.
	for _, p := range [][2]string{
		{`找不到用户"alice"`, `找不到用户"bob"`},
		{`用户'alice'不存在`, `用户'bob'不存在`},
		{"value: 'alice'", "value: 'bob'"},
		{`b'abc'`, `b'xyz'`},
		{`name"alice"`, `name"bob"`},
		{`user 'alice' has no quota`, `user 'bob' has no quota`},
		{`can't parse '$x'`, `can't parse '$y'`},
	} {
		assert.Equal(t, Fingerprint(ClassPermanent, p[0], ""), Fingerprint(ClassPermanent, p[1], ""), "%q ~ %q (%q)", p[0], p[1], NormaliseMessage(p[0]))
	}
	assert.Equal(t, "can't find <q>", NormaliseMessage("Can't find 'order-1'"), "a quote after a space still opens a value")
	assert.Equal(t, "key=<q> and <q>", NormaliseMessage(`key='abc' and "x"`))
	assert.Equal(t, Fingerprint(ClassPermanent, "can't find 'order-1'", ""), Fingerprint(ClassPermanent, "can't find 'order-77'", ""), "the quoted value still does not split")
}

func TestWatchStreams(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS, EMAILS:mail.{tenant}.{item_type}")
	require.NoError(t, err)
	require.Len(t, ws, 2)
	tenant, it, ok := ws[0].Map("app.acme.orders.refund")
	assert.True(t, ok)
	assert.Equal(t, "acme", tenant)
	assert.Equal(t, "orders.refund", it)
	_, _, ok = ws[1].Map("app.acme.email.send")
	assert.False(t, ok, "literal token must match")
	tenant, it, ok = ws[1].Map("mail.globex.send")
	assert.True(t, ok)
	assert.Equal(t, "globex", tenant)
	assert.Equal(t, "send", it)

	for _, bad := range []string{"A.B", "ORDERS,ORDERS", "X:{item_type}.{tenant}", "X:a..{tenant}.{item_type}", "X:{tenant}"} {
		_, err := ParseWatchStreams(bad)
		assert.Error(t, err, bad)
	}
}

// TestWatchStreamsTemplateTokens: spaces around a template's tokens are
// not part of them; a token that matches no subject as written is refused
// with its entry named.
func TestWatchStreamsTemplateTokens(t *testing.T) {
	t.Parallel()
	t.Run("Trimmed", func(t *testing.T) {
		ws, err := ParseWatchStreams(" ORDERS : * . {tenant} . {item_type} , EMAILS")
		require.NoError(t, err)
		require.Len(t, ws, 2)
		assert.Equal(t, WatchStream{Name: "ORDERS", Template: []string{"*", "{tenant}", "{item_type}"}}, ws[0])
		assert.Equal(t, "EMAILS", ws[1].Name)
	})
	for _, bad := range []string{
		"ORDERS:{tenant}.{tenant}.{item_type}", "ORDERS:>.{tenant}.{item_type}", "ORDERS:app.{tenant}.>",
		"ORDERS:a*.{tenant}.{item_type}", "ORDERS:app.{tenant}x.{item_type}", "ORDERS:app x.{tenant}.{item_type}",
		"ORDERS:app.{tenant}.{item_type}.>",
	} {
		t.Run("Refused/"+bad, func(t *testing.T) {
			_, err := ParseWatchStreams("EMAILS," + bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `entry "`+bad+`"`)
		})
	}
}

func TestAdvisoryParse(t *testing.T) {
	t.Parallel()
	ws, _ := ParseWatchStreams("ORDERS")
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: t0, Stream: "ORDERS", Consumer: "c1", StreamSeq: 9, Deliveries: 2, Reason: "bad schema"}
	via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: t0}
	r := ParseAdvisory(ws[0], adv, &Original{Subject: "app.acme.orders.refund", Header: map[string][]string{"Nats-Msg-Id": {"m-9"}}, Data: []byte("{}")}, []byte(`{}`), via)
	assert.Equal(t, ClassTerminated, r.ErrorClass)
	assert.Contains(t, r.Error, "bad schema")
	assert.Equal(t, "acme", r.Tenant)
	assert.Equal(t, "orders.refund", r.ItemType)
	assert.Equal(t, "m-9", r.MsgID)
	assert.Equal(t, int32(2), *r.Attempts)
	assert.Equal(t, "c1", r.SourceConsumer)
	assert.Empty(t, r.MalformedReasons)

	via.Seq = 4
	gone := ParseAdvisory(ws[0], Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Stream: "ORDERS", Consumer: "c1", StreamSeq: 10, Deliveries: 5}, nil, []byte(`{}`), via)
	assert.True(t, gone.PayloadUnavailable)
	assert.Equal(t, ClassMaxDeliveries, gone.ErrorClass)
	assert.Equal(t, "ORDERS:10@2026-11-29T10:00:00Z", gone.MsgID, "the original gone: when the advisory was stored")
	assert.True(t, gone.MsgIDDerived)
}

// TestAdvisoryOriginalReplaced: what is at the advisory's sequence now
// was stored after the advisory (the stream was made again): not taken.
func TestAdvisoryOriginalReplaced(t *testing.T) {
	t.Parallel()
	ws, _ := ParseWatchStreams("ORDERS")
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: t0, Stream: "ORDERS", Consumer: "c1", StreamSeq: 9, Deliveries: 1}
	via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: t0}
	orig := func(stored time.Time) *Original {
		return &Original{Subject: "app.globex.orders.pay", Header: map[string][]string{HeaderNatsMsgID: {"pay-9"}}, Data: []byte("innocent"), Time: stored}
	}
	for _, tc := range []struct {
		name     string
		stored   time.Time
		replaced bool
	}{
		{"StoredBefore", t0.Add(-time.Minute), false},
		{"WithinClockAllowance", t0.Add(OriginalClockAllowance), false},
		{"StoredAfter", t0.Add(OriginalClockAllowance + time.Millisecond), true},
		{"StoredUnknown", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseAdvisory(ws[0], adv, orig(tc.stored), []byte(`{}`), via)
			if !tc.replaced {
				assert.Equal(t, "pay-9", r.MsgID)
				assert.Equal(t, "globex", r.Tenant)
				assert.NotContains(t, r.Flags, "original_replaced")
				return
			}
			assert.Equal(t, []string{"original_replaced"}, r.Flags)
			assert.True(t, r.PayloadUnavailable)
			assert.Empty(t, r.Payload)
			assert.Empty(t, r.Headers)
			assert.Equal(t, "unknown", r.Tenant)
			assert.Equal(t, "ORDERS:9@2026-11-29T10:00:00Z", r.MsgID, "derived from the advisory's stored time")
			assert.True(t, r.MsgIDDerived)
			assert.Equal(t, ClassTerminated, r.ErrorClass)
		})
	}
}

// TestDerivedMsgIDWhereAndWhen: a stream made again numbers from 1 again;
// the derived id of its new message is not an old one's, and a redelivery
// of one message keeps its id.
func TestDerivedMsgIDWhereAndWhen(t *testing.T) {
	t.Parallel()
	m := Received{Subject: "dlq.acme.orders.refund", Stream: "DLQ", Seq: 42, Time: t0}
	first := ParseDLQ("dlq", m)
	again := ParseDLQ("dlq", m)
	m.Time = t0.Add(24 * time.Hour)
	later := ParseDLQ("dlq", m)
	assert.Equal(t, first.MsgID, again.MsgID, "a redelivery keeps its id")
	assert.NotEqual(t, first.MsgID, later.MsgID, "same stream and sequence, stored at another time")
	assert.Equal(t, "DLQ:42@2026-11-30T10:00:00Z", later.MsgID)
	assert.True(t, later.MsgIDDerived)
	assert.Equal(t, first.MsgID, RawForm(first, errors.New("refused")).MsgID, "the raw form keeps the derived id")

	ws, _ := ParseWatchStreams("ORDERS")
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Timestamp: t0, Stream: "ORDERS", Consumer: "c1", StreamSeq: 7, Deliveries: 3}
	orig := &Original{Subject: "app.acme.orders.refund", Data: []byte("x"), Time: t0.Add(-time.Hour)}
	via := Received{Subject: AdvisoryMaxDeliveries + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 1, Time: t0}
	a := ParseAdvisory(ws[0], adv, orig, []byte(`{}`), via)
	via.Seq, via.Time, adv.Consumer = 2, t0.Add(time.Minute), "c2"
	b := ParseAdvisory(ws[0], adv, orig, []byte(`{}`), via)
	assert.Equal(t, "ORDERS:7@2026-11-29T09:00:00Z", a.MsgID, "where and when the watched stream stored the original")
	assert.Equal(t, a.MsgID, b.MsgID, "two consumers giving up on one message: one id")
}

// TestAdvisoryReplayContextConfirmed: an advisory's record has operation
// and correlation ids only when its replay claim holds after linkReplays,
// and then those the console sent with the replay (the replay item), not
// those of the original's headers, which anyone who read the replay on the
// tenant's subject can copy along with its Nats-Msg-Id and Dlq-Replay-Of.
func TestAdvisoryReplayContextConfirmed(t *testing.T) {
	t.Parallel()
	ws, _ := ParseWatchStreams("ORDERS")
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Timestamp: t0, Stream: "ORDERS", Consumer: "c1", StreamSeq: 7, Deliveries: 3}
	via := Received{Subject: AdvisoryMaxDeliveries + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 1, Time: t0}
	orig := &Original{Subject: "app.acme.orders.refund", Data: []byte("x"), Time: t0.Add(-time.Hour), Header: map[string][]string{
		HeaderNatsMsgID: {"refund-7"}, HeaderOperationID: {"op-1"}, HeaderCorrelationID: {"corr-1"}, HeaderReplayOf: {"12"}, HeaderReplayRequest: {"3"}}}
	var recs []Record
	for range 3 {
		recs = append(recs, ParseAdvisory(ws[0], adv, orig, []byte(`{}`), via))
	}
	assert.Empty(t, recs[0].OperationID, "a claim is not taken before it is checked")
	assert.Empty(t, recs[0].Flags, "the console's replay headers are not an upstream's")
	// As linkReplays leaves them: 0 and 2 confirmed (the console sent op-1
	// and corr-1 with the replay of 12; op-2 and no correlation id with
	// the replay 2 names), 1 dropped.
	recs[0].replayContext.sentOperationID, recs[0].replayContext.sentCorrelationID = "op-1", "corr-1"
	recs[1].ReplayOf = 0
	recs[2].replayContext.sentOperationID = "op-2"
	for range 2 { // a retried batch is confirmed again
		confirmReplayContexts(recs)
	}
	assert.Equal(t, "op-1", recs[0].OperationID)
	assert.Equal(t, "corr-1", recs[0].CorrelationID)
	assert.Empty(t, recs[0].Flags)
	assert.Empty(t, recs[1].OperationID)
	assert.Empty(t, recs[1].CorrelationID)
	assert.Equal(t, []string{"upstream:dlq_headers"}, recs[1].Flags)
	assert.Len(t, recs[1].MalformedReasons, 1, "flagged once")
	assert.Equal(t, "op-2", recs[2].OperationID, "what the console sent, not the headers")
	assert.Empty(t, recs[2].CorrelationID, "what the console sent, not the headers")
	assert.Equal(t, []string{"upstream:dlq_headers"}, recs[2].Flags)
	assert.Len(t, recs[2].MalformedReasons, 1, "flagged once")
}

func FuzzParse(f *testing.F) {
	f.Add("dlq.acme.email.send", "Dlq-Error-Class", "permanent", "Dlq-Attempts", "3", []byte("{}"))
	f.Add("dlq.acme", "Dlq-Tenant", "globex", "Dlq-First-Failed-At", "2026-01-01T00:00:00Z", []byte{0xff, 0x00})
	f.Add("dlq", "Dlq-Original-Subject", "a.*.>", "Dlq-Error", "\xff\xfe", []byte(nil))
	f.Fuzz(func(t *testing.T, subject, k1, v1, k2, v2 string, data []byte) {
		h := map[string][]string{k1: {v1}, k2: {v2, v1}}
		r := ParseDLQ("dlq", Received{Subject: subject, Header: h, Data: data, Stream: "DLQ", Seq: 1, Time: t0})
		for _, s := range []string{r.Tenant, r.ItemType, r.Subject, r.Error, r.Stack, r.OriginalSubject, r.MsgID, r.OperationID} {
			if !isStorableText(s) {
				t.Fatalf("field %q is not storable text", s)
			}
		}
		if r.Tenant == "" || r.ItemType == "" || r.MsgID == "" || r.Fingerprint == "" {
			t.Fatalf("required field empty: %+v", r)
		}
		if t, ok := strings.CutPrefix(subject, "dlq."); ok {
			if tenant, _, _ := strings.Cut(t, "."); tenant != "" {
				want := BoundedKey(tenant, MaxTenantBytes)
				if tenant == "*" || tenant == ">" || CleanText(tenant) != tenant || strings.ContainsRune(tenant, '\uFFFD') {
					want = UnknownTenant // not a tenant: flagged invalid:tenant
				}
				if r.Tenant != want {
					panic("tenant not taken from the subject")
				}
			}
		}
		if len(r.Tenant) > MaxTenantBytes || len(r.ItemType) > MaxItemTypeBytes {
			t.Fatalf("tenant or item type over its bound: %d, %d bytes", len(r.Tenant), len(r.ItemType))
		}
		back, err := DecodeHeaders(r.Headers)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range h {
			if strings.Join(back[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("header %q not kept exactly", k)
			}
		}
	})
}

func isStorableText(s string) bool {
	return !strings.ContainsRune(s, 0) && strings.ToValidUTF8(s, "") == s
}

func TestEscapeLinesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a\nb", "\tindented\r\n", `C:\new\table`, `\\n literal`, "mixed \\ \n \t"} {
		assert.Equal(t, s, UnescapeLines(EscapeLines(s)), "%q", s)
		assert.NotContains(t, EscapeLines(s), "\n")
	}
}

func TestNormaliseMessage(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`Order 12345 NOT found`:                          `order <#> not found`,
		`user "alice" has no 'quota'`:                    `user <q> has no <q>`,
		"  many \t spaces\n here ":                       `many spaces here`,
		`lookup 3f2b8c1e-1d2c-4c3b-9f0e-0a1b2c3d4e5f: x`: `lookup <#>: x`,
		`main.send(0xc000123)`:                           `main.send(<#>)`,
		`/app/send.go:42`:                                `/app/send.go:<#>`,
		`unterminated "quote`:                            `unterminated "quote`,
		`résumé 7 ünïcode`:                               `résumé <#> ünïcode`,
	}
	for in, want := range cases {
		assert.Equal(t, want, NormaliseMessage(in), "%q", in)
	}
}

// TestParseReplayOf reads the dead letter a replayed message came from, as
// the console sent it or as the producer helper renamed it; anything that
// is not a dead letter's id is flagged and not claimed. The producer helper
// gives a dead letter of a replayed message an id of its own, so the DLQ
// stream does not drop it as a duplicate of the first failure.
func TestParseReplayOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    map[string][]string
		want int64
		flag string
	}{
		{"AsSent", map[string][]string{HeaderReplayOf: {"29"}}, 29, ""},
		{"RenamedByTheHelper", map[string][]string{UpstreamPrefix + HeaderReplayOf: {" 30 "}}, 30, ""},
		{"NotAnID", map[string][]string{HeaderReplayOf: {"twenty"}}, 0, "invalid:replay_of"},
		{"Negative", map[string][]string{HeaderReplayOf: {"-4"}}, 0, "invalid:replay_of"},
		{"Twice", map[string][]string{HeaderReplayOf: {"7", "8"}}, 7, "duplicate:replay_of"},
		{"None", nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fullHeaders()
			for k, v := range tc.h {
				h[k] = v
			}
			r := ParseDLQ("dlq", received("dlq.acme.email.send", h, "{}"))
			assert.Equal(t, tc.want, r.ReplayOf)
			if tc.flag == "" {
				assert.NotContains(t, strings.Join(r.Flags, ","), "replay_of")
			} else {
				assert.Contains(t, r.Flags, tc.flag)
			}
		})
	}

	orig := func(replay bool) *nats.Msg {
		m := &nats.Msg{Subject: "app.acme.email.send", Header: nats.Header{HeaderNatsMsgID: {"mail-1"}}}
		if replay {
			m.Header.Set(HeaderReplayOf, "29")
			m.Header.Set(HeaderReplayRequest, "4")
		}
		return m
	}
	first, err := NewMessage("dlq", "acme", "email.send", orig(false), Origin{}, Failure{Err: assert.AnError, Consumer: "mailer"})
	require.NoError(t, err)
	again, err := NewMessage("dlq", "acme", "email.send", orig(true), Origin{}, Failure{Err: assert.AnError, Consumer: "mailer"})
	require.NoError(t, err)
	// Not from a stream: the SHA-256 of the message (subject, headers and
	// payload: coreSum) tells two messages under one id apart.
	assert.Regexp(t, `^dlq:mailer:mail-1:sha256:[0-9a-f]{24}$`, first.Header.Get(HeaderNatsMsgID))
	assert.Regexp(t, `^dlq:mailer:mail-1:sha256:[0-9a-f]{24}:replay:4:29$`, again.Header.Get(HeaderNatsMsgID), "a failed replay is a dead letter of its own")
	assert.NotEqual(t, first.Header.Get(HeaderNatsMsgID)+":replay:4:29", again.Header.Get(HeaderNatsMsgID), "its headers are part of the sum too")
	assert.Equal(t, "mail-1", again.Header.Get(HeaderOriginalMsgID), "under the original's id")
	assert.Equal(t, "29", again.Header.Get(UpstreamPrefix+HeaderReplayOf))
}
