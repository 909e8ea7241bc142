package dlq

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// How much of the parser's findings a raw form carries: they are text a
// producer influenced, and the raw form must stay small and certain.
const (
	rawFormReasons   = 20
	rawFormReasonLen = 500
)

// RawForm is the form a record takes when PostgreSQL refused its parsed
// form (cause): nothing in it can be refused. It keeps every byte received
// as bytes (the header block and the payload), where the message came from
// (subject, source, delivery and its unique key) and why the parsed form
// failed; the columns that hold producer text (ids, error, stack,
// principal, original subject) stay empty, but for an advisory's give-up
// (below). Its tenant and item type are the
// parsed ones, which are bounded and clean text, so the dead letter stays
// in its tenant. It is flagged raw_form, has no original subject and so is
// never replayed (resolve it by hand after reading it), and all raw forms of
// a tenant make one error group.
//
// The header block is the exact one when the record had it; otherwise it is
// written again from the headers the NATS client read (flagged
// header_block_reencoded: the order of names may differ).
//
// An advisory's record keeps the give-up the console itself wrote from the
// advisory (keepGiveUp): a DLQ message's error context is in its header
// block, which the raw form keeps, an advisory's is in the advisory. Store.Insert
// stores the raw form without it (bareRawForm) only when PostgreSQL
// refuses that one too.
func RawForm(r Record, cause error) Record {
	m := bareRawForm(r, cause)
	m.keepGiveUp(r)
	return m
}

// bareRawForm is RawForm without an advisory's give-up: nothing in it is
// text PostgreSQL could refuse but what every raw form holds.
func bareRawForm(r Record, cause error) Record {
	m := Record{
		Tenant:             r.Tenant,
		ItemType:           r.ItemType,
		Subject:            CleanText(r.Subject),
		ErrorClass:         ClassUnclassified,
		DeadLetteredAt:     r.DeadLetteredAt,
		Headers:            []HeaderValue{},
		HeaderBlock:        r.HeaderBlock,
		PayloadUnavailable: r.PayloadUnavailable,
		SourceKind:         r.SourceKind,
		SourceStream:       cut(CleanText(r.SourceStream), 255),
		SourceSeq:          r.SourceSeq,
		SourceConsumer:     cut(CleanText(r.SourceConsumer), 255),
		Delivery:           CleanText(r.Delivery),
		SourceKey:          r.SourceKey,
		storedAt:           r.storedAt,
		idTime:             r.idTime,
		MsgIDDerived:       true,
	}
	if m.Tenant == "" || len(m.Tenant) > MaxTenantBytes {
		m.Tenant = BoundedKey(CleanText(r.Tenant)+"?", MaxTenantBytes)
	}
	if m.ItemType == "" || len(m.ItemType) > MaxItemTypeBytes {
		m.ItemType = BoundedKey(CleanText(r.ItemType)+"?", MaxItemTypeBytes)
	}
	m.MsgID = m.derivedMsgID()
	m.setPayload(r.Payload)
	if y := m.DeadLetteredAt.Year(); m.DeadLetteredAt.IsZero() || y < 1 || y > 9999 {
		m.DeadLetteredAt = time.Now().UTC()
	}
	if m.HeaderBlock == nil && len(r.Headers) > 0 {
		m.HeaderBlock = EncodeHeaderBlock(r.Headers)
		m.flag("header_block_reencoded", "the header block is written again from the headers the NATS client read: names and values are exact, their order may differ")
	}
	why := "PostgreSQL refused the parsed dead letter"
	var panicked parserPanic
	if errors.As(cause, &panicked) {
		why = "the parser failed on it" // survive
	}
	m.Error = cut(fmt.Sprintf("stored in raw form: %s: %s", why, CleanText(cause.Error())), rawFormReasonLen)
	m.flag("raw_form", "%s", m.Error)
	for i, reason := range r.MalformedReasons {
		if i == rawFormReasons {
			more := len(r.MalformedReasons) - i + r.moreReasons
			if r.moreReasons > 0 {
				more-- // the sentence that counted them
			}
			m.MalformedReasons = append(m.MalformedReasons, fmt.Sprintf("and %d more findings of the parser", more))
			break
		}
		m.MalformedReasons = append(m.MalformedReasons, cut(CleanText(reason), rawFormReasonLen))
	}
	for _, f := range r.Flags {
		if len(m.Flags) < rawFormReasons {
			m.Flags = append(m.Flags, strings.ReplaceAll(cut(CleanText(f), 64), ",", ";"))
		}
	}
	m.Fingerprint = Fingerprint(m.ErrorClass, "stored in raw form", "")
	return m
}

// keepGiveUp puts back into m, the bare raw form of r, what of r the
// console wrote itself from a give-up advisory (ParseAdvisory): its class
// (terminated or max_deliveries, so the dead letter stays among its
// kind's), the deliveries the advisory counts, the consumer that gave up
// (already clean and cut as its source consumer), the give-up sentence
// (which holds the reason a consumer terminated the message with)
// cleaned and cut, before why the raw form was stored, and the advisory's
// JSON as storableJSON made it. Nothing for any other record.
func (m *Record) keepGiveUp(r Record) {
	if !r.hasGiveUp() {
		return
	}
	m.ErrorClass = r.ErrorClass
	m.Attempts = r.Attempts
	m.Consumer = m.SourceConsumer
	m.Advisory = r.Advisory
	m.Error = cut(CleanText(r.Error), rawFormReasonLen) + "; " + m.Error
	m.Fingerprint = Fingerprint(m.ErrorClass, "stored in raw form", "")
}

// hasGiveUp reports whether r is an advisory's record holding the give-up
// ParseAdvisory wrote (keepGiveUp keeps it in the raw form).
func (r Record) hasGiveUp() bool {
	return r.SourceKind == SourceAdvisory && (r.ErrorClass == ClassTerminated || r.ErrorClass == ClassMaxDeliveries)
}

// contentRefusedForm is the position form of r, a dead letter
// PostgreSQL refused in its parsed and its raw form (cause) time after
// time (tries says when: "in 5 sweeps running", "on its delivery 5"),
// read from stream #seq. Both the sweep (sweepInsert) and the live
// ingester (storeContentRefused) store it, through
// storeRefusedWholeOrPosition, so a dead letter has the one position form
// whichever stored it. It is its raw form (RawForm: the
// tenant and item type parsed, bounded and clean, the subject as clean
// text, where it came from, its source key: the one its delivery has, so
// that a delivery or a sweep of it later finds it stored) without any of
// its content, payload and headers, and without the parser's findings
// and an advisory's give-up (bareRawForm), flagged content_refused. Its payload's SHA-256 is kept, to tell it from
// the message read by hand; its reason names the command that reads that
// message (contentPosition: for an advisory's record, its original). It
// has no original subject and its payload is unavailable, so it is never
// replayed.
func contentRefusedForm(r Record, cause error, tries, stream string, seq uint64) Record {
	m := bareRawForm(r, cause)
	sum := m.PayloadSHA256
	m.setPayload(nil)
	m.PayloadSHA256, m.PayloadUnavailable = sum, true
	m.HeaderBlock, m.Headers = nil, []HeaderValue{}
	m.Flags, m.MalformedReasons = nil, nil
	m.Error = cut(fmt.Sprintf("stored without its content: PostgreSQL refused this dead letter in its parsed and its raw form %s: %s",
		tries, CleanText(cause.Error())), rawFormReasonLen)
	m.flag("content_refused", "%s; the payload and headers are not stored: read them from the stream while it holds the message (%s)",
		m.Error, contentPosition(r, m.SourceStream, stream, seq))
	m.Fingerprint = Fingerprint(m.ErrorClass, "stored without its content", "")
	return m
}

// contentPosition is the command that reads the message whose payload
// and headers r's position form lacks: stream #seq, where r was read
// from, or, for an advisory's record that took its original, the
// original's place (source, r.SourceStream cut and clean; r.SourceSeq):
// the advisory's stream holds the advisory's JSON, not them. The
// advisory's place is named too. An advisory's record without its
// original (gone, replaced, unreadable) held no payload or headers of it:
// the command reads the advisory it was made from.
func contentPosition(r Record, source, stream string, seq uint64) string {
	if r.SourceKind != SourceAdvisory || r.PayloadUnavailable || r.SourceSeq == 0 {
		return fmt.Sprintf("nats stream get %s %d", CleanText(stream), seq)
	}
	return fmt.Sprintf("nats stream get %s %d; the advisory that reported it is %s #%d", source, r.SourceSeq, CleanText(stream), seq)
}

// refusedAgain is what storeRefusedWholeOrPosition did with dead letters
// PostgreSQL had refused in every form time after time (indexes of its
// recs).
type refusedAgain struct {
	// Raw are those stored whole after all, in their raw form; those
	// stored in their parsed form (or found stored) are in no list.
	Raw []Refused
	// Positions are those refused whole once more and stored in their
	// position form (Err: that last refusal).
	Positions []Refused
	// Unstored are those not stored: PostgreSQL refused their position
	// form too (Err: that refusal).
	Unstored []Refused
}

// storeRefusedWholeOrPosition stores recs, dead letters PostgreSQL
// refused in their parsed and their raw form time after time, through
// insert (Store.Insert, counted as the caller counts): whole if
// PostgreSQL takes them now, and in their position form (position(i,
// cause): recs[i]'s, cause the refusal just now) only those it refuses
// whole once more. The refusals that made them due were statements ago
// (a batch, the hook after it, the sweep's other records): what refused
// every row then (a trigger, a revoked grant, a migration under way) may
// have ended since, and a position form stored then would lose a payload
// PostgreSQL now takes. Whether a refusal is the dead letter's content or
// PostgreSQL's is only ever told by the position form's own insert (it
// holds nothing of the content): trying them whole again right before it
// keeps that judgement to the last moment. Both the live ingester
// (storeContentRefused) and the sweep (sweepInsert) store position forms
// through it. An insert that fails (PostgreSQL unreachable or busy) ends
// it with the error: the caller stores none of them as a position form.
func storeRefusedWholeOrPosition(recs []Record, position func(i int, cause error) Record, insert func([]Record) (InsertResult, error)) (refusedAgain, error) {
	var out refusedAgain
	whole, err := insert(recs)
	if err != nil {
		return out, err
	}
	out.Raw = whole.Raw
	if len(whole.Unstorable) == 0 {
		return out, nil
	}
	forms := make([]Record, len(whole.Unstorable))
	for i, u := range whole.Unstorable {
		forms[i] = position(u.Index, u.Err)
	}
	pos, err := insert(forms)
	if err != nil {
		return out, err
	}
	refused := make(map[int]error, len(pos.Unstorable))
	for _, u := range pos.Unstorable {
		refused[u.Index] = u.Err
	}
	for i, u := range whole.Unstorable {
		if perr, ok := refused[i]; ok {
			out.Unstored = append(out.Unstored, Refused{Index: u.Index, Err: perr})
			continue
		}
		out.Positions = append(out.Positions, u)
	}
	return out, nil
}

// cut returns s cut to at most n bytes, on a character boundary: back at
// most utf8.UTFMax-1 bytes to the start of the character cut through, and
// no further through bytes that start none (not UTF-8: a run of them would
// otherwise take the whole text back with it).
// (TestRev38CutThroughInvalidBytesKeepsTheText)
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	at := n
	for n > 0 && at-n < utf8.UTFMax-1 && !utf8.RuneStart(s[n]) {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = at // no character starts there: cut where asked
	}
	return s[:n]
}
