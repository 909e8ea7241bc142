package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"sort"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// The hashes below are SHA-256 over fields, each written as its length in
// bytes (8 bytes, big-endian) and then its bytes, the first field naming
// the hash. Each part of an intent is in the audit log (the request's
// replay.request row, an item row per item: docs/replay.md, "Recomputing
// an intent"), so that an auditor recomputes an approved intent from the
// log alone, after the dead letters are gone, and without replay_items,
// which the runtime role may change.

// field writes s to h as one length-prefixed field.
func field(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// IntentHash is the hash of everything a replay will do:
// "quarantine-replay-intent-v2", tenant, class, policy version, rate (the
// decimal digits of its IEEE 754 bits), the reconciliation note when there
// is one ("reconciliation-note", then the note), and per item in order of
// position its ItemHash. Any change makes another hash.
func IntentHash(tenant string, class replaypolicy.Class, policyVersion string, rate float64, note string, items []Item) []byte {
	h := sha256.New()
	field(h, "quarantine-replay-intent-v2")
	field(h, tenant)
	field(h, string(class))
	field(h, policyVersion)
	field(h, fmt.Sprint(math.Float64bits(rate)))
	if note != "" {
		field(h, "reconciliation-note")
		field(h, note)
	}
	sorted := append([]Item(nil), items...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Position < sorted[j].Position })
	for _, it := range sorted {
		field(h, string(ItemHash(it)))
	}
	return h.Sum(nil)
}

// ItemHash is the hash of what one item publishes:
// "quarantine-replay-item-v1", its dead letter id (decimal), message id,
// operation id, correlation id, subject, payload hash (32 bytes) and
// HeadersHash (32 bytes). It binds the values the audit log cuts (an id
// over 512 bytes) whole.
func ItemHash(it Item) []byte {
	return itemHash(it, HeadersHash(it.Headers))
}

// itemHash is ItemHash of it with its HeadersHash, headers.
func itemHash(it Item, headers []byte) []byte {
	h := sha256.New()
	field(h, "quarantine-replay-item-v1")
	field(h, fmt.Sprint(it.DeadLetterID))
	field(h, it.MsgID)
	field(h, it.OperationID)
	field(h, it.CorrelationID)
	field(h, it.Subject)
	field(h, string(it.PayloadSHA256))
	field(h, string(headers))
	return h.Sum(nil)
}

// HeadersHash is the hash of the headers an item publishes, as stored
// (replay_items.headers, in order): "quarantine-replay-headers-v1", then
// per header name, name encoding, value and encoding joined by NUL bytes.
// The audit log keeps this hash, not the headers: a selection's headers
// can come to 64 MiB.
func HeadersHash(headers []dlq.HeaderValue) []byte {
	h := sha256.New()
	field(h, "quarantine-replay-headers-v1")
	for _, hv := range headers {
		field(h, hv.Name+"\x00"+hv.NameEncoding+"\x00"+hv.Value+"\x00"+hv.Encoding)
	}
	return h.Sum(nil)
}

// intent is the intent hash of r with items.
func (r *Request) intent(items []Item) []byte {
	return IntentHash(r.Tenant, r.Class, r.PolicyVersion, r.Rate, r.ReconciliationNote, items)
}
