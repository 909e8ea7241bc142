package quarantine

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"unicode/utf8"
)

// The widest a dead letter's tenant and item type are stored: a longer
// one is stored as its BoundedKey (package dlq flags it oversized), and a
// policy that names it must name that key (package replaypolicy).
const (
	MaxTenantBytes   = 128
	MaxItemTypeBytes = 256
)

// boundedKeyHash is how many hex digits of the SHA-256 end a bounded key.
const boundedKeyHash = 16

// BoundedKey returns s when it fits in max bytes. Otherwise it returns the
// longest prefix of s that leaves room for "…#" and the first 16 hex digits
// of the SHA-256 of s, followed by those: the same long value always gets
// the same key, two long values sharing a prefix get different ones, and
// the key stays readable. max must be at least 40.
//
// It is the one keying of a value longer than its column: a dead letter's
// tenant and item type (package dlq), an audit row's message and operation
// ids (package audit), so a long id has one key wherever it is looked up.
func BoundedKey(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "…#" + hex.EncodeToString(sum[:])[:boundedKeyHash]
	cut := max - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// keyedSuffix is how every key BoundedKey shortened ends.
var keyedSuffix = regexp.MustCompile(`…#[0-9a-f]{16}$`)

// IsBoundedKey reports whether s reads as a key BoundedKey shortened from
// a longer value (a value that happens to end the same way reads as one
// too: it is then its own key).
func IsBoundedKey(s string) bool { return keyedSuffix.MatchString(s) }
