package replaypolicy

import "strings"

// headerNameRefused are the printable ASCII bytes the NATS client
// (nats.go, isHeaderKeyValid, as pinned in go.mod) refuses in a header
// name besides the protocol's ':'; a message with such a name is not
// published at all (nats.ErrBadHeaderMsg).
const headerNameRefused = `"(),/:;<=>?@[\]{}`

// headerNameRule says in words which names NATS sends (SendableHeaderName),
// for the reasons that refuse one.
const headerNameRule = "a header name is one or more printable ASCII characters other than " + headerNameRefused

// SendableHeaderName reports whether NATS sends a header of this name:
// one or more bytes, each printable ASCII ('!'..'~') but none of
// headerNameRefused. It is the one definition of a sendable name: the
// rules judge names by it (Send.HasBadHeader), and the replay's query that
// judges a dead letter's headers in PostgreSQL is built from
// HeaderNameBytes. A test holds it to what the client refuses at publish.
func SendableHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < '!' || c > '~' || strings.IndexByte(headerNameRefused, c) >= 0 {
			return false
		}
	}
	return true
}

// HeaderNameBytes is every byte a name SendableHeaderName accepts may
// hold, in order, each once: a name is sendable when it is not empty and
// holds no other.
func HeaderNameBytes() string {
	var b strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		if strings.IndexByte(headerNameRefused, c) < 0 {
			b.WriteByte(c)
		}
	}
	return b.String()
}
