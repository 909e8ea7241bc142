package dlq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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
func ParseWatchStreams(s string) ([]WatchStream, error) {
	var out []WatchStream
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, tmpl, ok := strings.Cut(part, ":")
		if !ok {
			tmpl = DefaultWatchTemplate
		}
		if name == "" || strings.ContainsAny(name, ".*> \t") {
			return nil, fmt.Errorf("stream name %q is not a valid JetStream stream name", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("stream %q is listed twice", name)
		}
		seen[name] = true
		toks := strings.Split(tmpl, ".")
		var hasTenant, hasType bool
		for i, t := range toks {
			switch t {
			case "":
				return nil, fmt.Errorf("stream %s: template %q has an empty token", name, tmpl)
			case "{tenant}":
				hasTenant = true
			case "{item_type}":
				if i != len(toks)-1 {
					return nil, fmt.Errorf("stream %s: template %q: {item_type} must be the last token", name, tmpl)
				}
				hasType = true
			}
		}
		if !hasTenant || !hasType {
			return nil, fmt.Errorf("stream %s: template %q must contain {tenant} and {item_type}", name, tmpl)
		}
		out = append(out, WatchStream{Name: name, Template: toks})
	}
	return out, nil
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
	Time        time.Time
}

// ParseAdvisory turns a captured advisory and the original message (nil
// when gone) into a Record. Like ParseDLQ it never fails. via is the
// advisory message as delivered from the advisory stream: its position is
// the record's delivery (one row per advisory), its stored time the record's
// dead-lettered time (the advisory's own timestamp is a producer's claim,
// checked against it). raw is the advisory as received; it is stored with
// the row.
func ParseAdvisory(w WatchStream, adv Advisory, orig *Original, raw []byte, via Received) Record {
	r := Record{
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
	r.checkStoredAt(time.Now())
	switch at := adv.Timestamp; {
	case at.IsZero():
		r.flag("implausible:advisory_time", "the advisory gives no time it was raised (or the zero time); it was captured at %s",
			r.DeadLetteredAt.Format(time.RFC3339Nano))
	case at.Sub(r.DeadLetteredAt) > MaxClockSkew || r.DeadLetteredAt.Sub(at) > MaxClockSkew:
		r.flag("implausible:advisory_time", "the advisory says it was raised at %s, but it was captured at %s",
			at.UTC().Format(time.RFC3339Nano), r.DeadLetteredAt.Format(time.RFC3339Nano))
	}
	if orig == nil {
		r.PayloadUnavailable = true
		r.setPayload(nil)
		r.Headers = []HeaderValue{}
		r.Tenant = "unknown"
		r.ItemType = r.bounded("item_type", strings.ToLower(r.SourceStream), MaxItemTypeBytes)
		r.flag("original_gone", "the original message %s:%d was gone from its stream; tenant unknown", short(r.SourceStream), adv.StreamSeq)
		r.ErrorClass = ClassUnclassified
	} else {
		r.Subject = r.text("subject", "the subject", orig.Subject)
		h := r.headerView(Received{Header: orig.Header, HeaderBlock: orig.HeaderBlock}, false)
		r.Headers = encodeHeaders(h)
		h = r.contractView(h)
		r.setPayload(orig.Data)
		r.applyContract(h)
		r.ReplayOf = r.replayOf(h) // a replayed message that hit MaxDeliver is a loop too
		r.OriginalSubject = r.Subject
		if id := r.header(h, HeaderNatsMsgID); id != "" && r.MsgID == "" {
			r.MsgID = id
		}
		tenant, itemType, ok := w.Map(orig.Subject)
		switch {
		case ok:
			r.Tenant = r.bounded("tenant", r.text("tenant", "the subject's tenant", tenant), MaxTenantBytes)
			r.ItemType = r.bounded("item_type", r.text("item_type", "the subject's item type", itemType), MaxItemTypeBytes)
		default:
			r.Tenant = "unknown"
			r.ItemType = r.bounded("item_type", strings.ToLower(r.SourceStream), MaxItemTypeBytes)
			r.flag("subject_unmapped", "subject %s does not match the template %q of watched stream %s", short(r.Subject), strings.Join(w.Template, "."), w.Name)
		}
	}
	if r.MsgID == "" {
		r.MsgID = fmt.Sprintf("%s:%d", r.SourceStream, adv.StreamSeq)
		r.MsgIDDerived = true
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
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, r.Stack)
	return r
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
		Tenant:         "unknown",
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
