package replay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Headers a replay adds to what it re-publishes.
const (
	HeaderReplayOf      = dlq.HeaderReplayOf      // id of the dead letter replayed
	HeaderReplayRequest = dlq.HeaderReplayRequest // id of the replay request
	HeaderPayloadEdited = "Dlq-Payload-Edited"    // hex SHA-256 of an edited payload
)

// SubjectAllowlist says which subjects a replay of a tenant's dead letter
// may publish to: the tenant's replay subject patterns (REPLAY_SUBJECT_ALLOW).
// A tenant with none may not replay at all, and system subjects ($JS.>,
// $SYS.>, _INBOX.> and anything starting with $) are always refused, so a
// producer cannot aim a replay at another tenant's subjects or at the
// broker's API by writing Dlq-Original-Subject. So are the console's own
// dead-letter subjects (Reserving): a replay there would be stored by the
// DLQ stream, reported replayed, and come back as a new dead letter.
type SubjectAllowlist struct {
	entries []subjectEntry
	// dlqPrefix is DLQ_SUBJECT_PREFIX: <dlqPrefix>.> is refused.
	dlqPrefix string
}

// Reserving returns a copy of a (nil: an empty list) that also refuses
// every subject under the console's dead-letter prefix (DLQ_SUBJECT_PREFIX;
// its stream captures <prefix>.>), as system subjects are refused.
func (a *SubjectAllowlist) Reserving(dlqPrefix string) *SubjectAllowlist {
	out := &SubjectAllowlist{dlqPrefix: dlqPrefix}
	if a != nil {
		out.entries = a.entries
	}
	return out
}

// subjectEntry is one pattern, for one tenant or (tenant "") every tenant,
// in which "{tenant}" stands for the tenant of the dead letter.
type subjectEntry struct {
	tenant, pattern string
}

// TenantPlaceholder is the token of a pattern that stands for the tenant of
// the dead letter being replayed.
const TenantPlaceholder = "{tenant}"

// SubjectSetting names the setting in sentences about it.
const SubjectSetting = replaypolicy.SubjectSetting

// ParseSubjectAllowlist reads REPLAY_SUBJECT_ALLOW: comma-separated
// entries, each a NATS subject pattern (* one token, > the rest) for every
// tenant, which must then hold the token {tenant} (app.{tenant}.>), or
// tenant=pattern for one tenant (acme=billing.acme.>). An empty setting
// allows nothing: replays are refused until it names subjects.
func ParseSubjectAllowlist(s string) (*SubjectAllowlist, error) {
	a := &SubjectAllowlist{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		var entry subjectEntry
		if tenant, pattern, ok := strings.Cut(e, "="); ok {
			tenant = strings.TrimSpace(tenant)
			if tenant == "" || strings.ContainsAny(tenant, ".*> {}") {
				return nil, fmt.Errorf("entry %q: %q is not a tenant (one token, no wildcards)", e, tenant)
			}
			entry = subjectEntry{tenant: tenant, pattern: strings.TrimSpace(pattern)}
		} else {
			entry.pattern = e
			if !slices.Contains(strings.Split(e, "."), TenantPlaceholder) {
				return nil, fmt.Errorf("pattern %q is for every tenant but has no %s token: a dead letter of one tenant could be replayed "+
					"into another's subjects; write it with %s (app.%s.>) or for one tenant (acme=%s)", e, TenantPlaceholder, TenantPlaceholder, TenantPlaceholder, e)
			}
		}
		toks := strings.Split(entry.pattern, ".")
		for i, t := range toks {
			if t == TenantPlaceholder {
				continue
			}
			if t == "" || (t == ">" && i != len(toks)-1) || (strings.ContainsAny(t, "*>{}") && len(t) > 1) {
				return nil, fmt.Errorf("pattern %q is not a NATS subject pattern", entry.pattern)
			}
		}
		a.entries = append(a.entries, entry)
	}
	return a, nil
}

// Empty reports whether no tenant may replay (a nil list too).
func (a *SubjectAllowlist) Empty() bool { return a == nil || len(a.entries) == 0 }

// Patterns returns tenant's patterns, with {tenant} replaced: what its
// replays may publish to. An entry of every tenant that names {tenant}
// gives dlq.UnknownTenant nothing: it is no tenant of the services (ingest
// puts there what names none, from any producer), and app.unknown.> is no
// place a replay of it belongs; an entry for it by name is taken.
func (a *SubjectAllowlist) Patterns(tenant string) []string {
	var out []string
	for _, e := range a.entries {
		if e.tenant == "" && tenant == dlq.UnknownTenant && strings.Contains(e.pattern, TenantPlaceholder) {
			continue
		}
		if e.tenant == "" || e.tenant == tenant {
			out = append(out, strings.ReplaceAll(e.pattern, TenantPlaceholder, tenant))
		}
	}
	return out
}

// Check returns why no replay may publish to subject, whatever its tenant
// (not a subject one can publish to, a system subject, or one under the
// console's dead-letter prefix), or nil.
func (a *SubjectAllowlist) Check(subject string) error {
	if err := dlq.ValidatePublishSubject(subject); err != nil {
		return fmt.Errorf("subject %q cannot be published to: %v", subject, err)
	}
	if strings.HasPrefix(subject, "$") || strings.HasPrefix(subject, "_INBOX.") || subject == "_INBOX" {
		return fmt.Errorf("subject %q is a system subject; replays never publish there", subject)
	}
	if a != nil && a.dlqPrefix != "" && strings.HasPrefix(subject, a.dlqPrefix+".") {
		return fmt.Errorf("subject %q is the console's own dead-letter subject (DLQ_SUBJECT_PREFIX %s): a replay there would come back as a new dead letter; "+
			"replays never publish there", subject, a.dlqPrefix)
	}
	return nil
}

// For returns why a replay of a dead letter of tenant may not publish to
// subject (Check, then the tenant's patterns), or nil.
func (a *SubjectAllowlist) For(tenant, subject string) error {
	if err := a.Check(subject); err != nil {
		return err
	}
	patterns := a.Patterns(tenant)
	if len(patterns) == 0 {
		return fmt.Errorf("no replay subjects are configured for tenant %q (%s), so its dead letters cannot be replayed", tenant, SubjectSetting)
	}
	for _, p := range patterns {
		if subjectMatches(p, subject) {
			return nil
		}
	}
	return fmt.Errorf("subject %q is not in the replay allowlist of tenant %q (%s: %s)", subject, tenant, SubjectSetting, strings.Join(patterns, ", "))
}

func subjectMatches(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) || (p != "*" && p != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}

// Headers are the headers of a dead letter a replay sends on: the
// original message's own headers, without any Nats-* header (Nats-Rollup,
// Nats-Expected-* and the like must never be forwarded; the message id is
// set by the worker), without the Dlq-* context headers (the worker sets
// the ones a replay carries), and without an earlier replay's
// Dlq-Replay-Of and Dlq-Replay-Request as the producer helper renamed them
// (the new ones replace them: a replay loop links one generation back),
// nor any other Upstream-Dlq-* header: those are the bookkeeping of an
// earlier hop (its principal, its edit marker), renamed by the producer
// helper so that they never pass for this message's own context, and a
// replay does not carry them on. Status and Description are kept here
// (an order event's "Status: cancelled" is the application's); a replay
// with no payload that carries one is blocked (natsStatusHeader). A
// header is left out by its name
// alone: one kept whose name or value holds the text "Nats-" is not
// dropped or rewritten (the replay would carry less than was approved,
// unseen), it blocks the item (sendFacts, replaypolicy.BrokerKeyText: the
// broker could miss the replay's Nats-Msg-Id).
func Headers(hs []dlq.HeaderValue) []dlq.HeaderValue {
	out := make([]dlq.HeaderValue, 0, len(hs))
	for _, h := range hs {
		if Sent(h.Name, h.NameEncoding != "") {
			out = append(out, h)
		}
	}
	return out
}

// Sent reports whether a replay sends a received header of this name
// (Headers keeps it); nameEncoded: the name is not text (stored base64),
// which cannot be a header we trust. The dead letter's page marks the
// others, so that what an approver reads there is what goes.
func Sent(name string, nameEncoded bool) bool {
	if nameEncoded {
		return false
	}
	lower := strings.ToLower(name)
	return !strings.HasPrefix(lower, "nats-") && !strings.HasPrefix(lower, "dlq-") && !earlierHop(lower)
}

// OwnHeaders are the headers a replay carries of its own
// (setReplayHeaders), by name, for the pages to list.
var OwnHeaders = []string{dlq.HeaderNatsMsgID, dlq.HeaderOperationID, dlq.HeaderCorrelationID, HeaderReplayOf, HeaderReplayRequest, HeaderPayloadEdited}

// natsStatusHeader reports whether lower, a header's name in lower case,
// is one nats.go reads a server's status line into. Every JetStream
// consumer built on it takes a message that carries them with no payload
// for the server's word (a "409 Consumer Deleted" ends its Fetch; a "100"
// is swallowed, never acked), not a message: a replay of such a dead
// letter, reported replayed, would never reach the application, or would
// stop its consumer (TestRevBroker20StatusHeaderReplayNeverReachesConsumer).
// With a payload it is a message whatever its headers (jetstream's
// checkMsg), and the headers are the application's: they are sent
// (TestRevReplay32StatusHeaderKeptWithAPayload). A replay with no payload
// that carries one, in any case (other clients may read them so), is
// blocked (sendFacts: replaypolicy.Send.StatusHeader), so what the
// approver reads is what goes. From 2026-12-05 to 2026-12-06 drafts left
// them out whatever the payload. headerFactsOf judges them by the same
// names (statusHeaderNames).
func natsStatusHeader(lower string) bool { return slices.Contains(statusHeaders, lower) }

// statusHeaders are the names, in lower case, natsStatusHeader reports.
var statusHeaders = []string{"status", "description"}

// Message builds the message a replay publishes: the original subject and
// payload (or the edited one, whose hex SHA-256 editedSHA256 then names in
// Dlq-Payload-Edited), the original headers (see Headers), the original
// message id and operation and correlation ids, and the replay's own ids.
func Message(subject, msgID, opID, corrID string, deadLetterID, requestID int64, hs []dlq.HeaderValue, payload []byte, editedSHA256 string) (*nats.Msg, error) {
	orig, err := dlq.DecodeHeaders(Headers(hs))
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(subject)
	m.Data = payload
	for k, vs := range orig {
		for _, v := range vs {
			m.Header.Add(k, v)
		}
	}
	setReplayHeaders(m, msgID, opID, corrID, deadLetterID, requestID, editedSHA256)
	return m, nil
}

// setReplayHeaders sets on m the headers a replay carries of its own (see
// Message): the original message id, operation and correlation ids, the
// dead letter and request it replays, and the edited payload's hash.
// sendFacts counts the size of a replay by them, and holds the ids a
// producer gave to replaypolicy.BrokerKeyText (the request and dead letter
// ids are digits and the hash hex, which never hold it).
func setReplayHeaders(m *nats.Msg, msgID, opID, corrID string, deadLetterID, requestID int64, editedSHA256 string) {
	m.Header.Set(dlq.HeaderNatsMsgID, msgID)
	if opID != "" {
		m.Header.Set(dlq.HeaderOperationID, opID)
	}
	if corrID != "" {
		m.Header.Set(dlq.HeaderCorrelationID, corrID)
	}
	m.Header.Set(HeaderReplayOf, strconv.FormatInt(deadLetterID, 10))
	m.Header.Set(HeaderReplayRequest, strconv.FormatInt(requestID, 10))
	if editedSHA256 != "" {
		m.Header.Set(HeaderPayloadEdited, editedSHA256)
	}
}

// earlierHop reports whether a header name (lower case) is an earlier
// hop's Dlq-* header as the producer helper renamed it (Upstream-Dlq-*).
func earlierHop(lower string) bool {
	return strings.HasPrefix(lower, strings.ToLower(dlq.UpstreamPrefix)+"dlq-")
}
