package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/quarantine-console/quarantine"
)

// Bounds of the stored fields, in bytes of UTF-8 (the audit_log CHECK
// constraint audit_log_field_bounds_check holds the same numbers). Every
// field a client, a producer or an identity provider can influence is
// bounded, so no request can make the permanent log grow by more than a few
// kilobytes per entry, whatever it sends.
const (
	maxIssuer      = 512
	maxSubject     = 512
	maxEmail       = 320 // RFC 5321's longest address
	maxTenant      = 256
	maxAction      = 128
	maxObjectType  = 64
	maxObjectID    = 512
	maxMessageID   = 512
	maxOperationID = 512
	maxRequestID   = 64
	maxReason      = 4096
	maxRemoteAddr  = 64
	maxUserAgent   = 512
	// maxJSON bounds before and after as encoding/json writes them.
	// PostgreSQL prints jsonb with a space after every ',' and ':', which at
	// most doubles it: the CHECK allows 64 KiB of that text.
	maxJSON = 32 << 10
)

// bound makes s storable (see cleanText) and at most max bytes long. A
// longer value keeps its first bytes, cut on a character boundary, followed
// by a marker that says it was cut and how long it was, so a reader never
// mistakes a cut value for the whole one.
func bound(s string, limit int) string {
	s = cleanText(s)
	if len(s) <= limit {
		return s
	}
	mark := fmt.Sprintf("…[cut, %d bytes in all]", len(s))
	keep := max(limit-len(mark), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + mark
}

// MessageKey is a message id as an audit row stores it and as every
// lookup by message id (Filter.MessageID, Trail) compares it: the id
// itself (made storable, see cleanText), or, when longer than the column's
// 512 bytes, its quarantine.BoundedKey, as a dead letter keys its long
// tenant: its first bytes, "…#" and 16 hex digits of the SHA-256 of the
// whole id. A dead letter keeps the id whole, and looking it up by the
// whole id finds its rows; two ids that share their first bytes stay
// apart. (Rows written before this keying hold a long id cut with
// "…[cut, N bytes in all]": they are found by that text only.)
func MessageKey(id string) string { return quarantine.BoundedKey(cleanText(id), maxMessageID) }

// OperationKey is an operation id as an audit row stores it, keyed as
// MessageKey keys a message id.
func OperationKey(id string) string { return quarantine.BoundedKey(cleanText(id), maxOperationID) }

// boundJSON returns j, or, when it is longer than maxJSON, a small object
// saying so with the length and SHA-256 of what was left out.
func boundJSON(j *string) *string {
	if j == nil || len(*j) <= maxJSON {
		return j
	}
	sum := sha256.Sum256([]byte(*j))
	b, _ := json.Marshal(map[string]any{"cut": true, "bytes": len(*j), "sha256": hex.EncodeToString(sum[:])}) // plain values always marshal
	s := string(b)
	return &s
}

// newEntry returns the stored form of e's text fields, each bounded, as the
// next entry will hold them. The caller sets seq, time, JSON and hashes.
func newEntry(e *Event) Entry {
	return Entry{
		Actor: quarantine.Actor{
			Issuer:        bound(e.Actor.Issuer, maxIssuer),
			Subject:       bound(e.Actor.Subject, maxSubject),
			Email:         bound(e.Actor.Email, maxEmail),
			EmailVerified: e.Actor.EmailVerified && e.Actor.Email != "",
		},
		Tenant:      bound(e.Tenant, maxTenant),
		Action:      bound(e.Action, maxAction),
		ObjectType:  bound(e.ObjectType, maxObjectType),
		ObjectID:    bound(e.ObjectID, maxObjectID),
		MessageID:   MessageKey(e.MessageID),
		OperationID: OperationKey(e.OperationID),
		RequestID:   bound(e.RequestID, maxRequestID),
		Reason:      bound(e.Reason, maxReason),
		Outcome:     e.Outcome,
		RemoteAddr:  bound(e.RemoteAddr, maxRemoteAddr),
		UserAgent:   bound(e.UserAgent, maxUserAgent),
		HashVersion: currentHashVersion,
	}
}
