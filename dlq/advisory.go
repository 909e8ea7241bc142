package dlq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Advisory subjects JetStream publishes when a consumer gives up on a
// message; <stream>.<consumer> follow.
const (
	AdvisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
	AdvisoryTerminated    = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
)

// Advisory is the part of a MAX_DELIVERIES or MSG_TERMINATED advisory the
// console uses.
type Advisory struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	Timestamp   time.Time `json:"timestamp"`
	Stream      string    `json:"stream"`
	Consumer    string    `json:"consumer"`
	StreamSeq   uint64    `json:"stream_seq"`
	ConsumerSeq uint64    `json:"consumer_seq,omitempty"`
	Deliveries  uint64    `json:"deliveries"`
	Reason      string    `json:"reason,omitempty"`
}

// Terminated reports whether this is a MSG_TERMINATED advisory.
func (a Advisory) Terminated() bool {
	return strings.HasSuffix(a.Type, ".terminated") // io.nats.jetstream.advisory.v1.terminated
}

// WatchStream is a stream whose consumers' give-ups are captured, with the
// subject template that says where tenant and item type sit in its subjects.
type WatchStream struct {
	Name     string
	Template []string // tokens: literal, "*", "{tenant}", "{item_type}" (last, takes the rest)
}

// DefaultWatchTemplate maps <anything>.<tenant>.<item_type...>.
const DefaultWatchTemplate = "*.{tenant}.{item_type}"

// ParseWatchStreams reads DLQ_WATCH_STREAMS: a comma-separated list of
// STREAM or STREAM:template, e.g. "ORDERS,EMAILS:mail.{tenant}.{item_type}".
// Spaces around a name, a template or a template's token are not part of
// them. A template is literal tokens, "*" (any one token), one {tenant}
// and a last {item_type} (the rest of the subject); anything else (a '>',
// a wildcard inside a token, a placeholder twice or half written, white
// space inside a token) matches no subject as meant, and is refused with
// its entry named.
func ParseWatchStreams(s string) ([]WatchStream, error) {
	var out []WatchStream
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, tmpl, ok := strings.Cut(part, ":")
		name, tmpl = strings.TrimSpace(name), strings.TrimSpace(tmpl)
		if !ok {
			tmpl = DefaultWatchTemplate
		}
		if name == "" || strings.ContainsAny(name, ".*> \t") {
			return nil, fmt.Errorf("entry %q: stream name %q is not a valid JetStream stream name", part, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("entry %q: stream %q is listed twice", part, name)
		}
		seen[name] = true
		toks, err := parseWatchTemplate(tmpl)
		if err != nil {
			return nil, fmt.Errorf("entry %q: stream %s: template %q: %w", part, name, tmpl, err)
		}
		out = append(out, WatchStream{Name: name, Template: toks})
	}
	return out, nil
}

// parseWatchTemplate splits a DLQ_WATCH_STREAMS template into its tokens,
// trimmed, and checks each (see ParseWatchStreams).
func parseWatchTemplate(tmpl string) ([]string, error) {
	toks := strings.Split(tmpl, ".")
	var hasTenant, hasType bool
	for i, t := range toks {
		t = strings.TrimSpace(t)
		toks[i] = t
		switch {
		case t == "":
			return nil, errors.New("has an empty token")
		case t == "{tenant}":
			if hasTenant {
				return nil, errors.New("{tenant} is given twice: a subject has one tenant")
			}
			hasTenant = true
		case t == "{item_type}":
			if i != len(toks)-1 {
				return nil, errors.New("{item_type} must be the last token (it takes the rest of the subject)")
			}
			hasType = true
		case t == "*":
		case strings.Contains(t, ">"):
			return nil, fmt.Errorf("token %q: '>' cannot be used: {item_type} is last and takes the rest of the subject", t)
		case strings.ContainsAny(t, "*{}") || strings.IndexFunc(t, unicode.IsSpace) >= 0:
			return nil, fmt.Errorf("token %q is neither a literal subject token, '*', {tenant} nor {item_type}", t)
		}
	}
	if !hasTenant || !hasType {
		return nil, errors.New("must contain {tenant} and {item_type}")
	}
	return toks, nil
}

// Map finds tenant and item type in a subject of the watched stream.
func (w WatchStream) Map(subject string) (tenant, itemType string, ok bool) {
	toks := strings.Split(subject, ".")
	for i, t := range w.Template {
		if i >= len(toks) {
			return "", "", false
		}
		switch t {
		case "*":
		case "{tenant}":
			tenant = toks[i]
		case "{item_type}":
			itemType = strings.Join(toks[i:], ".")
		default:
			if toks[i] != t {
				return "", "", false
			}
		}
	}
	return tenant, itemType, tenant != "" && itemType != ""
}

// Original is the message an advisory points at, fetched from its stream;
// nil when it was gone.
type Original struct {
	Subject string
	// Header is the headers as read; HeaderBlock, when not nil, the block
	// exactly as the stream stored it, which is read (leniently) instead.
	Header      map[string][]string
	HeaderBlock []byte
	Data        []byte
	// Time is when the stream stored it; zero when unknown (not checked).
	Time time.Time
}

// OriginalClockAllowance is how much later than its advisory an original
// may have been stored and still be taken for the message the advisory
// names (ParseAdvisory). The advisory names the original by stream and
// sequence only, and a stream deleted and made again numbers from 1 again:
// what is now at that sequence may be another message, stored after the
// advisory was. The real original was stored before it was delivered,
// failed and given up on, so before its advisory, by at least a delivery
// (with MaxDeliver, by the ack waits between). Both times are NATS
// servers' clocks (the watched stream's leader and DLQ_ADVISORIES'
// leader, in a cluster perhaps two servers) kept within milliseconds by
// NTP; a second covers a clock set badly by up to that much, and a stream
// deleted, made again and filled up to the same sequence within a second
// of the advisory is a script, not an operator. The advisory's own
// timestamp is not the bound: it is in the JSON, which anyone who may
// publish on an advisory subject writes; the advisory stream's stored time
// is the server's. When that stored time is implausible (plausibleStoredAt:
// the advisory stream's leader's clock was reset, or is far ahead), the
// bound is when the console received the advisory: an original stored
// after that is still another message, but one of a stream made again
// while the console was down is not told from the real one: only its
// advisory's consumer, deleted with the stream, then flags the row
// advisory_unverified, which no replay sends.
const OriginalClockAllowance = time.Second

// ParseAdvisory turns a captured advisory and the original message (nil
// when gone) into a Record. Like ParseDLQ it never fails. via is the
// advisory message as delivered from the advisory stream: its position is
// the record's delivery (one row per advisory), its stored time the record's
// dead-lettered time (the advisory's own timestamp is a producer's claim,
// checked against it). raw is the advisory as received; it is stored with
// the row.
//
// An original stored after the advisory (more than OriginalClockAllowance
// later) is another message at the same sequence of a stream made again:
// it is not taken, and the row is stored as for a gone original, flagged
// original_replaced. An advisory stored at an implausible time (its
// server's clock reset: checkStoredAt) is taken as stored when the console
// received it, now, for that comparison only: otherwise one reset clock
// would take every dead letter's original from it. The original's Dlq-*
// headers are its publisher's, not a consumer's that gave up: see
// upstreamContext.
func ParseAdvisory(w WatchStream, adv Advisory, orig *Original, raw []byte, via Received) Record {
	return parseAdvisory(w, adv, orig, nil, raw, via)
}

// parseAdvisory is ParseAdvisory for an original that is nil because it
// could not be read (unread: why; NATS did not answer, the connection
// failed, it was larger than the connection takes), not because it is
// gone: the record is flagged original_unreadable, not original_gone. Its
// tenant stays unknown all the same: the advisory names the stream, the
// consumer and the sequence only, the tenant sits in the original's
// subject, and neither the stream's subjects nor the consumer's filter
// say it for certain (both may have been edited since the message was
// stored).
func parseAdvisory(w WatchStream, adv Advisory, orig *Original, unread error, raw []byte, via Received) (r Record) {
	defer survive(SourceAdvisory, via, &r)
	if f := parseFault.Load(); f != nil {
		(*f)(via)
	}
	r = Record{
		SourceKind:     SourceAdvisory,
		SourceStream:   CleanText(adv.Stream),
		SourceSeq:      adv.StreamSeq,
		SourceConsumer: CleanText(adv.Consumer),
		DeadLetteredAt: via.Time.UTC(),
	}
	r.setDelivery(via)
	r.Advisory = r.storableJSON(raw)
	if r.DeadLetteredAt.IsZero() {
		r.DeadLetteredAt = time.Now().UTC()
	}
	capturedAt := r.DeadLetteredAt // before checkStoredAt: the server's time, as the original's is
	now := time.Now()
	r.checkStoredAt(now)
	// The latest the original can have been stored (OriginalClockAllowance
	// aside): when the advisory was, or, that time being implausible, when
	// the console received it.
	storedBy, storedByWhat := capturedAt, "this advisory was"
	if !plausibleStoredAt(capturedAt, now) {
		storedBy, storedByWhat = now.UTC(), "the console received this advisory (its stored time "+capturedAt.Format(time.RFC3339Nano)+" is implausible)"
	}
	switch at := adv.Timestamp; {
	case at.IsZero():
		r.flag("implausible:advisory_time", "the advisory gives no time it was raised (or the zero time); it was captured at %s",
			r.DeadLetteredAt.Format(time.RFC3339Nano))
	case at.Sub(r.DeadLetteredAt) > MaxClockSkew || r.DeadLetteredAt.Sub(at) > MaxClockSkew:
		r.flag("implausible:advisory_time", "the advisory says it was raised at %s, but it was captured at %s",
			at.UTC().Format(time.RFC3339Nano), r.DeadLetteredAt.Format(time.RFC3339Nano))
	}
	// The original's stored time names it in a derived message id; the
	// advisory's when the original is not there, as its server gave it
	// even when implausible (a redelivery derives the same id; ParseDLQ's
	// rows do the same).
	idTime := capturedAt
	switch {
	case orig == nil && unread != nil:
		r.withoutOriginal()
		r.flag("original_unreadable", "the original message %s:%d could not be read from its stream (it is not known to be gone): %v; "+
			"tenant unknown: it is in the original's subject", short(r.SourceStream), adv.StreamSeq, unread)
	case orig == nil:
		r.withoutOriginal()
		r.flag("original_gone", "the original message %s:%d was gone from its stream; tenant unknown", short(r.SourceStream), adv.StreamSeq)
	case !orig.Time.IsZero() && orig.Time.After(storedBy.Add(OriginalClockAllowance)):
		r.withoutOriginal()
		r.flag("original_replaced", "the message now at %s #%d was stored at %s, after %s (%s): the stream was deleted and made again, and that is another message, "+
			"not taken as the dead letter; the original is gone, tenant unknown", short(r.SourceStream), adv.StreamSeq,
			orig.Time.UTC().Format(time.RFC3339Nano), storedByWhat, storedBy.Format(time.RFC3339Nano))
	default:
		if !orig.Time.IsZero() {
			idTime = orig.Time
		}
		r.originalSubject(orig.Subject)
		h := r.headerView(Received{Header: orig.Header, HeaderBlock: orig.HeaderBlock}, false)
		r.Headers = encodeHeaders(h)
		spellings := otherSpellings(h)
		conflicts := conflictsSent(h, spellings, SourceAdvisory)
		h = r.contractView(h, spellings)
		r.setPayload(orig.Data)
		r.MsgID = r.header(h, HeaderNatsMsgID)
		r.ReplayOf = r.replayOf(h) // a replayed message that hit MaxDeliver is a loop too
		r.flagConflicting(conflicts)
		r.upstreamContext(h)
		tenant, itemType, ok := w.Map(orig.Subject)
		switch {
		case ok:
			r.Tenant = r.bounded("tenant", r.tenantToken(tenant), MaxTenantBytes)
			if r.Tenant == "" {
				r.Tenant = UnknownTenant // tenantToken said why
			}
			r.ItemType = r.bounded("item_type", r.text("item_type", "the subject's item type", itemType), MaxItemTypeBytes)
			r.checkItemType("the subject's item type", itemType)
		default:
			r.Tenant = UnknownTenant
			r.ItemType = r.bounded("item_type", strings.ToLower(r.SourceStream), MaxItemTypeBytes)
			r.flag("subject_unmapped", "subject %s does not match the template %q of watched stream %s", short(r.Subject), strings.Join(w.Template, "."), w.Name)
		}
	}
	r.idTime = idTime // RawForm derives the same id from it
	if r.MsgID == "" {
		r.MsgID, r.MsgIDDerived = DerivedMsgID(r.SourceStream, adv.StreamSeq, idTime), true
	}
	if adv.Deliveries > MaxPlausibleAttempts {
		r.flag("implausible:attempts", "the advisory counts %d deliveries, more than any consumer makes (over %d)", adv.Deliveries, MaxPlausibleAttempts)
	}
	d := int32(min(adv.Deliveries, math.MaxInt32))
	r.Attempts = &d
	consumer := short(r.SourceConsumer)
	if adv.Terminated() {
		r.ErrorClass = ClassTerminated
		r.Error = fmt.Sprintf("terminated by consumer %s after %d deliveries", consumer, adv.Deliveries)
		if adv.Reason != "" {
			r.Error += ": " + CleanText(adv.Reason)
		}
	} else {
		r.ErrorClass = ClassMaxDeliveries
		r.Error = fmt.Sprintf("consumer %s reached its MaxDeliver after %d deliveries without an ack", consumer, adv.Deliveries)
	}
	r.Consumer = r.SourceConsumer
	r.checkBounds()
	r.checkPlausible()
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, advisoryFrame(r.SourceStream, r.SourceConsumer))
	return r
}

// maxNameInFingerprint is how many bytes of a stream's or a consumer's
// name an advisory's fingerprint takes. NATS keeps names short, but the
// advisory's JSON is not bounded by that.
const maxNameInFingerprint = 256

// advisoryFrame is the stream and consumer that gave up on a message, as
// the one stack line of its advisory's fingerprint; the record keeps no
// stack. The error quotes the consumer, and a quoted value normalises to
// <q>, so without it every consumer and stream was one group, whose
// Discard, Resolve and Replay took them all.
//
// Each name (cut to maxNameInFingerprint bytes) is written by frameName
// in a form NormaliseMessage leaves as it is, for the line is normalised
// as a stack line is: left to it, a name holding a digit was <#> whole,
// and billing-charger-v2, inventory-reserver-v2 and s3-archiver were one
// group. A run of digits is # (worker-1 and worker-2 are one group,
// worker-#), letters and - and _ are kept, so ORDERS/billing-charger-v2
// is "consumer ^o^r^d^e^r^s/billing-charger-v#".
//
// An ephemeral consumer's name made up by nats-server or nats.go (8
// characters of [0-9A-Za-z] hashed from a nuid) is not told apart from a
// name people chose ("Worker01", "payments" fit as well): each such
// consumer is a group of its own.
// (TestRev39AdvisoriesOfOtherConsumersAreOtherGroups,
// TestRev39AdvisoryFrameKeepsNamesLetters)
func advisoryFrame(stream, consumer string) string {
	var b strings.Builder
	b.WriteString("consumer ")
	frameName(&b, cut(stream, maxNameInFingerprint))
	b.WriteByte('/')
	frameName(&b, cut(consumer, maxNameInFingerprint))
	return b.String()
}

// frameName writes a stream's or consumer's name as NormaliseMessage
// leaves it, one name to one form but for its digits: a run of digits is
// #; a lower-case letter, - and _ are themselves; an upper-case letter is
// ^ and the letter lower-cased (NATS names are case-sensitive: ORDERS and
// orders are two streams); any other byte, a quote, a space, a / or
// beyond ASCII, is \ and two letters a-p, its two hex digits. No digit
// nor upper-case letter, quote or white space is left to normalise, and
// no / to run one name into the other.
func frameName(b *strings.Builder, name string) {
	const nibble = "abcdefghijklmnop"
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= '0' && c <= '9':
			for i+1 < len(name) && name[i+1] >= '0' && name[i+1] <= '9' {
				i++
			}
			b.WriteByte('#')
		case c >= 'a' && c <= 'z' || c == '-' || c == '_':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte('^')
			b.WriteByte(lower(c))
		default:
			b.WriteByte('\\')
			b.WriteByte(nibble[c>>4])
			b.WriteByte(nibble[c&15])
		}
	}
}

// originalSubject sets an advisory's record's subject and original
// subject (where a replay publishes) from the original's subject as
// JetStream's API gives it. That API's JSON carries each byte of a
// subject that is not valid UTF-8 as U+FFFD (and it is the only way to
// read the original), so a subject holding U+FFFD may have been published
// to other bytes: which, nothing says. It is flagged not_utf8:subject, and
// not_utf8:original_subject so that no replay publishes to it (a replay
// leaves out what is so flagged); a NUL, which the JSON carries, is
// replaced and flagged the same way.
func (r *Record) originalSubject(subject string) {
	r.Subject = r.text("subject", "the subject", subject)
	r.OriginalSubject = r.Subject
	exact := r.Subject == subject
	if strings.ContainsRune(subject, utf8.RuneError) {
		exact = false
		r.flag("not_utf8:subject", "the original's subject %s holds U+FFFD, as JetStream's API (the only way to read the original) writes each byte "+
			"that is not valid UTF-8: it may have been published to other bytes", short(subject))
	}
	if !exact {
		r.flag("not_utf8:original_subject", "the subject the original was published to is not known exactly (not_utf8:subject), so it cannot be replayed there; "+
			"re-publish it from the producer")
	}
}

// FlagAdvisoryUnverified flags an advisory's record whose give-up could
// not be shown to have happened (unverifiedAdvisory); a replay leaves such
// a dead letter out (dlq/replay sendFacts).
const FlagAdvisoryUnverified = "advisory_unverified"

// unverifiedAdvisory flags an advisory's record whose give-up could not
// be shown to have happened (checkAdvisoryConsumer says why): it may be
// forged, naming another tenant's message nobody failed on. It is stored
// as it came and no replay sends it (the replay rules block the flag).
// impossible (the consumer exists and cannot have delivered it) also
// erases its original subject; one that could not be checked (its
// consumer gone) keeps it: the give-up may well be real, and the message
// is still in its stream for whoever owns the consumer to redeliver.
func (r *Record) unverifiedAdvisory(why string, impossible bool) {
	if impossible {
		r.flag(FlagAdvisoryUnverified, "%s. The give-up may be forged (anyone who may publish on an advisory subject can write one): "+
			"stored for inspection without its original subject, never replayed; re-publish it from the producer if it is real", why)
		r.OriginalSubject = ""
		return
	}
	r.flag(FlagAdvisoryUnverified, "%s. The give-up could not be verified and may be forged (anyone who may publish on an advisory subject can write one): "+
		"stored for inspection, never replayed; the message is still in its stream (while retention keeps it) for whoever owns the consumer to redeliver", why)
}

// withoutOriginal fills what an advisory's row holds when the original
// message is not there: no payload, no headers, tenant unknown.
func (r *Record) withoutOriginal() {
	r.PayloadUnavailable = true
	r.setPayload(nil)
	r.Headers = []HeaderValue{}
	r.Tenant = UnknownTenant
	r.ItemType = r.bounded("item_type", strings.ToLower(r.SourceStream), MaxItemTypeBytes)
	r.ErrorClass = ClassUnclassified
}

// replayContext is, for an advisory's record, the operation and
// correlation ids its original carried (set by whoever published it) and,
// once linkReplays has confirmed its Dlq-Replay-Of claim, the ones the
// console sent with the replay the claim names (confirmReplayContext).
type replayContext struct {
	operationID, correlationID string // the original's headers
	// sentOperationID and sentCorrelationID are what the console sent
	// (the replay item of the dead letter the claim names), set by
	// linkReplays when the claim holds.
	sentOperationID, sentCorrelationID string
	flagged, flaggedOther              bool
}

// upstreamContext reads what an advisory's original carries of the
// contract. Whoever published the message set its Dlq-* headers, not a
// consumer that gave up on it: a poison message may carry Dlq-Principal
// (re-checked by a revalidate replay), Dlq-Original-Msg-Id (a replay
// would publish under another message's id, which the target stream then
// drops as a duplicate), Dlq-Operation-Id, failure times. None is read: the
// message id is the original's Nats-Msg-Id (or derived), the failure is
// the advisory's. A message that is a replay of the console, which
// Store.Insert confirms (linkReplays, then confirmReplayContext), takes
// the operation and correlation ids the console sent with it, never its
// headers': Nats-Msg-Id and Dlq-Replay-Of of a replay can be read, and
// copied, by anyone who reads the tenant's subject. Every contract header
// not read stays among the stored headers and is named in the flag
// upstream:dlq_headers.
func (r *Record) upstreamContext(h map[string][]string) {
	var unread []string
	for name := range contractFields {
		if len(h[name]) > 0 && name != HeaderNatsMsgID && name != HeaderOperationID && name != HeaderCorrelationID {
			unread = append(unread, name)
		}
	}
	sort.Strings(unread)
	if len(unread) > 0 {
		r.flag("upstream:dlq_headers", "the original message carries %s, set by whoever published it: kept among its headers, not read "+
			"(an advisory's dead letter takes its message id from Nats-Msg-Id and its failure from the advisory)", strings.Join(unread, ", "))
	}
	r.replayContext = &replayContext{operationID: r.header(h, HeaderOperationID), correlationID: r.header(h, HeaderCorrelationID)}
	if r.ReplayOf == 0 {
		r.confirmReplayContext()
	}
}

// confirmReplayContext sets an advisory's record's operation and
// correlation ids. A confirmed replay of a dead letter (ReplayOf, after
// linkReplays) takes those the console sent with it; the original's
// headers, when they say otherwise, are flagged upstream:dlq_headers and
// not read. Otherwise it has none, and the original's, when it carries
// them, are flagged the same way. It is run again when a batch is
// retried, and follows the claim as linkReplays left it.
func (r *Record) confirmReplayContext() {
	c := r.replayContext
	if c == nil {
		return
	}
	var names []string
	if r.ReplayOf > 0 {
		r.OperationID, r.CorrelationID = c.sentOperationID, c.sentCorrelationID
		if c.operationID != "" && c.operationID != c.sentOperationID {
			names = append(names, HeaderOperationID)
		}
		if c.correlationID != "" && c.correlationID != c.sentCorrelationID {
			names = append(names, HeaderCorrelationID)
		}
		if len(names) > 0 && !c.flaggedOther {
			c.flaggedOther = true
			r.flag("upstream:dlq_headers", "the original message carries %s other than the console sent with its replay of dead letter %d: "+
				"kept among its headers, not read; the console's are taken", strings.Join(names, ", "), r.ReplayOf)
		}
		return
	}
	r.OperationID, r.CorrelationID = "", ""
	if c.flagged {
		return
	}
	if c.operationID != "" {
		names = append(names, HeaderOperationID)
	}
	if c.correlationID != "" {
		names = append(names, HeaderCorrelationID)
	}
	if len(names) == 0 {
		return
	}
	c.flagged = true
	r.flag("upstream:dlq_headers", "the original message carries %s, which only the console's own replays send, and it is not a replay the console confirmed (%s): "+
		"kept among its headers, not read; without an operation id, a same_operation replay is refused", strings.Join(names, ", "), HeaderReplayOf)
}

// confirmReplayContexts runs confirmReplayContext on each record of a
// batch whose replay claims linkReplays has checked.
func confirmReplayContexts(recs []Record) {
	for i := range recs {
		recs[i].confirmReplayContext()
	}
}

// storableJSON returns the advisory as PostgreSQL's jsonb takes it: the
// JSON as Go reads it, written again. What jsonb refuses and Go reads is
// replaced, and flagged not_storable:advisory: NUL and invalid UTF-8
// (U+FFFD), a lone surrogate escape such as \ud800 (Go reads it as
// U+FFFD; jsonb refuses it), a number numeric cannot hold (its text, as a
// string). Anyone who may publish on an advisory subject can send such
// JSON; refused, it would put the record in its raw form, which keeps
// neither the advisory nor its error. What jsonb keeps of the rest (keys,
// values, numbers as written) does not change: jsonb drops whitespace and
// key order and keeps the last of a repeated key, as Go does.
func (r *Record) storableJSON(raw []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil // not reached: raw was decoded before
	}
	changed := !utf8.Valid(raw) || loneSurrogateEscape(raw)
	v = cleanJSON(v, &changed)
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if changed {
		r.flag("not_storable:advisory", "the advisory holds what PostgreSQL cannot store (NUL, invalid UTF-8, a lone surrogate escape or a number out of range): stored with those replaced")
	}
	return out
}

// cleanJSON makes the strings of v storable text (CleanText: a NUL) and
// turns a number PostgreSQL's numeric cannot hold into its text, noting
// what it changed.
func cleanJSON(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		c := CleanText(x)
		*changed = *changed || c != x
		return c
	case json.Number:
		if !numericFits(string(x)) {
			*changed = true
			return string(x)
		}
	case []any:
		for i := range x {
			x[i] = cleanJSON(x[i], changed)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[cleanJSON(k, changed).(string)] = cleanJSON(e, changed)
		}
		return out
	}
	return v
}

// numericFits reports whether PostgreSQL's numeric surely takes the JSON
// number n: at most 1,000 characters and an exponent within ±1,000 (numeric
// holds 131,072 digits before the point and 16,383 after; an advisory's
// numbers are counts and sequences).
func numericFits(n string) bool {
	if len(n) > 1000 {
		return false
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err == nil && exp >= -1000 && exp <= 1000
}

// loneSurrogateEscape reports whether the JSON text raw (well formed)
// holds a \u escape of a UTF-16 surrogate that is not half of a pair:
// Go reads it as U+FFFD, jsonb refuses it.
func loneSurrogateEscape(raw []byte) bool {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		c, ok := hex4(raw[i:])
		switch {
		case !ok: // another escape: skip its character
			i++
		case c >= 0xD800 && c < 0xDC00:
			if lo, ok := hex4(raw[i+6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			return true
		case c >= 0xDC00 && c < 0xE000:
			return true
		default:
			i += 5
		}
	}
	return false
}

// parseAdvisoryJSON decodes an advisory; a body that is not one is still
// kept, as a malformed row in tenant "unknown".
func parseAdvisoryJSON(data []byte) (Advisory, error) {
	var a Advisory
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("advisory is not JSON: %w", err)
	}
	if a.Stream == "" || a.StreamSeq == 0 {
		return a, fmt.Errorf("advisory names no stream and sequence")
	}
	return a, nil
}

// unreadableAdvisory keeps a captured advisory that could not be decoded,
// as a malformed row of tenant "unknown" holding the advisory as payload.
func unreadableAdvisory(m Received, cause error) Record {
	r := Record{
		Tenant:         UnknownTenant,
		ItemType:       "advisory",
		ErrorClass:     ClassUnclassified,
		SourceKind:     SourceAdvisory,
		SourceStream:   CleanText(m.Stream),
		SourceSeq:      m.Seq,
		DeadLetteredAt: m.Time,
	}
	r.setDelivery(m)
	r.checkStoredAt(time.Now())
	r.MsgID, r.MsgIDDerived = r.derivedMsgID(), true
	r.Subject = r.text("subject", "the subject", m.Subject)
	r.Headers = encodeHeaders(r.headerView(m, true))
	r.setPayload(m.Data)
	r.flag("advisory_unreadable", "captured advisory could not be read: %v", cause)
	r.Fingerprint = Fingerprint(r.ErrorClass, "unreadable advisory", "")
	return r
}
