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
		MessageID:   bound(e.MessageID, maxMessageID),
		OperationID: bound(e.OperationID, maxOperationID),
		RequestID:   bound(e.RequestID, maxRequestID),
		Reason:      bound(e.Reason, maxReason),
		Outcome:     e.Outcome,
		RemoteAddr:  bound(e.RemoteAddr, maxRemoteAddr),
		UserAgent:   bound(e.UserAgent, maxUserAgent),
		HashVersion: currentHashVersion,
	}
}
