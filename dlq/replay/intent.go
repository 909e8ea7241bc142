package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"sort"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// IntentHash is SHA-256 over a length-prefixed encoding of everything a
// replay will do: tenant, class, policy version, rate, the reconciliation
// note when there is one (an intent without one hashes as before notes
// existed), and per item (in order) its dead letter id, message id,
// operation id, correlation id, subject, payload hash and headers. Any
// change makes another hash.
func IntentHash(tenant string, class replaypolicy.Class, policyVersion string, rate float64, note string, items []Item) []byte {
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(h, "quarantine-replay-intent-v1")
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
		field(h, fmt.Sprint(it.DeadLetterID))
		field(h, it.MsgID)
		field(h, it.OperationID)
		field(h, it.CorrelationID)
		field(h, it.Subject)
		field(h, string(it.PayloadSHA256))
		for _, hv := range it.Headers {
			field(h, hv.Name+"\x00"+hv.NameEncoding+"\x00"+hv.Value+"\x00"+hv.Encoding)
		}
		field(h, "end-item")
	}
	return h.Sum(nil)
}

// intent is the intent hash of r with items.
func (r *Request) intent(items []Item) []byte {
	return IntentHash(r.Tenant, r.Class, r.PolicyVersion, r.Rate, r.ReconciliationNote, items)
}
