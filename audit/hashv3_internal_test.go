package audit

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashEntryV3KnownAnswer pins hash version 3 as hashEntry's comment
// describes it: the content digest and the hash over seq, digest and
// prev_hash. Computed independently (Python, from the comment).
func TestHashEntryV3KnownAnswer(t *testing.T) {
	t.Parallel()
	e := sampleEntry()
	e.HashVersion = 3
	require.Equal(t, "1624465df5ae74e77f8c69863000e723883c40bafb9bc572e73757746322c770", hex.EncodeToString(contentDigest(&e)))
	require.Equal(t, "18af9cecc6cdf946619bda97e72267306e7a1a30a241fa701812b6a7061097f8", hex.EncodeToString(hashEntry(&e)))
	e.Actor.EmailVerified = false
	require.Equal(t, "3e0f9b6eae5b38029a983ab08f0e0dc2eeaeafae42d6ea1d3447b7a67d354af3", hex.EncodeToString(contentDigest(&e)))
	require.Equal(t, "0df1d120ae50c5ee5e99e0de794c93a03f6d4d07d08bd4d2be6b254a1869aea7", hex.EncodeToString(hashEntry(&e)))

	// seal gives a new entry the current version, its digest and hash.
	e.Hash, e.ContentDigest, e.HashVersion = nil, nil, 0
	seal(&e)
	require.Equal(t, 3, e.HashVersion)
	require.Equal(t, contentDigest(&e), e.ContentDigest)
	require.Equal(t, "0df1d120ae50c5ee5e99e0de794c93a03f6d4d07d08bd4d2be6b254a1869aea7", hex.EncodeToString(e.Hash))
	require.Equal(t, e.Hash, chainHash(e.Seq, e.ContentDigest, e.PrevHash), "a stub's hash from seq, digest and prev_hash alone")
}

// TestHashEntryV3CoversEveryField: every content field changes the content
// digest and so the hash; seq and prev_hash change the hash; no two of
// these changes give the same hash.
func TestHashEntryV3CoversEveryField(t *testing.T) {
	t.Parallel()
	base := sampleEntry()
	base.HashVersion = 3
	seen := map[string]string{hex.EncodeToString(hashEntry(&base)): "base"}
	for name, change := range map[string]func(e *Entry){
		"Seq":           func(e *Entry) { e.Seq++ },
		"At":            func(e *Entry) { e.At = e.At.Add(1000) },
		"ActorIssuer":   func(e *Entry) { e.Actor.Issuer += "x" },
		"ActorSubject":  func(e *Entry) { e.Actor.Subject += "x" },
		"ActorEmail":    func(e *Entry) { e.Actor.Email += "x" },
		"EmailVerified": func(e *Entry) { e.Actor.EmailVerified = false },
		"Tenant":        func(e *Entry) { e.Tenant += "x" },
		"Action":        func(e *Entry) { e.Action += "x" },
		"ObjectType":    func(e *Entry) { e.ObjectType += "x" },
		"ObjectID":      func(e *Entry) { e.ObjectID += "x" },
		"MessageID":     func(e *Entry) { e.MessageID += "x" },
		"OperationID":   func(e *Entry) { e.OperationID += "x" },
		"RequestID":     func(e *Entry) { e.RequestID += "x" },
		"Reason":        func(e *Entry) { e.Reason += "x" },
		"Outcome":       func(e *Entry) { e.Outcome = OutcomeDenied },
		"Before":        func(e *Entry) { e.Before = nil },
		"After":         func(e *Entry) { e.After = nil },
		"RemoteAddr":    func(e *Entry) { e.RemoteAddr += "x" },
		"UserAgent":     func(e *Entry) { e.UserAgent += "x" },
		"PrevHash":      func(e *Entry) { e.PrevHash = nil },
		"Version2":      func(e *Entry) { e.HashVersion = 2 },
		"StoredDigest":  func(e *Entry) { e.ContentDigest = make([]byte, 32) }, // not what hashEntry reads
	} {
		e := sampleEntry()
		e.HashVersion = 3
		change(&e)
		h := hex.EncodeToString(hashEntry(&e))
		if name == "StoredDigest" {
			require.Contains(t, seen, h, "hashEntry computes the digest from the content")
			continue
		}
		require.NotContains(t, seen, h, "%s gives the hash of %s", name, seen[h])
		seen[h] = name
	}
}
