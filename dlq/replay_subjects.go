package dlq

import (
	"fmt"
	"strings"
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
	if err := ValidatePublishSubject(subject); err != nil {
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
