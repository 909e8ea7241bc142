package dlq

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// What the producer helper says of an original it could not carry as it
// was (HeaderUnsendable, HeaderCut, HeaderLeftOut), as ParseDLQ reads it.

// FlagUnsendableNames flags a dead letter whose original carried header
// names NATS clients refuse to publish: its producer sent them in
// HeaderUnsendable, and they are stored among its headers. The original
// cannot be sent again as it was, so no replay sends it (NotWholeOf).
const FlagUnsendableNames = "unsendable:header_name"

// flagLeftOut starts the flag of each part of the original a dead letter
// lacks (HeaderLeftOut): left_out:payload, left_out:headers,
// left_out:header_block, or left_out:other for a part the contract does
// not name.
const flagLeftOut = "left_out:"

// leftOutParts are the parts of an original HeaderLeftOut names, each
// the first word of a value: the payload (over the server's max_payload
// with the dead letter's headers, or not delivered by a consumer made
// headers only and not read from its stream), the original's own headers
// (a header block over what JetStream stores), and its header block (one
// the NATS client could not read: read again from its stream leniently,
// or not at all), and header values a NATS client does not send as they
// are (blanks at their edges, CR or LF: the dead letter holds them
// otherwise).
var leftOutParts = []string{"payload", "headers", "header_block", "header_value"}

// NotWholeOf returns the first flag in flags that says the dead letter
// does not hold its original whole, as it could be sent again (a part
// left out, or header names NATS cannot send), "" when none does. The
// replay rules block such a dead letter (replaypolicy.Send.NotWhole):
// a replay would publish something else than the original under its
// identity. A HeaderUnsendable the ingester did not read (not a block it
// takes, or sent in another case: flagged <kind>:unsendable_headers)
// counts too: the headers it carries are not among the stored ones, and a
// replay drops every Dlq-* header; so does a HeaderLeftOut that does not
// hold (invalid:left_out). A forged one can only block, never unblock.
func NotWholeOf(flags []string) string {
	for _, f := range flags {
		if f == FlagUnsendableNames || strings.HasPrefix(f, flagLeftOut) || strings.HasSuffix(f, ":"+fieldUnsendable) || f == flagLeftOutInvalid {
			return f
		}
	}
	return ""
}

// fieldUnsendable names HeaderUnsendable in flags; flagLeftOutInvalid
// flags a HeaderLeftOut that says the payload was left out beside a
// payload that came.
const (
	fieldUnsendable    = "unsendable_headers"
	flagLeftOutInvalid = "invalid:left_out"
)

// restoreUnsendable returns h with the headers HeaderUnsendable carries
// put back among them, flagged FlagUnsendableNames, and HeaderUnsendable
// itself taken out. A value that is not a header block, in base64, of
// names NATS cannot send (a sendable name would be the producer's to
// send itself, a Dlq-* one perhaps a contract header) is kept as it came,
// flagged invalid:unsendable_headers, and nothing of it is put back.
func (r *Record) restoreUnsendable(h map[string][]string) map[string][]string {
	vs, ok := h[HeaderUnsendable]
	if !ok {
		return h
	}
	restored := map[string][]string{}
	for _, v := range vs {
		block, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		got, problems := ParseHeaderBlock(block)
		sendable := slices.ContainsFunc(slices.Collect(maps.Keys(got)), replaypolicy.SendableHeaderName)
		if err != nil || len(problems) > 0 || sendable {
			r.flag("invalid:"+fieldUnsendable, "%s is not a header block of names NATS cannot send, in base64: kept as it came, its headers not read", HeaderUnsendable)
			return h
		}
		for k, kvs := range got {
			restored[k] = append(restored[k], kvs...)
		}
	}
	out := maps.Clone(h)
	delete(out, HeaderUnsendable)
	for k, kvs := range restored {
		out[k] = append(out[k], kvs...)
	}
	names := slices.Sorted(maps.Keys(restored))
	for i, n := range names {
		names[i] = short(n)
	}
	r.flag(FlagUnsendableNames, "the original carried headers whose names NATS clients refuse to publish (%s): its producer sent them in %s, and they are kept among the headers; "+
		"the original cannot be sent again as it was, so it is not replayed", strings.Join(names, ", "), HeaderUnsendable)
	return out
}

// readProducerWord flags what the producer cut (HeaderCut: cut:error,
// cut:stack, which a replay does not send) and left out (HeaderLeftOut:
// left_out:<part>, which blocks a replay; a payload left out is
// unavailable), each reason in the producer's words, cut for a sentence.
func (r *Record) readProducerWord(h map[string][]string) {
	kept := map[string]int{HeaderError: len(r.Error), HeaderStack: len(r.Stack)}
	for _, v := range h[HeaderCut] {
		name, whole, _ := strings.Cut(strings.TrimSpace(v), " ")
		n, ok := kept[name]
		if !ok {
			r.flag("invalid:cut", "%s %s names no header the producer cuts (%s, %s)", HeaderCut, short(v), HeaderError, HeaderStack)
			continue
		}
		r.flag("cut:"+fieldOf(name), "%s was cut by its producer to fit the message: the first %d bytes of %s are kept", name, n, short(whole))
	}
	for _, v := range h[HeaderLeftOut] {
		part, _, _ := strings.Cut(v, ":")
		if part = strings.TrimSpace(part); !slices.Contains(leftOutParts, part) {
			part = "other"
		}
		if part == "payload" && len(r.Payload) > 0 {
			// A producer that left the payload out sends none: this one
			// came, and is kept and shown (a replay stays blocked).
			r.flag(flagLeftOutInvalid, "%s says the payload was left out, but a payload of %d bytes came: it is kept as it came; not replayed: resolve it by hand",
				HeaderLeftOut, len(r.Payload))
			continue
		}
		if part == "payload" {
			r.PayloadUnavailable = true
		}
		r.flag(flagLeftOut+part, "its producer could not send the original whole, and says in %s: %s; it is not replayed: re-publish it from the producer, or resolve it by hand",
			HeaderLeftOut, OutsideText(strings.TrimSpace(v), 1000))
	}
}

// OutsideText is text from outside (a service's answer, a broker's
// error, a panic's message) as a text column can store it (StorableText):
// cleaned (CleanText: PostgreSQL refuses a NUL or bytes not UTF-8, and a
// record refused so would be refused at every try) and cut to n bytes at a
// character boundary, "…" after it when cut (cutText).
func OutsideText(s string, n int) string {
	return cutText(CleanText(s), n)
}

// cutText is s cut to at most n bytes at a character boundary (cut), "…"
// after it when cut.
func cutText(s string, n int) string {
	if c := cut(s, n); c != s {
		return c + "…"
	}
	return s
}
