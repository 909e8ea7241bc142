package replay

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net/textproto"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// sentAs is what the headers a replay adds of its own carry beside its
// ids (setReplayHeaders, and Nats-Expected-Stream: Worker.send), as far as
// the stage that judges its size knows it. What a stage does not know is
// counted at the most it can be, so that no stage judges a message
// smaller than the one the worker sends.
type sentAs struct {
	deadLetterID int64
	// requestID is the request that replays it; 0 when there is none yet
	// (a dead letter judged for a selection, a draft being made), counted
	// as the longest id (math.MaxInt64).
	requestID int64
	edited    bool // sent with Dlq-Payload-Edited: <hex SHA-256>
	// stream is the stream it is sent expecting (its window's: the
	// worker reads it after the item's rules judged it); "" when the stage
	// does not know it, counted as the longest name JetStream takes
	// (server.JSMaxNameLen). Only the worker knows which stream stores
	// the subject when it sends, and that may not be the one that stored
	// it at the draft or the approval (a stream replaced since), so every
	// stage before the send counts the longest name.
	stream string
	// derivedMsgID reports that the message id is the console's
	// (dlq.DerivedMsgID: the stream and place the message was stored in),
	// not the producer's: its text is not held to replaypolicy.
	// BrokerKeyText, as the expected stream's name is not.
	derivedMsgID bool
}

// message is a message of no payload with the headers a replay of
// message, operation and correlation ids msgID, opID and corrID carries
// of its own, sent as as says.
func (as sentAs) message(subject, msgID, opID, corrID string) *nats.Msg {
	m := nats.NewMsg(subject)
	var edited string
	if as.edited {
		edited = strings.Repeat("0", 2*sha256.Size) // hex: every edit's hash has this length
	}
	request := as.requestID
	if request == 0 {
		request = math.MaxInt64
	}
	setReplayHeaders(m, msgID, opID, corrID, as.deadLetterID, request, edited)
	stream := as.stream
	if stream == "" {
		stream = strings.Repeat("S", server.JSMaxNameLen)
	}
	m.Header.Set(jetstream.ExpectedStreamHeader, stream)
	return m
}

// ownSize is the size, as a NATS server counts it against max_payload
// (dlq.WireSize), of a replay of message, operation and correlation ids
// msgID, opID and corrID sent as as, but for its payload and the headers
// it forwards: its header block with its own headers.
func (as sentAs) ownSize(msgID, opID, corrID string) int64 {
	return dlq.WireSize(as.message("", msgID, opID, corrID))
}

// editMarker is what the marker of an edit (Dlq-Payload-Edited) adds to
// the size of a replay sent as as (0: not edited).
func (as sentAs) editMarker() int64 {
	plain := as
	plain.edited = false
	return as.ownSize("", "", "") - plain.ownSize("", "", "")
}

// sentAsIs reports whether NATS sends id v with the bytes it has, but for
// the blanks at its ends (trimmedEdge judges those): the client writes a
// CR or LF inside a value as a space.
func sentAsIs(v string) bool {
	return !strings.ContainsAny(textproto.TrimString(v), "\r\n")
}

// forwardedAsIs reports whether a consumer of a replay reads forwarded
// header value v as a consumer of the original read it. The client sends
// a value with the blanks at both ends trimmed and a CR or LF inside it
// as a space, but a reader (nats.go, the server) trims the spaces and
// tabs at a value's start only: one ending in a blank, or holding a line
// break anywhere past its leading blanks, reaches the replay's consumers
// as another value.
func forwardedAsIs(v string) bool {
	u := strings.TrimLeft(v, " \t")
	return !strings.ContainsAny(u, "\r\n") && !strings.HasSuffix(u, " ") && !strings.HasSuffix(u, "\t")
}

// idHeaders are the headers a replay sends its message, operation and
// correlation ids as, in sendFacts' order (see Message).
var idHeaders = [...]string{dlq.HeaderNatsMsgID, dlq.HeaderOperationID, dlq.HeaderCorrelationID}

// identities is how many of idHeaders, from the first, are identities the
// broker and downstream dedupe key on (the message and operation ids):
// trimmed, one is another identity. A correlation id only ties messages
// together for people, and a trimmed one is read as the same.
const identities = 2

// trimmedEdge says where NATS trims blanks from id as it sends it (see
// replaypolicy.Send.AlteredEdge), "" when it sends it with its ends as
// they are.
func trimmedEdge(id string) string {
	t := textproto.TrimString(id)
	switch {
	case t == id:
		return ""
	case t == "":
		return replaypolicy.EdgeAllBlank
	case strings.HasPrefix(id, t):
		return "end"
	case strings.HasSuffix(id, t):
		return "start"
	}
	return "start and end"
}

// sendFacts is what NATS says of the message a replay of an item with
// headers hs (as the dead letter stored them), a payload of payloadSize
// bytes, ids (its message, operation and correlation ids, in that order)
// and the original subject publishes, sent as as says, on a server of
// maxPayload (0: unknown): the first header it cannot send (replaypolicy.
// SendableHeaderName: an empty name included), the first of a name it
// would send changed (a message or operation id with blanks at an end
// included: the client trims them), the first id (or the subject) that is a stand-in for
// other bytes (notText, from the dead letter's flags), whether the dead letter
// may be one retention removed, an advisory whose give-up could not be
// verified, or one that does not hold its original whole (its flags), and
// the message's size: the size as the server
// counts it (dlq.WireSize) of the message with the replay's own headers
// and every header it forwards, a value counted as stored (a base64 one
// is longer than the value sent), and the payload. It also finds the
// first header (the ids first, under the names they are sent as, then the
// forwarded ones in order) whose name or value, as sent, holds the text
// "Nats-", byte for byte (replaypolicy.Send.BrokerKeyText): every line
// but those of the broker's keys the replay sets itself, whose names are
// the keys and whose values are the console's (a derived message id, the
// expected stream's name). A header of an empty name is not looked at:
// NATS refuses it whole (HasBadHeader). headerFacts finds the same one in
// PostgreSQL.
func sendFacts(hs []dlq.HeaderValue, flags []string, subject string, payloadSize int64, maxPayload int64, as sentAs, ids ...string) replaypolicy.Send {
	s := replaypolicy.Send{MaxPayload: maxPayload, NotText: notText(flags, subject, ids...),
		Reappeared: slices.Contains(flags, dlq.FlagAfterKeyTrim), Unverified: slices.Contains(flags, dlq.FlagAdvisoryUnverified), NotWhole: dlq.NotWholeOf(flags)}
	for i, id := range ids[:min(len(ids), len(idHeaders))] {
		switch {
		case s.AlteredHeader != "":
		case i < identities && trimmedEdge(id) != "":
			s.AlteredHeader, s.AlteredEdge = idHeaders[i], trimmedEdge(id)
		case !sentAsIs(id):
			s.AlteredHeader = idHeaders[i]
		}
		if s.BrokerKeyText == "" && (i > 0 || !as.derivedMsgID) && replaypolicy.HoldsBrokerKeyText(id) {
			s.BrokerKeyText = idHeaders[i]
		}
	}
	var id [len(idHeaders)]string
	copy(id[:], ids)
	m := as.message(subject, id[0], id[1], id[2])
	for _, h := range Headers(hs) {
		if !s.HasBadHeader && !replaypolicy.SendableHeaderName(h.Name) {
			s.HasBadHeader, s.BadHeader = true, h.Name
		}
		if payloadSize == 0 && s.StatusHeader == "" && natsStatusHeader(strings.ToLower(h.Name)) {
			s.StatusHeader = h.Name
		}
		// A header without a name is refused whole (HasBadHeader). Its
		// value as it is sent is the stored one decoded, when it was
		// stored encoded; one that does not decode is neither altered nor
		// broker-key text: Message cannot build it at all, and says so.
		if h.Name != "" && (s.AlteredHeader == "" || s.BrokerKeyText == "") {
			v, err := h.DecodedValue()
			if s.AlteredHeader == "" && err == nil && !forwardedAsIs(v) {
				s.AlteredHeader = h.Name
			}
			if s.BrokerKeyText == "" && (replaypolicy.HoldsBrokerKeyText(h.Name) || err == nil && replaypolicy.HoldsBrokerKeyText(v)) {
				s.BrokerKeyText = h.Name
			}
		}
		m.Header[h.Name] = append(m.Header[h.Name], h.Value) // none of a replay's own names: Headers leaves out Nats-* and Dlq-*
	}
	s.Size, s.PayloadSize = dlq.WireSize(m)+payloadSize, payloadSize
	return s
}

// idFields are the flag fields (not_utf8:<field>, set at ingest) of ids
// in sendFacts' order.
var idFields = [...]string{"msg_id", "operation_id", "correlation_id"}

// notText returns the first of ids (message, operation and correlation id)
// and subject (the original subject) that ingest received as bytes that
// were not valid UTF-8, or held a NUL, and stored with U+FFFD in their
// place (flags holds not_utf8:<field>, and the value holds U+FFFD): a
// replay would publish the stand-in, which is not the original's identity
// (two ids that differ only in such bytes are even stored alike) or
// subject. It names the header the value is sent as, or "the original
// subject"; "" when there is none. A value that holds U+FFFD as sent is
// not flagged, and one flagged but since replaced (an advisory's ids taken
// from the console's replay) holds none.
func notText(flags []string, subject string, ids ...string) string {
	standIn := func(field, v string) bool {
		return strings.ContainsRune(v, utf8.RuneError) && slices.Contains(flags, "not_utf8:"+field)
	}
	for i, id := range ids {
		if i < len(idFields) && standIn(idFields[i], id) {
			return idHeaders[i]
		}
	}
	if standIn("original_subject", subject) {
		return "the original subject"
	}
	return ""
}

// publishError sorts an error of a publish into what it means: refused
// (the message can never be published as it is: the client cannot encode
// or send it, or the broker refuses to store it for what it is), notSent
// (nothing left the worker, or the broker said it stored nothing, this
// time), or neither (the answer was lost: the outcome is unknown).
func publishError(err error) (refused, notSent string) {
	var api *jetstream.APIError
	switch {
	case err == nil:
		return "", ""
	case errors.As(err, &api) && api.ErrorCode == streamNotMatch:
		// Sent expecting the stream that stores the subject (send), it
		// reached another: the account maps the subject elsewhere, or the
		// streams' subjects moved since the window was read (the worker
		// tells them apart: Worker.expectedElsewhere).
		return "the broker refused it: it would have been stored in another stream than the one that stores the subject, which it was sent expecting " +
			"(an account subject mapping, or the streams' subjects changed): " + api.Error(), ""
	case errors.Is(err, nats.ErrBadHeaderMsg), errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, nats.ErrHeadersNotSupported), errors.Is(err, nats.ErrInvalidMsg):
		return err.Error(), ""
	case errors.As(err, &api) && accountLimit(api.ErrorCode):
		// A 400, but about the account, not the message: its JetStream
		// storage is full (another stream grew), or its limits name no
		// tier for the stream. It is stored once room is made or the
		// limits are set, as with a full stream (503).
		return "", "the broker did not store it: the account's JetStream limits leave no room (" + api.Error() + "); it is stored once room is made"
	case errors.As(err, &api) && api.Code == 400:
		return "the broker refused it: " + api.Error(), ""
	case errors.As(err, &api):
		return "", "the broker did not store it: " + api.Error()
	}
	return "", ""
}

// notExpected reports whether err is the broker's refusal of a publish
// that reached another stream than the one it was sent expecting.
func notExpected(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == streamNotMatch
}

// accountLimit reports whether code is JetStream's refusal of a publish
// for the account's limits (JSAccountResourcesExceededErr: its storage is
// full; JSNoLimitsErr: no limit applies to the stream's tier), which the
// broker answers with a 400 although the message itself is fine.
func accountLimit(code jetstream.ErrorCode) bool {
	return code == accountResourcesExceeded || code == noLimits
}

// JetStream's error codes of a publish refused for the account's limits.
const (
	accountResourcesExceeded jetstream.ErrorCode = 10002 // JSAccountResourcesExceededErr
	noLimits                 jetstream.ErrorCode = 10120 // JSNoLimitsErr
)

// streamNotMatch is JetStream's error code for a publish that reached
// another stream than the one it was sent expecting (JSStreamNotMatchErr).
const streamNotMatch jetstream.ErrorCode = 10060

// expectedElsewhere is what the broker's refusal of j's first attempt,
// sent expecting the stream of j's window and reaching another, means
// (refused, notSent, as publishError sorts them): the window of a first
// attempt comes from a list of streams kept a while (StreamWindows), so
// the subject's stream is read afresh (Fresh). When another stream takes
// the subject now (its subjects moved since the list was read), or that
// cannot be read, nothing was stored and it is sent again later, judged
// by the stream that takes it then (notSent: never blocked for good on a
// list's age). Only when the fresh read still names the stream it was
// sent expecting does something else take the subject (an account
// subject mapping): refused. Without a window reader, refused.
func (w *Worker) expectedElsewhere(ctx context.Context, j *job, refused string) (string, string) {
	if w.svc.cfg.Windows == nil {
		return refused, ""
	}
	fresh := w.svc.cfg.Windows.Fresh(ctx, j.subject)
	switch {
	case fresh.Unreadable != "":
		return "", fmt.Sprintf("it was sent expecting stream %s and reached another, and which stream takes the subject now could not be read (%s)", j.window.Stream, fresh.Unreadable)
	case fresh.Stream == "":
		return "", fmt.Sprintf("it was sent expecting stream %s, which took the subject when the list of streams was read, but no stream takes it now: the streams changed since", j.window.Stream)
	case fresh.Stream != j.window.Stream:
		return "", fmt.Sprintf("it was sent expecting stream %s, which took the subject when the list of streams was read, but stream %s takes it now: the streams changed since", j.window.Stream, fresh.Stream)
	}
	return refused, ""
}
