package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// revChain is n chained entries as Append writes them.
func revChain(n int) []*Entry {
	var out []*Entry
	var prev []byte
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		e := &Entry{Seq: int64(i), At: at.Add(time.Duration(i) * time.Minute), Tenant: []string{"acme", "globex"}[i%2],
			Actor:  quarantine.Actor{Issuer: "https://idp", Subject: fmt.Sprintf("sub-%d", i), Email: "x@example.com", EmailVerified: true},
			Action: "replay.approve", Outcome: OutcomeOK, Reason: fmt.Sprintf("entry %d", i), PrevHash: prev, HashVersion: currentHashVersion,
			Nonce: bytes.Repeat([]byte{byte(i)}, nonceLength)} // fix-audit-salt: version 3 has a nonce
		e.Hash = hashEntry(e)
		prev = e.Hash
		out = append(out, e)
	}
	return out
}

// revExport is entries as ExportJSONL writes them, ending with head (signed
// when signer is not nil).
func revExport(t *testing.T, entries []*Entry, head *Entry, signer *Signer) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		line := jsonEntry{Seq: e.Seq, At: e.At.Format(timeLayout), ActorIssuer: e.Actor.Issuer, ActorSubject: e.Actor.Subject,
			ActorEmail: e.Actor.Email, ActorEmailOK: &e.Actor.EmailVerified, Tenant: e.Tenant, Action: e.Action, Reason: e.Reason,
			Outcome: string(e.Outcome), Hash: hex.EncodeToString(e.Hash), HashVersion: e.HashVersion, Nonce: hex.EncodeToString(e.Nonce)}
		if e.PrevHash != nil {
			p := hex.EncodeToString(e.PrevHash)
			line.PrevHash = &p
		}
		require.NoError(t, enc.Encode(&line))
	}
	cp := Checkpoint{Seq: head.Seq, Hash: head.Hash, At: head.At.Add(time.Second), Reason: ReasonExport}
	trailer := jsonTrailer{ChainHead: jsonHead{Seq: cp.Seq, Hash: cp.HashHex()}}
	if signer != nil {
		signer.sign(&cp)
		trailer.ChainHead.At, trailer.ChainHead.Reason, trailer.ChainHead.KeyID = cp.At.Format(timeLayout), cp.Reason, cp.KeyID
		trailer.ChainHead.PublicKey, trailer.ChainHead.Signature = hex.EncodeToString(cp.PublicKey), hex.EncodeToString(cp.Signature)
	}
	require.NoError(t, enc.Encode(&trailer))
	return b.String()
}

// Review rev-audit. `console audit verify --file` (VerifyExport) is what an
// auditor runs on an export someone hands them. It links an entry to the
// one before only when that one is in the file, and checks the signed
// head against the last entry only when the last entry is the head,
// because a filtered export has gaps; the file does not say whether it was
// filtered, nor which seqs it should hold. So each of these doctored
// exports verifies ("audit export ok", exit 0) with the right public key:
//   - an unfiltered export with an entry taken out of the middle;
//   - an unfiltered export with its newest entries taken off (head kept);
//   - a filtered export (all a tenant auditor can get) with an entry
//     rewritten and its hash computed afresh (the hash has no key);
//   - any export rebuilt with fresh hashes and the head's signature fields
//     removed: an unsigned head is accepted even when keys are given.
func TestRevAuditVerifyExportRefusesDoctoredExports(t *testing.T) {
	t.Parallel()
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	signer := NewSigner(priv)
	keys := NewKeySet(signer.PublicKey())
	chain := revChain(6)
	head := chain[5]

	intact := revExport(t, chain, head, signer)
	res, err := VerifyExport(strings.NewReader(intact), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), "precondition: the intact export verifies: %s", res)

	rewritten := revChain(6)
	rewritten[1].Reason = "nothing happened"
	for i := 1; i < len(rewritten); i++ {
		rewritten[i].PrevHash = rewritten[i-1].Hash
		rewritten[i].Hash = hashEntry(rewritten[i])
	}
	filtered := func(es []*Entry) []*Entry { return []*Entry{es[1], es[3], es[5]} } // tenant acme: seqs 2, 4, 6
	forgedOne := revChain(6)
	forgedOne[1].Reason = "nothing happened"
	forgedOne[1].Hash = hashEntry(forgedOne[1])

	for name, doc := range map[string]string{
		"MiddleEntryRemoved":     revExport(t, append(append([]*Entry{}, chain[:2]...), chain[3:]...), head, signer),
		"NewestEntriesRemoved":   revExport(t, chain[:3], head, signer),
		"FilteredEntryRewritten": revExport(t, filtered(forgedOne), head, signer),
		"RebuiltUnsigned":        revExport(t, rewritten, rewritten[5], nil),
	} {
		res, err := VerifyExport(strings.NewReader(doc), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), "%s: the doctored export verified: %s", name, res)
	}
}
