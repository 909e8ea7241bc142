package dlq

import (
	"fmt"
	"unicode/utf8"

	"github.com/quarantine-console/quarantine"
)

// Bounds on what a producer sends. PostgreSQL refuses a B-tree index entry
// over about 2,700 bytes, so an unbounded value in an indexed column makes
// its insert fail; before these bounds one such dead letter stalled ingest.
// A value over its bound is never cut away: it is stored whole (in its
// column, or in the subject and the headers it came from), indexed through a
// bounded key, and flagged oversized:<field>.
const (
	// MaxTenantBytes bounds the tenant column, which leads most indexes and
	// every counter. A longer tenant token is stored as its BoundedKey; the
	// whole token stays in the subject.
	MaxTenantBytes = quarantine.MaxTenantBytes
	// MaxItemTypeBytes bounds the item type column likewise; the whole value
	// stays in the subject (or in Dlq-Item-Type, when taken from there).
	MaxItemTypeBytes = quarantine.MaxItemTypeBytes
	// LookupPrefix is how many characters of a message, operation or
	// correlation id their lookup indexes hold (at most 1,024 bytes); the
	// same expression, left(column, 256), is in migration 0008 and in every
	// query that looks an id up. A longer id is stored, found by exact value
	// and replayed whole: the index narrows to the rows sharing its first
	// 256 characters and the row itself decides.
	LookupPrefix = 256
	// MaxSubjectBytes is the longest subject a replay publishes to. A NATS
	// server refuses a protocol line over 4,096 bytes (max_control_line) and
	// drops the connection that sent it, so a longer Dlq-Original-Subject is
	// kept, flagged, and not replayed.
	MaxSubjectBytes = 1024
)

// BoundedKey is quarantine.BoundedKey, the one keying of a value longer
// than its column, which audit rows use too.
func BoundedKey(s string, max int) string { return quarantine.BoundedKey(s, max) }

// bounded stores s in a bounded column: s itself, or its BoundedKey and the
// oversized:<field> flag.
func (r *Record) bounded(field, s string, max int) string {
	if len(s) <= max {
		return s
	}
	key := BoundedKey(s, max)
	r.flag("oversized:"+field, "%s is %d bytes, over the %d this column holds: stored as %q, the whole value is in the subject and headers",
		field, len(s), max, key)
	return key
}

// checkBounds flags values stored whole whose indexes or uses hold only a
// part of them.
func (r *Record) checkBounds() {
	for _, id := range []struct {
		field, v string
	}{{"msg_id", r.MsgID}, {"operation_id", r.OperationID}, {"correlation_id", r.CorrelationID}} {
		if n := utf8.RuneCountInString(id.v); n > LookupPrefix {
			r.flag("oversized:"+id.field, "%s is %d characters long: stored and replayed whole, found by exact value through an index on its first %d",
				id.field, n, LookupPrefix)
		}
	}
	if n := len(r.OriginalSubject); n > MaxSubjectBytes {
		r.flag("oversized:original_subject", "%s is %d bytes, over the %d a replay can publish to: kept, but it cannot be replayed",
			HeaderOriginalSubject, n, MaxSubjectBytes)
	}
	if n := utf8.RuneCountInString(r.Error); n > TextSearchPrefix {
		r.flag("oversized:error", "the error is %d characters long: stored whole, but text search covers its first %d", n, TextSearchPrefix)
	}
}

// short quotes a producer's value for a reason text, cut to 80 characters:
// reasons explain, the value itself is kept elsewhere.
func short(s string) string {
	const n = 80
	if utf8.RuneCountInString(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:n]))
}
