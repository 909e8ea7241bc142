package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/quarantine-console/quarantine/dlq"
)

// Headers a replay adds to what it re-publishes.
const (
	HeaderReplayOf      = "Dlq-Replay-Of"      // id of the dead letter replayed
	HeaderReplayRequest = "Dlq-Replay-Request" // id of the replay request
)

// SubjectAllowlist says which subjects a replay may publish to. System
// subjects ($JS.>, $SYS.>, _INBOX.> and anything starting with $) are always
// refused, whatever the patterns say.
type SubjectAllowlist struct {
	// Patterns are NATS subject patterns (* one token, > the rest). Empty
	// allows every subject that is not a system subject.
	Patterns []string
}

// ParseSubjectAllowlist reads REPLAY_SUBJECT_ALLOW: comma-separated patterns.
func ParseSubjectAllowlist(s string) (*SubjectAllowlist, error) {
	a := &SubjectAllowlist{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		toks := strings.Split(p, ".")
		for i, t := range toks {
			if t == "" || (t == ">" && i != len(toks)-1) || (strings.ContainsAny(t, "*>") && len(t) > 1) {
				return nil, fmt.Errorf("pattern %q is not a NATS subject pattern", p)
			}
		}
		a.Patterns = append(a.Patterns, p)
	}
	return a, nil
}

// Check returns why subject may not be published to, or nil.
func (a *SubjectAllowlist) Check(subject string) error {
	if err := dlq.ValidatePublishSubject(subject); err != nil {
		return fmt.Errorf("subject %q cannot be published to: %v", subject, err)
	}
	if strings.HasPrefix(subject, "$") || strings.HasPrefix(subject, "_INBOX.") || subject == "_INBOX" {
		return fmt.Errorf("subject %q is a system subject; replays never publish there", subject)
	}
	if len(a.Patterns) == 0 {
		return nil
	}
	for _, p := range a.Patterns {
		if subjectMatches(p, subject) {
			return nil
		}
	}
	return fmt.Errorf("subject %q is not in the replay allowlist (REPLAY_SUBJECT_ALLOW)", subject)
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
// set by the worker) and without the Dlq-* context headers (the worker sets
// the ones a replay carries).
func Headers(hs []dlq.HeaderValue) []dlq.HeaderValue {
	out := make([]dlq.HeaderValue, 0, len(hs))
	for _, h := range hs {
		if h.NameEncoding != "" {
			continue // a name that is not text cannot be a header we trust
		}
		lower := strings.ToLower(h.Name)
		if strings.HasPrefix(lower, "nats-") || strings.HasPrefix(lower, "dlq-") {
			continue
		}
		out = append(out, h)
	}
	return out
}

// Message builds the message a replay publishes: the original subject and
// payload, the original headers (see Headers), the original message id and
// operation and correlation ids, and the replay's own ids.
func Message(subject, msgID, opID, corrID string, deadLetterID, requestID int64, hs []dlq.HeaderValue, payload []byte) (*nats.Msg, error) {
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
	m.Header.Set(dlq.HeaderNatsMsgID, msgID)
	if opID != "" {
		m.Header.Set(dlq.HeaderOperationID, opID)
	}
	if corrID != "" {
		m.Header.Set(dlq.HeaderCorrelationID, corrID)
	}
	m.Header.Set(HeaderReplayOf, strconv.FormatInt(deadLetterID, 10))
	m.Header.Set(HeaderReplayRequest, strconv.FormatInt(requestID, 10))
	return m, nil
}
