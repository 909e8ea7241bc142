package audit

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashEntryV3KnownAnswer pins hash version 3 as hashEntry's comment
// describes it: the content digest over the nonce and the content, and
// the hash over seq, digest and prev_hash. Computed independently (Python,
// from the comment: fix-audit-salt recomputed them with the nonce 00 01 ..
// 0f; the same script gives fix-audit-v3's values without the nonce).
func TestHashEntryV3KnownAnswer(t *testing.T) {
	t.Parallel()
	e := sampleEntry()
	e.HashVersion = 3
	e.Nonce = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	require.Equal(t, "d448c8c98ebd1ee8acced41e532e8ef6dcd0cf186a0bc3a105d52e2a305417da", hex.EncodeToString(contentDigest(&e)))
	require.Equal(t, "cb921cb4bd507548c3ec7535b03536d623e7ea62543f68c3ea1c1d5c8d1fd3a1", hex.EncodeToString(hashEntry(&e)))
	e.Actor.EmailVerified = false
	require.Equal(t, "7ef53e0d4eb71225677d77df9e65d35af98022f35ca852d30fc68d975e47419a", hex.EncodeToString(contentDigest(&e)))
	require.Equal(t, "0aedb1d9fd267b7a83d70c8cfdb94d3f3b251cc52e9463d1907657c60eae948c", hex.EncodeToString(hashEntry(&e)))

	// seal gives a new entry the current version, a fresh nonce, its
	// digest and hash.
	e.Hash, e.ContentDigest, e.HashVersion, e.Nonce = nil, nil, 0, nil
	seal(&e)
	require.Equal(t, 3, e.HashVersion)
	require.Len(t, e.Nonce, 16)
	require.Equal(t, contentDigest(&e), e.ContentDigest)
	require.Equal(t, hashEntry(&e), e.Hash)
	require.Equal(t, e.Hash, chainHash(e.Seq, e.ContentDigest, e.PrevHash), "a stub's hash from seq, digest and prev_hash alone")
	// The same content sealed again draws another nonce: its digest and
	// hash are not the first's, so a digest confirms no guess of content.
	again := e
	seal(&again)
	require.NotEqual(t, e.Nonce, again.Nonce)
	require.NotEqual(t, e.ContentDigest, again.ContentDigest)
	require.NotEqual(t, e.Hash, again.Hash)
}

// TestHashEntryV3CoversEveryField: the nonce and every content field
// change the content digest and so the hash; seq and prev_hash change the hash; no two of
// these changes give the same hash.
func TestHashEntryV3CoversEveryField(t *testing.T) {
	t.Parallel()
	base := sampleEntry()
	base.HashVersion = 3
	base.Nonce = make([]byte, 16)
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
		"Nonce":         func(e *Entry) { e.Nonce[15] = 1 },
		"NoNonce":       func(e *Entry) { e.Nonce = nil },
	} {
		e := sampleEntry()
		e.HashVersion = 3
		e.Nonce = make([]byte, 16)
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
