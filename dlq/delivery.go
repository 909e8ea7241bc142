package dlq

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// setDelivery names the stream message a record was made from and derives
// its unique source key. A stream message is known by its stream, its
// sequence and the moment the stream stored it: the sequence alone restarts
// at 1 when a stream is deleted and made again, the stored time does not, so
// a new message never takes an old one's key (and is never acked without a
// row), while a redelivery of the same message always finds its own. The
// stored time plays the part of the stream's creation time, per message,
// with no lookup and no race with a stream being made again.
//
// When the delivery's metadata cannot be read, the record gets a key of its
// own (random) and the flag metadata_unreadable: it is stored, and a
// redelivery of it may be stored again, which is better than losing it.
func (r *Record) setDelivery(m Received) {
	if m.MetadataErr == nil && m.Seq != 0 {
		r.Delivery = storedDelivery(m.Stream, m.Seq, m.Time)
		r.storedAt, r.idTime = m.Time, m.Time
	} else {
		var nonce [16]byte
		_, _ = rand.Read(nonce[:]) // never fails (crypto/rand panics instead)
		why := "no stream sequence"
		if m.MetadataErr != nil {
			why = m.MetadataErr.Error()
		}
		r.Delivery = fmt.Sprintf("%s unreadable delivery %s", m.Stream, hex.EncodeToString(nonce[:]))
		r.SourceSeq = 0
		r.flag("metadata_unreadable", "the delivery's JetStream metadata could not be read (%s): stored with a key of its own and the time it was received; a redelivery may be stored again",
			CleanText(why))
	}
	r.SourceKey = SourceKey(r.Delivery)
}

// storedDelivery names message seq of stream, stored at at, as
// setDelivery names every delivery of it: its SourceKey is the source key
// of the message's row, whichever path stored it.
func storedDelivery(stream string, seq uint64, at time.Time) string {
	return fmt.Sprintf("%s #%d stored %s", stream, seq, at.UTC().Format(time.RFC3339Nano))
}

// SourceKey is the unique key of a row made from delivery (Record.Delivery):
// its SHA-256, so that the key is 32 bytes whatever the names in it.
func SourceKey(delivery string) [32]byte {
	return sha256.Sum256([]byte("quarantine source v1\n" + delivery))
}
