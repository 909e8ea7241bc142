package dlq

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// FuzzIngestStoresParsedForm runs the ingester's own path on a dead
// letter of any subject, header block and payload: the headers as the NATS
// client reads them (or, when exact is set or the client cannot read them,
// the block as the stream stored it), ParseDLQ, then Store.Insert into
// the real PostgreSQL, with its binary COPY and headers JSON. The parsed
// form is never refused (no raw form, nothing unstorable), and the row
// holds every header value, the payload and the block exactly. Its seed
// corpus runs in make test; `go test -fuzz FuzzIngestStoresParsedForm
// ./dlq` looks further.
func FuzzIngestStoresParsedForm(f *testing.F) {
	for _, s := range []struct {
		subject string
		block   string
		data    string
	}{
		{"dlq.acme.orders.refund", "NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nDlq-Error: boom\\nline 2\r\n\r\n", `{"n":1}`},
		{"dlq.acme.orders", "NATS/1.0\r\nX-Nul: a\x00b\r\nX-Bad: \xff\xfe\r\n\xc3\x28: invalid name\r\n\r\n", "\x00\xff"},
		{"dlq.\xff\x00.\xc0\x80", "NATS/1.0\r\nDlq-Tenant: \x00\r\nDlq-Item-Type: \xed\xa0\x80\r\nDlq-Principal: \xef\xbb\xbfuser\r\n\r\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nDlq-Error: \\u0000 and \\\\u0000 and \u2028\u2029 \x01\x1f\x7f\r\nDlq-Stack: \"quoted\" \\ </script>\r\n\r\n", "<b>x</b>"},
		{"dlq.acme.x", "NATS/1.0\r\nStatus: 409\r\nDescription: Consumer Deleted\r\nNats-Msg-Id: a\r\nNats-Expected-Last-Sequence: 1\r\n\r\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nDlq-First-Failed-At: 0000-01-01T00:00:00+23:59\r\nDlq-Last-Failed-At: 9999-12-31T23:59:59.999999999-23:59\r\nDlq-Attempts: -0\r\n\r\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nDlq-Attempts: 99999999999999999999999\r\nDlq-Replay-Of: 9223372036854775807\r\nDlq-Error-Class: permanent\x00\r\n\r\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nA: 1\r\na: 2\r\nA: 3\r\nDlq-Error: one\r\ndlq-error: two\r\nDLQ-ERROR: three\r\nDlq-Error: four\r\n\r\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nno colon\r\n: empty name\r\n\r\ntrailing bytes", "x"},
		{"dlq.acme.x", "garbage \xff\x00 with no version line", ""},
		{"dlq.acme.x", "NATS/1.0\nA: lf only\nB:no space\n\n", ""},
		{"dlq.acme.x", "NATS/1.0\r\nA: " + strings.Repeat("\xff", 5000) + "\r\nDlq-Original-Msg-Id: " + strings.Repeat("é", 3000) + "\r\n\r\n", ""},
		{"dlq." + strings.Repeat("t", 300) + "." + strings.Repeat("i", 3000), "NATS/1.0\r\nDlq-Operation-Id: " + strings.Repeat("o", 9000) + "\r\n\r\n", ""},
		{"", "", ""},
	} {
		f.Add(s.subject, []byte(s.block), []byte(s.data), false)
		f.Add(s.subject, []byte(s.block), []byte(s.data), true)
	}
	db := testdb.New(f)
	store := NewStore(db.Pool)
	var seq atomic.Uint64
	f.Fuzz(func(t *testing.T, subject string, block, data []byte, exact bool) {
		ctx := context.Background()
		m := Received{Subject: subject, Data: data, Stream: "DLQ", Seq: seq.Add(1), Time: time.Now().UTC()}
		if h, err := nats.DecodeHeadersMsg(block); err == nil && len(block) > 0 && !exact {
			m.Header = h
		} else {
			m.HeaderBlock = append([]byte{}, block...) // not nil: read from the stream
		}
		r := ParseDLQ("dlq", m)
		res, err := store.Insert(ctx, []Record{r})
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
		if len(res.Raw) > 0 || len(res.Unstorable) > 0 {
			t.Fatalf("the parsed form was refused: raw %v, unstorable %v", res.Raw, res.Unstorable)
		}
		d, err := store.BySource(ctx, "DLQ", m.Seq, "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Payload, r.Payload) {
			t.Fatalf("payload %q stored as %q", r.Payload, d.Payload)
		}
		if m.Header == nil && len(block) > 0 && !bytes.Equal(d.HeaderBlock, block) {
			t.Fatalf("header block %q stored as %q", block, d.HeaderBlock)
		}
		hs, err := d.Headers()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHeaders(hs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeHeaders(r.Headers)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d header names stored, %d received", len(got), len(want))
		}
		for k, vs := range want {
			if strings.Join(got[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("header %q: %q stored as %q", k, vs, got[k])
			}
		}
		for _, f := range []struct{ name, stored, parsed string }{{"tenant", d.Tenant, r.Tenant}, {"item_type", d.ItemType, r.ItemType},
			{"msg_id", d.MsgID, r.MsgID}, {"error", d.Error, r.Error}, {"stack", d.Stack, r.Stack}} {
			if f.stored != f.parsed {
				t.Fatalf("%s %q stored as %q", f.name, f.parsed, f.stored)
			}
		}
	})
}
