package dlq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
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

// storableJSON returns raw when PostgreSQL's jsonb takes it as it is, else
// the same JSON with its strings cleaned (NUL and invalid UTF-8 become
// U+FFFD; jsonb refuses both), flagged.
func (r *Record) storableJSON(raw []byte) []byte {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil // not reached: raw was decoded before
	}
	out, err := json.Marshal(cleanJSON(v))
	if err != nil {
		return nil
	}
	r.flag("not_utf8:advisory", "the advisory holds NUL or invalid UTF-8: stored with replacement characters")
	return out
}

func cleanJSON(v any) any {
	switch x := v.(type) {
	case string:
		return CleanText(x)
	case []any:
		for i := range x {
			x[i] = cleanJSON(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[CleanText(k)] = cleanJSON(e)
		}
		return out
	}
	return v
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
	r.MsgID, r.MsgIDDerived = r.derivedMsgID(), true
	r.Subject = r.text("subject", "the subject", m.Subject)
	r.Headers = encodeHeaders(r.headerView(m, true))
	r.setPayload(m.Data)
	r.flag("advisory_unreadable", "captured advisory could not be read: %v", cause)
	r.Fingerprint = Fingerprint(r.ErrorClass, "unreadable advisory", "")
	return r
}
