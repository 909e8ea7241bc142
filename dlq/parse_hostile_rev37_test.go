package dlq

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileBlock is a header block of n lines "name(i): value(i)" after the
// contract's headers, as a producer allowed to publish to the DLQ may send.
func hostileBlock(n int, name, value func(i int) string) []byte {
	var b strings.Builder
	b.WriteString("NATS/1.0\r\n")
	for _, h := range [][2]string{
		{HeaderOriginalSubject, "orders.created"}, {HeaderOriginalMsgID, "m-1"},
		{HeaderError, "boom"}, {HeaderErrorClass, "transient"}, {HeaderAttempts, "3"},
	} {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	for i := range n {
		fmt.Fprintf(&b, "%s: %s\r\n", name(i), value(i))
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

func hostileReceived(block []byte) Received {
	return Received{Subject: "dlq.acme.orders", HeaderBlock: block, Data: []byte("{}"), Stream: "DLQ", Seq: 1, Time: time.Now()}
}

func same(s string) func(int) string { return func(int) string { return s } }

func hexOf(i int) string { return strconv.FormatInt(int64(i), 16) }

// caseOf spells name with its letters' case set by the bits of i, so each
// i names another spelling of one header.
func caseOf(name string) func(int) string {
	return func(i int) string {
		b := []byte(name)
		for j, bit := 0, 0; j < len(b); j++ {
			if c := b[j]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				if i>>bit&1 == 1 {
					b[j] ^= 0x20
				}
				bit++
			}
		}
		return string(b)
	}
}

// TestRev37ManyDistinctIdentityValuesNameAFew: a dead letter carrying tens
// of thousands of distinct values of an identity header, or of its error
// class, is flagged as one carrying two, naming the first few in the
// order sent and counting the others, under every spelling of the name.
// (The speed of it is BenchmarkParseHostileHeaders': a check of each
// value against every one kept before made this quadratic.)
func TestRev37ManyDistinctIdentityValuesNameAFew(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name string
		hdr  func(int) string
	}{
		{"one spelling", same(HeaderOperationID)},
		{"a spelling each", caseOf(HeaderOperationID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseDLQ("dlq", hostileReceived(hostileBlock(n, tc.hdr, hexOf)))
			if r.Tenant != "acme" {
				t.Fatalf("tenant %q, want acme", r.Tenant)
			}
			cs := ConflictsOf(r.Flags, r.Headers)
			if len(cs) != 1 || cs[0].Header != HeaderOperationID {
				t.Fatalf("conflicts %+v, flags %v: want one, of %s", cs, r.Flags, HeaderOperationID)
			}
			// The contract's spelling first, then the others in the order
			// of their names.
			if len(cs[0].Values) != conflictValues || cs[0].Values[0] != "0" || cs[0].More != n-conflictValues {
				t.Fatalf("conflict names %q and %d more, want %d values from \"0\" and %d more", cs[0].Values, cs[0].More, conflictValues, n-conflictValues)
			}
			if tc.name == "one spelling" && strings.Join(cs[0].Values, ",") != "0,1,2,3" {
				t.Fatalf("conflict names %q, want the first four sent", cs[0].Values)
			}
		})
	}

	t.Run("error classes", func(t *testing.T) {
		// The contract's transient first, then n made-up classes, two of
		// them sent twice: n+1 distinct, the first four named.
		r := ParseDLQ("dlq", hostileReceived(hostileBlock(n+2, same(HeaderErrorClass), func(i int) string { return "class-" + hexOf(i%n) })))
		if r.ErrorClass != ClassUnclassified {
			t.Fatalf("error class %q, want %q", r.ErrorClass, ClassUnclassified)
		}
		said := strings.Join(r.MalformedReasons, "\n")
		if want := fmt.Sprintf(`transient and "class-0" and "class-1" and "class-2" and %d more`, n-3); !strings.Contains(said, want) {
			t.Fatalf("reasons do not say %q:\n%.2000s", want, said)
		}
	})
}

// BenchmarkParseHostileHeaders: ParseDLQ of one dead letter whose header
// block is about 4 MB of one shape a hostile producer may send, then the
// conflicts a replay judgement reads from its stored headers.
func BenchmarkParseHostileHeaders(b *testing.B) {
	const n = 160000 // about 4 MB of lines
	for _, tc := range []struct {
		name        string
		hdr, values func(int) string
	}{
		{"distinct-operation-ids", same(HeaderOperationID), hexOf},
		{"distinct-error-classes", same(HeaderErrorClass), hexOf},
		{"spellings-of-operation-id", caseOf(HeaderOperationID), hexOf},
		{"distinct-other-names", func(i int) string { return "X-" + hexOf(i) }, hexOf},
		{"one-other-name", same("X-Trace"), hexOf},
	} {
		block := hostileBlock(n, tc.hdr, tc.values)
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				r := ParseDLQ("dlq", hostileReceived(block))
				ConflictsOf(r.Flags, r.Headers)
			}
			b.ReportMetric(float64(len(block)), "block-bytes")
		})
	}
}
