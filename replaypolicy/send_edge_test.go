package replaypolicy

import (
	"strings"
	"testing"
)

// TestJudgeSendIdWithBlanksAtAnEnd: a message or operation id NATS would
// send trimmed is refused, saying where its blanks are, or that it is
// only blanks; a line break inside a value keeps its own reason.
func TestJudgeSendIdWithBlanksAtAnEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		send   Send
		reason string
	}{
		{"End", Send{AlteredHeader: "Nats-Msg-Id", AlteredEdge: "end"}, `header "Nats-Msg-Id" has a blank at its end, which NATS trims`},
		{"Start", Send{AlteredHeader: "Dlq-Operation-Id", AlteredEdge: "start"}, `header "Dlq-Operation-Id" has a blank at its start, which NATS trims`},
		{"Both", Send{AlteredHeader: "Nats-Msg-Id", AlteredEdge: "start and end"}, `has blanks at its start and end`},
		{"OnlyBlanks", Send{AlteredHeader: "Dlq-Operation-Id", AlteredEdge: EdgeAllBlank}, `is only blanks, which NATS trims away as it sends a header: the replay would go out with an empty Dlq-Operation-Id`},
		{"LineBreak", Send{AlteredHeader: "Nats-Msg-Id"}, `holds a line break inside its value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeSend(Verdict{Rule: -1}, tc.send)
			if v.Outcome != Block || v.Check != CheckUnsendable || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("JudgeSend = %s/%s %q, want block/%s containing %q", v.Outcome, v.Check, v.Reason, CheckUnsendable, tc.reason)
			}
		})
	}
}
