package dlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
)

func TestParseHeaderBlock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		block    string
		want     map[string][]string
		problems []string // substrings, in order
	}{
		{"WellFormed", "NATS/1.0\r\nA: 1\r\nB:2\r\nA:  3\r\n\r\n", map[string][]string{"A": {"1", "3"}, "B": {"2"}}, nil},
		{"LineWithoutColon", "NATS/1.0\r\nA: 1\r\nno colon\r\nB: 2\r\n\r\n", map[string][]string{"A": {"1"}, "B": {"2"}},
			[]string{`line 3 has no colon: "no colon" skipped`}},
		{"EmptyName", "NATS/1.0\r\n: x\r\nB: 2\r\n\r\n", map[string][]string{"B": {"2"}}, []string{"line 2 has an empty name"}},
		{"NoVersionLine", "A: 1\r\n\r\n", map[string][]string{"A": {"1"}}, []string{"does not start with"}},
		{"NotEnded", "NATS/1.0\r\nA: 1\r\n", map[string][]string{"A": {"1"}}, []string{"not ended by an empty line"}},
		{"BareLF", "NATS/1.0\nA: 1\n\n", map[string][]string{"A": {"1"}}, nil},
		{"InlineStatus", "NATS/1.0 503 No Responders\r\n\r\n", map[string][]string{"Status": {"503"}, "Description": {"No Responders"}}, nil},
		{"BytesAfterEnd", "NATS/1.0\r\nA: 1\r\n\r\ntrailing", map[string][]string{"A": {"1"}}, []string{"follow the empty line"}},
		{"ValueKeepsBytes", "NATS/1.0\r\nX: \xff\x00 a\r\n\r\n", map[string][]string{"X": {"\xff\x00 a"}}, nil},
		{"NamesKeepCase", "NATS/1.0\r\nx-Trace: 1\r\nX-TRACE: 2\r\n\r\n", map[string][]string{"x-Trace": {"1"}, "X-TRACE": {"2"}}, nil},
		{"Empty", "", map[string][]string{}, []string{"does not start with", "not ended"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, problems := ParseHeaderBlock([]byte(tc.block))
			assert.Equal(t, tc.want, h)
			assert.Len(t, problems, len(tc.problems), "%q", problems)
			for i, p := range tc.problems {
				if i < len(problems) {
					assert.Contains(t, problems[i], p)
				}
			}
		})
	}

	t.Run("ProblemsAreCounted", func(t *testing.T) {
		block := "NATS/1.0\r\n" + strings.Repeat("bad line\r\n", 1000) + "A: 1\r\n\r\n"
		h, problems := ParseHeaderBlock([]byte(block))
		assert.Equal(t, map[string][]string{"A": {"1"}}, h)
		assert.Len(t, problems, maxHeaderProblems+1)
		assert.Equal(t, "and 990 more problems in the block", problems[maxHeaderProblems])
	})

	t.Run("AgreesWithTheNATSClient", func(t *testing.T) {
		// On a block the client reads, the lenient reading is the same.
		for _, block := range []string{"NATS/1.0\r\nA: 1\r\nB:\t 2\r\nA: x\r\n\r\n", "NATS/1.0\r\n\r\n", "NATS/1.0 408 Request Timeout\r\n\r\n"} {
			want, err := nats.DecodeHeadersMsg([]byte(block))
			assert.NoError(t, err)
			got, problems := ParseHeaderBlock([]byte(block))
			assert.Empty(t, problems)
			assert.Equal(t, map[string][]string(want), got, "%q", block)
		}
	})
}

func FuzzParseHeaderBlock(f *testing.F) {
	f.Add([]byte("NATS/1.0\r\nA: 1\r\nno colon\r\n\r\n"))
	f.Add([]byte("garbage\xff\x00"))
	f.Add([]byte("NATS/1.0 503\r\n: x\r\n\r\nafter"))
	f.Fuzz(func(t *testing.T, block []byte) {
		h, problems := ParseHeaderBlock(block)
		if len(problems) > maxHeaderProblems+1 {
			t.Fatalf("%d problems", len(problems))
		}
		for k := range h {
			if k == "" || strings.Contains(k, "\n") {
				t.Fatalf("bad name %q", k)
			}
		}
		// What the lenient reading keeps survives storing and reading back.
		r := ParseDLQ("dlq", Received{Subject: "dlq.acme.x", HeaderBlock: block, Stream: "DLQ", Seq: 1, Time: t0})
		for _, s := range append(append([]string{}, r.MalformedReasons...), r.Flags...) {
			if !isStorableText(s) {
				t.Fatalf("reason %q is not storable text", s)
			}
		}
		back, err := DecodeHeaders(r.Headers)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back) != fmt.Sprint(h) && len(h) > 0 {
			t.Fatalf("headers not kept: %v vs %v", back, h)
		}
		if len(block) > 0 && string(r.HeaderBlock) != string(block) {
			t.Fatal("the block is not kept exactly")
		}
	})
}

func TestBoundedKey(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "acme", BoundedKey("acme", MaxTenantBytes))
	exact := strings.Repeat("a", MaxTenantBytes)
	assert.Equal(t, exact, BoundedKey(exact, MaxTenantBytes), "a value that fits is itself")

	a, b := exact+"a", exact+"b"
	ka, kb := BoundedKey(a, MaxTenantBytes), BoundedKey(b, MaxTenantBytes)
	assert.LessOrEqual(t, len(ka), MaxTenantBytes)
	assert.NotEqual(t, ka, kb, "values sharing a prefix get different keys")
	assert.Equal(t, ka, BoundedKey(a, MaxTenantBytes), "the same value, the same key")
	assert.True(t, strings.HasPrefix(ka, "aaaa"), "readable")

	multi := strings.Repeat("é", 200) // two bytes each
	k := BoundedKey(multi, MaxTenantBytes)
	assert.True(t, utf8.ValidString(k), "cut on a character boundary")
	assert.LessOrEqual(t, len(k), MaxTenantBytes)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "08006"}, true},  // connection failure
		{&pgconn.PgError{Code: "57P01"}, true},  // admin shutdown
		{&pgconn.PgError{Code: "53300"}, true},  // too many connections
		{&pgconn.PgError{Code: "25006"}, true},  // read-only: a replica
		{&pgconn.PgError{Code: "40P01"}, false}, // deadlock: a lost race (LostRace), PostgreSQL answered
		{&pgconn.PgError{Code: "23514"}, false}, // check violation: the data
		{&pgconn.PgError{Code: "22021"}, false}, // invalid byte sequence
		{&pgconn.PgError{Code: "54000"}, false}, // index row too big
		{&pgconn.PgError{Code: "57014"}, false}, // statement timeout: maybe one huge row
		{&pgconn.PgError{Code: "53200"}, false}, // out of memory: maybe one huge row
		{fmt.Errorf("insert: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{context.Canceled, true},
		{errors.New("unable to encode value"), false}, // the client refusing one value
	} {
		assert.Equal(t, tc.want, Unreachable(tc.err), "%v", tc.err)
	}
}
