package replaypolicy

import (
	"fmt"
	"strings"
)

// BrokerKeyText is the text that a header line a replay sends may not
// hold in its name or its value, except on the lines of the broker's own
// keys the console sets itself (Nats-Msg-Id's name, and
// Nats-Expected-Stream's name and value): see HoldsBrokerKeyText. The
// replay's query that judges a dead letter's headers in PostgreSQL is
// built from it.
//
// nats-server finds Nats-Msg-Id, Nats-Expected-Stream and its other keys
// by searching the raw header block for the key's bytes (server/client.go,
// getHeaderKeyIndex, as pinned in go.mod): a copy that does not start a
// line is skipped, but when the next copy starts within two bytes of the
// end of the one skipped ("Nats-Msg-IdNats-Msg-Id" in an earlier line) the
// search gives up, and the broker acts as if the key were absent. Without
// the message id it keeps no duplicate check for the publish, so a retry
// of a replay inside the duplicate window (a lost PubAck, a worker that
// died after publishing) is stored a second time. nats.go writes header
// lines in map order, so any line may come before the replay's
// Nats-Msg-Id. Every key the server searches for starts with "Nats-", and
// its search compares bytes, case and all: "nats-" or "NATS-" cannot make
// it give up. So the text is matched as the server matches it, byte for
// byte; matching it in any case would send to a person every message of a
// producer whose ids merely say "nats-bridge-17".
const BrokerKeyText = "Nats-"

// HoldsBrokerKeyText reports whether s holds BrokerKeyText, byte for
// byte, as the server's search and PostgreSQL's strpos compare.
func HoldsBrokerKeyText(s string) bool { return strings.Contains(s, BrokerKeyText) }

// brokerKeyTextReason is the sentence that blocks an item whose header
// name (as sent: a forwarded header's own name, or Nats-Msg-Id,
// Dlq-Operation-Id or Dlq-Correlation-Id for the ids the replay sends
// under its own names) holds BrokerKeyText (Send.BrokerKeyText).
func brokerKeyTextReason(name string) string {
	const what = `the NATS server finds the replay's Nats-Msg-Id (and Nats-Expected-Stream) by searching the header block for those names, ` +
		`and text like this can make its search give up`
	const resolve = "; no replay sends it: re-publish it from the producer without that text, or resolve it by hand"
	if strings.EqualFold(name, "Nats-Msg-Id") { // the message id: the one name of the broker's own whose value a producer wrote
		return fmt.Sprintf(`the message id (header %q) holds the text "Nats-": %s, so the broker would skip its check that the replay is stored `+
			`in the stream it was sent to, on which the console's reading of its answer relies%s`, name, what, resolve)
	}
	where := "value"
	if HoldsBrokerKeyText(name) {
		where = "name"
	}
	return fmt.Sprintf(`header %q holds the text "Nats-" in its %s: %s, so the broker would not see the message id and would keep no duplicate `+
		`check for this publish: a retry (after a lost answer from the broker, or a worker that stopped after publishing) could store the message `+
		`twice in the target stream%s`, name, where, what, resolve)
}
