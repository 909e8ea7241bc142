package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// hashDomain starts every encoded entry, so these hashes cannot be confused
// with hashes of anything else, and each encoding has its own tag.
const (
	hashDomainV1        = "quarantine-audit-v1"
	hashDomainV2        = "quarantine-audit-v2"
	hashDomainV3        = "quarantine-audit-v3"
	contentDomainV3     = "quarantine-audit-v3-content"
	currentHashVersion  = 3 // the encoding of every entry appended now
	firstDigestVersion  = 3 // the first encoding whose stubs carry a content digest
	contentDigestLength = sha256.Size
	nonceLength         = 16 // bytes of crypto/rand each entry of version 3 draws
)

// timeLayout is how the hash sees at: UTC, always six fractional digits,
// which is exactly PostgreSQL's timestamptz precision.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// hashEntry returns the hash of e in the encoding of e.HashVersion,
// computed from its fields (a stored ContentDigest is not used).
//
// Version 3 (every entry appended since migration 0038) is SHA-256 over
// the fields
//
//	tag ("quarantine-audit-v3"), seq (8 bytes, big-endian),
//	content digest (contentDigest, 32 bytes), prev_hash (NULL for seq 1)
//
// written as the fields below are. Because the content is in the hash
// only through its digest, an export can leave an entry's content out and
// still give its digest (a stub), and the entry's hash is recomputed from
// the stub alone: the chain is proven across the entries an export leaves
// out. The digest covers the entry's nonce, 16 random bytes drawn when it
// was appended, before its content: a stub shows no nonce, so nobody who
// holds one can confirm a guess of what the entry says by hashing the
// guess (an entry's fields are often few and small: a tenant's name, a
// count). Without the nonce the stub's digest and hash confirm nothing.
//
// Version 2 is SHA-256 over the canonical encoding of e (every field but
// Hash, and PrevHash). The encoding is a sequence of fields, each written
// as
//
//	present (1 byte: 0 for SQL NULL, 1 otherwise)
//	length  (8 bytes, big-endian; absent when NULL)
//	value   (length bytes; absent when NULL)
//
// in this order: the tag ("quarantine-audit-v2"), seq (8 bytes, big-endian),
// at (timeLayout, UTC), actor issuer, actor subject, actor email, actor email
// verified (one byte, 1 or 0), tenant, action, object type, object id,
// message id, operation id, request id, reason, outcome, before, after
// (canonical JSON, NULL when absent), remote address, user agent, prev_hash
// (NULL for seq 1). Text is its UTF-8 bytes. Length prefixes make the
// encoding injective: no two different entries encode to the same bytes.
//
// Entries of HashVersion 1 (written before actor_email_verified existed) use
// the tag "quarantine-audit-v1" and have no email verified field; the tags
// keep the encodings apart.
func hashEntry(e *Entry) []byte {
	if e.HashVersion >= firstDigestVersion {
		return chainHash(e.Seq, contentDigest(e), e.PrevHash)
	}
	h := sha256.New()
	if e.HashVersion == 1 {
		field(h, []byte(hashDomainV1))
	} else {
		field(h, []byte(hashDomainV2))
	}
	writeContent(h, e)
	nullableField(h, e.PrevHash)
	return h.Sum(nil)
}

// contentDigest returns the version 3 content digest of e: SHA-256 over
// the tag "quarantine-audit-v3-content", e's nonce (16 bytes; NULL, which
// the table refuses for version 3, is the NULL marker), and the
// version 2 encoding of its fields from seq to user agent (seq included,
// so that no two entries share a digest), without prev_hash.
func contentDigest(e *Entry) []byte {
	h := sha256.New()
	field(h, []byte(contentDomainV3))
	nullableField(h, e.Nonce)
	writeContent(h, e)
	return h.Sum(nil)
}

// chainHash is the version 3 hash of the entry at seq whose content digest
// is digest, after the entry whose hash is prev (nil for seq 1).
func chainHash(seq int64, digest, prev []byte) []byte {
	h := sha256.New()
	field(h, []byte(hashDomainV3))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	field(h, b[:])
	field(h, digest)
	nullableField(h, prev)
	return h.Sum(nil)
}

// seal gives e, a new entry of the current version with its seq and
// prev_hash set, a fresh nonce, its content digest and hash.
func seal(e *Entry) {
	e.HashVersion = currentHashVersion
	e.Nonce = make([]byte, nonceLength)
	_, _ = rand.Read(e.Nonce) // never fails (crypto/rand panics instead)
	e.ContentDigest = contentDigest(e)
	e.Hash = chainHash(e.Seq, e.ContentDigest, e.PrevHash)
}

// storedVersion is the hash version of a row: its hash_version, or for
// rows written before that column (NULL) 1 when actor_email_verified is
// NULL, else 2.
func storedVersion(version *int16, verified *bool) int {
	switch {
	case version != nil:
		return int(*version)
	case verified == nil:
		return 1
	}
	return 2
}

// writeContent writes e's fields from seq to user agent, as every version
// encodes them (version 1 without email verified).
func writeContent(h io.Writer, e *Entry) {
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], uint64(e.Seq))
	field(h, seq[:])
	field(h, []byte(e.At.UTC().Format(timeLayout)))
	field(h, []byte(e.Actor.Issuer))
	field(h, []byte(e.Actor.Subject))
	field(h, []byte(e.Actor.Email))
	if e.HashVersion != 1 {
		verified := []byte{0}
		if e.Actor.EmailVerified {
			verified[0] = 1
		}
		field(h, verified)
	}
	for _, s := range [...]string{
		e.Tenant, e.Action, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.RequestID,
		e.Reason, string(e.Outcome),
	} {
		field(h, []byte(s))
	}
	nullableField(h, e.Before)
	nullableField(h, e.After)
	field(h, []byte(e.RemoteAddr))
	field(h, []byte(e.UserAgent))
}

func field(h io.Writer, b []byte) {
	var hdr [9]byte
	hdr[0] = 1
	binary.BigEndian.PutUint64(hdr[1:], uint64(len(b)))
	h.Write(hdr[:])
	h.Write(b)
}

// nullableField writes b, or a NULL marker when b is nil. An empty but
// non-nil b is a value, not NULL.
func nullableField(h io.Writer, b []byte) {
	if b == nil {
		h.Write([]byte{0})
		return
	}
	field(h, b)
}

// canonicalJSON turns jsonb text as PostgreSQL prints it (keys sorted,
// numbers and escapes normalised, ", " and ": " between tokens) into the
// canonical form: the same text with insignificant whitespace removed. nil
// (SQL NULL) stays nil. The result is also what encoding/json emits for it as
// a json.RawMessage, so exports carry the hashed bytes unchanged.
func canonicalJSON(jsonbText *string) (json.RawMessage, error) {
	if jsonbText == nil {
		return nil, nil
	}
	var b bytes.Buffer
	b.Grow(len(*jsonbText))
	if err := json.Compact(&b, []byte(*jsonbText)); err != nil {
		return nil, fmt.Errorf("compact json: %w", err)
	}
	return b.Bytes(), nil
}

// cleanText makes s storable in a PostgreSQL text column: invalid UTF-8 and
// NUL bytes (which PostgreSQL rejects) become U+FFFD. Audit writes must not
// fail because a user agent or a reason holds odd bytes.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
