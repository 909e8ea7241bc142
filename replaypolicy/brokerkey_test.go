package replaypolicy

import (
	"strings"
	"testing"
)

// TestHoldsBrokerKeyText: the broker's prefix is found anywhere in a
// name or value, as spelled, byte for byte: another case is not the
// server's key and cannot make its search give up.
func TestHoldsBrokerKeyText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Nats-Msg-IdNats-Msg-Id", true},
		{"see Nats-Expected-Stream", true},
		{"Nats-", true},
		{"\xffNats-\xfe", true}, // bytes that are not UTF-8 around it
		{"", false},
		{"Nats", false},
		{"nats-bridge-17", false},
		{"NATS-MSG-ID", false},
		{"x-nAtS-y", false},
		{"Nat s-", false},
		{"N\u0061ts-", true}, // the escape is a plain a
	} {
		if got := HoldsBrokerKeyText(tc.s); got != tc.want {
			t.Errorf("HoldsBrokerKeyText(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestJudgeSendBrokerKeyText: a header holding the broker's prefix blocks
// the item for a person, naming the header, whether the text is in its
// name or its value, and what the broker would do; a message that cannot
// be sent at all says that first.
func TestJudgeSendBrokerKeyText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		send   Send
		check  string
		reason []string
	}{
		{"Value", Send{BrokerKeyText: "X-Note"}, CheckBrokerKeyText, []string{`header "X-Note" holds the text "Nats-" in its value`,
			"the broker would not see the message id", "could store the message twice", "resolve it by hand"}},
		{"Name", Send{BrokerKeyText: "X-Nats-Note"}, CheckBrokerKeyText, []string{`header "X-Nats-Note" holds the text "Nats-" in its name`}},
		{"CorrelationID", Send{BrokerKeyText: "Dlq-Correlation-Id"}, CheckBrokerKeyText, []string{`header "Dlq-Correlation-Id" holds the text "Nats-" in its value`}},
		{"MessageID", Send{BrokerKeyText: "Nats-Msg-Id"}, CheckBrokerKeyText, []string{`the message id (header "Nats-Msg-Id") holds the text "Nats-"`,
			"the stream it was sent to", "re-publish it from the producer"}},
		{"UnsendableFirst", Send{BrokerKeyText: "X-Note", BadHeader: "Bad Name"}, CheckUnsendable, []string{`header "Bad Name" cannot be sent`}},
		{"OversizeFirst", Send{BrokerKeyText: "X-Note", Size: 2000, MaxPayload: 1024}, CheckUnsendable, []string{"max_payload of 1024 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := JudgeSend(Verdict{Rule: -1}, tc.send)
			if v.Outcome != Block || v.Check != tc.check {
				t.Fatalf("JudgeSend = %s/%s %q, want block/%s", v.Outcome, v.Check, v.Reason, tc.check)
			}
			for _, r := range tc.reason {
				if !strings.Contains(v.Reason, r) {
					t.Errorf("reason %q does not say %q", v.Reason, r)
				}
			}
		})
	}
	if v := JudgeSend(Verdict{Rule: -1}, Send{}); v.Outcome != Go {
		t.Fatalf("JudgeSend of nothing against it = %s/%s %q, want go", v.Outcome, v.Check, v.Reason)
	}
}
