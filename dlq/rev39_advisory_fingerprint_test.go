package dlq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev39AdvisoriesOfOtherConsumersAreOtherGroups (review 39): an
// advisory's error quotes the consumer's name, and NormaliseMessage turns
// a quoted value into <q>, so every consumer and stream that gave up on a
// message shared one group, whose Discard, Resolve and Replay selected
// them all. The stream and consumer take part in the fingerprint now;
// the delivery count still does not.
func TestRev39AdvisoriesOfOtherConsumersAreOtherGroups(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS,STOCK")
	require.NoError(t, err)
	via := Received{Subject: AdvisoryMaxDeliveries + ".ORDERS.c", Stream: "DLQ_ADVISORIES", Seq: 3, Time: t0}
	parse := func(typ, stream, consumer string, deliveries uint64) Record {
		w := ws[0]
		if stream == "STOCK" {
			w = ws[1]
		}
		adv := Advisory{Type: typ, Timestamp: t0, Stream: stream, Consumer: consumer, StreamSeq: 9, Deliveries: deliveries}
		return ParseAdvisory(w, adv, &Original{Subject: "app.acme.orders.refund", Data: []byte("{}")}, []byte(`{}`), via)
	}
	const maxDeliver = "io.nats.jetstream.advisory.v1.max_deliver"
	const terminated = "io.nats.jetstream.advisory.v1.terminated"

	charger := parse(maxDeliver, "ORDERS", "billing-charger", 5)
	require.Equal(t, ClassMaxDeliveries, charger.ErrorClass)
	assert.Equal(t, `consumer "billing-charger" reached its MaxDeliver after 5 deliveries without an ack`, charger.Error, "the text people read is as it was")
	assert.Empty(t, charger.Stack, "no stack is made up for the record")
	assert.NotEqual(t, charger.Fingerprint, parse(maxDeliver, "ORDERS", "inventory-reserver", 5).Fingerprint, "another consumer")
	assert.NotEqual(t, charger.Fingerprint, parse(maxDeliver, "STOCK", "billing-charger", 5).Fingerprint, "another stream")
	assert.Equal(t, charger.Fingerprint, parse(maxDeliver, "ORDERS", "billing-charger", 7).Fingerprint, "another delivery count, one group")
	assert.NotEqual(t, parse(terminated, "ORDERS", "billing-charger", 2).Fingerprint, parse(terminated, "ORDERS", "inventory-reserver", 2).Fingerprint, "terminations too")

	// A name of any length is cut before it is fingerprinted; names that
	// differ within the cut still split.
	long := strings.Repeat("a", 1<<20)
	assert.NotEqual(t, parse(maxDeliver, "ORDERS", long+"x", 5).Fingerprint, parse(maxDeliver, "ORDERS", "b"+long, 5).Fingerprint)
}

// TestRev39AdvisoryFrameKeepsNamesLetters (review 39, follow-up): the
// advisory's frame was normalised as a stack line, and a word holding a
// digit normalises to <#> whole ("-" and "_" are in words), so every
// consumer with a digit in its name was one group on its stream
// (billing-charger-v2, inventory-reserver-v2, s3-archiver), and streams
// too (ORDERS_V2, STOCK_V2). A run of digits is # now, the rest is kept.
func TestRev39AdvisoryFrameKeepsNamesLetters(t *testing.T) {
	t.Parallel()
	fp := func(stream, consumer string) string {
		msg := `consumer "` + consumer + `" reached its MaxDeliver after 5 deliveries without an ack`
		return Fingerprint(ClassMaxDeliveries, msg, advisoryFrame(stream, consumer))
	}

	t.Run("NamesWithDigitsAreOtherGroups", func(t *testing.T) {
		t.Parallel()
		assert.NotEqual(t, fp("ORDERS", "billing-charger-v2"), fp("ORDERS", "inventory-reserver-v2"))
		assert.NotEqual(t, fp("ORDERS", "billing-charger-v2"), fp("ORDERS", "s3-archiver"))
		assert.NotEqual(t, fp("ORDERS_V2", "billing-charger"), fp("STOCK_V2", "billing-charger"))
		assert.NotEqual(t, fp("ORDERS", "billing-charger"), fp("orders", "billing-charger"), "NATS names are case-sensitive")
		assert.NotEqual(t, fp("A/B", "c"), fp("A", "B/c"), "a / in a name does not run it into the other")
	})

	t.Run("DigitsAloneDoNotSplit", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, fp("ORDERS", "worker-1"), fp("ORDERS", "worker-2"))
		assert.Equal(t, fp("ORDERS", "worker-1"), fp("ORDERS", "worker-17"))
		assert.Equal(t, fp("ORDERS_V2", "billing-charger-v2"), fp("ORDERS_V3", "billing-charger-v3"))
		assert.Equal(t, "consumer ^o^r^d^e^r^s_^v#/billing-charger-v#", advisoryFrame("ORDERS_V2", "billing-charger-v2"))
	})

	t.Run("FrameIsNotNormalisedAway", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"billing-charger-v2", "ORDERS_V2", `it's "q"`, "a b\tc\nd", "用户 7", "x\u00a0", "goroutine 1", " +0x1d", "Traceback (most recent call last):"} {
			frame := advisoryFrame(name, name)
			assert.Equal(t, []string{frame}, topFrames(frame, StackFramesInFingerprint), "%q", name)
		}
	})
}

// FuzzRev39AdvisoryFrame: whatever the names, the frame is one stack
// line that normalising leaves as it is, and names that differ in more
// than their digits are other frames.
func FuzzRev39AdvisoryFrame(f *testing.F) {
	f.Add("ORDERS", "billing-charger-v2", "ORDERS", "inventory-reserver-v2")
	f.Add("A/B", "c", "A", "B/c")
	f.Add(`"x"`, "y z", "'", "\n")
	f.Fuzz(func(t *testing.T, stream, consumer, stream2, consumer2 string) {
		frame := advisoryFrame(stream, consumer)
		if got := topFrames(frame, StackFramesInFingerprint); len(got) != 1 || got[0] != frame {
			t.Fatalf("frame %q is read as %q", frame, got)
		}
		digits := func(s string) string {
			b := []byte(cut(s, maxNameInFingerprint))
			for i, c := range b {
				if c >= '0' && c <= '9' {
					b[i] = '0'
				}
			}
			return string(b)
		}
		squeeze := func(s string) string {
			for strings.Contains(s, "00") {
				s = strings.ReplaceAll(s, "00", "0")
			}
			return s
		}
		same := squeeze(digits(stream)) == squeeze(digits(stream2)) && squeeze(digits(consumer)) == squeeze(digits(consumer2))
		if same != (frame == advisoryFrame(stream2, consumer2)) {
			t.Fatalf("%q/%q and %q/%q: frames %q and %q", stream, consumer, stream2, consumer2, frame, advisoryFrame(stream2, consumer2))
		}
	})
}
