package replaypolicy

import (
	"fmt"
	"strings"
)

// BrokerKeyText is the text, in lower case, that a header line a replay
// sends may not hold in its name or its value, in any ASCII case, except
// on the lines of the broker's own keys the console sets itself
// (Nats-Msg-Id's name, and Nats-Expected-Stream's name and value): see
// HoldsBrokerKeyText. The replay's query that judges a dead letter's
// headers in PostgreSQL is built from it.
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
// Nats-Msg-Id. Matching "Nats-" in any case is broader than the server's
// exact, case-sensitive scan on purpose: it is cheap, it does not depend
// on which keys a server version looks for or how its scan is written, and
// a producer has no reason to put the broker's prefix in a header it
// means the console to forward.
const BrokerKeyText = "nats-"

// HoldsBrokerKeyText reports whether s holds BrokerKeyText in any ASCII
// case. Only ASCII letters are folded, as PostgreSQL's lower(... COLLATE
// "C") folds them: no other character is read as one of those letters.
func HoldsBrokerKeyText(s string) bool {
	n := len(BrokerKeyText)
	for i := 0; i+n <= len(s); i++ {
		if asciiFoldEqual(s[i:i+n], BrokerKeyText) {
			return true
		}
	}
	return false
}

// asciiFoldEqual reports whether s equals lower, a lower-case ASCII
// string, once the ASCII capitals of s are lowered.
func asciiFoldEqual(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// brokerKeyTextReason is the sentence that blocks an item whose header
// name (as sent: a forwarded header's own name, or Nats-Msg-Id,
// Dlq-Operation-Id or Dlq-Correlation-Id for the ids the replay sends
// under its own names) holds BrokerKeyText (Send.BrokerKeyText).
func brokerKeyTextReason(name string) string {
	const what = `the NATS server finds the replay's Nats-Msg-Id (and Nats-Expected-Stream) by searching the header block for those names, ` +
		`and text like this can make its search give up`
	const resolve = "; no replay sends it: re-publish it from the producer without that text, or resolve it by hand"
	if strings.HasPrefix(strings.ToLower(name), BrokerKeyText) { // the message id: the one name of the broker's own whose value a producer wrote
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
