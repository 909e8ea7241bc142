package dlq

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
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
	Header  map[string][]string
	Data    []byte
	Time    time.Time
}

// ParseAdvisory turns a captured advisory and the original message (nil
// when gone) into a Record. Like ParseDLQ it never fails. raw is the
// advisory as received; it is stored with the row.
func ParseAdvisory(w WatchStream, adv Advisory, orig *Original, raw []byte) Record {
	r := Record{
		SourceKind:     SourceAdvisory,
		SourceStream:   adv.Stream,
		SourceSeq:      adv.StreamSeq,
		SourceConsumer: adv.Consumer,
		DeadLetteredAt: adv.Timestamp.UTC(),
		Advisory:       raw,
	}
	if r.DeadLetteredAt.IsZero() {
		r.DeadLetteredAt = time.Now().UTC()
	}
	if orig == nil {
		r.PayloadUnavailable = true
		r.setPayload(nil)
		r.Headers = []HeaderValue{}
		r.Tenant = "unknown"
		r.ItemType = strings.ToLower(adv.Stream)
		r.flag("the original message %s:%d was gone from its stream; tenant unknown", adv.Stream, adv.StreamSeq)
		r.ErrorClass = ClassUnclassified
	} else {
		r.Subject = r.text("subject", orig.Subject)
		r.Headers = encodeHeaders(orig.Header)
		r.setPayload(orig.Data)
		r.applyContract(orig.Header)
		r.OriginalSubject = r.Subject
		if id := r.header(orig.Header, HeaderNatsMsgID); id != "" && r.MsgID == "" {
			r.MsgID = id
		}
		tenant, itemType, ok := w.Map(orig.Subject)
		switch {
		case ok:
			r.Tenant, r.ItemType = r.text("subject tenant", tenant), r.text("subject item type", itemType)
		default:
			r.Tenant, r.ItemType = "unknown", strings.ToLower(adv.Stream)
			r.flag("subject %q does not match the template %q of watched stream %s", r.Subject, strings.Join(w.Template, "."), w.Name)
		}
	}
	if r.MsgID == "" {
		r.MsgID = fmt.Sprintf("%s:%d", adv.Stream, adv.StreamSeq)
		r.MsgIDDerived = true
	}
	d := int32(min(adv.Deliveries, 1<<31-1))
	r.Attempts = &d
	if adv.Terminated() {
		r.ErrorClass = ClassTerminated
		r.Error = fmt.Sprintf("terminated by consumer %s after %d deliveries", adv.Consumer, adv.Deliveries)
		if adv.Reason != "" {
			r.Error += ": " + CleanText(adv.Reason)
		}
	} else {
		r.ErrorClass = ClassMaxDeliveries
		r.Error = fmt.Sprintf("consumer %s reached its MaxDeliver after %d deliveries without an ack", adv.Consumer, adv.Deliveries)
	}
	r.Consumer = adv.Consumer
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, r.Stack)
	return r
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
		SourceStream:   m.Stream,
		SourceSeq:      m.Seq,
		DeadLetteredAt: m.Time,
		MsgID:          fmt.Sprintf("%s:%d", m.Stream, m.Seq),
		MsgIDDerived:   true,
	}
	r.Subject = r.text("subject", m.Subject)
	r.Headers = encodeHeaders(m.Header)
	r.setPayload(m.Data)
	r.flag("captured advisory could not be read: %v", cause)
	r.Fingerprint = Fingerprint(r.ErrorClass, "unreadable advisory", "")
	return r
}
