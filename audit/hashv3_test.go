package audit_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// exportLine is one line of a JSON Lines export, each value kept as the
// bytes it was written with, so a test can doctor one value and write the
// line back.
type exportLine map[string]json.RawMessage

func parseExport(t *testing.T, export string) []exportLine {
	t.Helper()
	var out []exportLine
	for _, s := range strings.Split(strings.TrimSuffix(export, "\n"), "\n") {
		var l exportLine
		require.NoError(t, json.Unmarshal([]byte(s), &l), s)
		out = append(out, l)
	}
	return out
}

func joinExport(t *testing.T, lines []exportLine) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // before and after stay the bytes hashed
	for _, l := range lines {
		require.NoError(t, enc.Encode(l))
	}
	return b.String()
}

func (l exportLine) str(t *testing.T, key string) string {
	t.Helper()
	var s string
	if v, ok := l[key]; ok && string(v) != "null" {
		require.NoError(t, json.Unmarshal(v, &s), key)
	}
	return s
}

func (l exportLine) set(t *testing.T, key string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	l[key] = b
}

func (l exportLine) stub() bool { return string(l["left_out"]) == "true" }

// entry is the line of an exported entry as the Entry its hash covers, of
// the hash version the line names (2 when it names none, as exports did
// before version 3).
func (l exportLine) entry(t *testing.T) audit.Entry {
	t.Helper()
	var j struct {
		Seq         int64           `json:"seq"`
		At          string          `json:"at"`
		Issuer      string          `json:"actor_issuer"`
		Subject     string          `json:"actor_subject"`
		Email       string          `json:"actor_email"`
		Verified    *bool           `json:"actor_email_verified"`
		Tenant      string          `json:"tenant"`
		Action      string          `json:"action"`
		ObjectType  string          `json:"object_type"`
		ObjectID    string          `json:"object_id"`
		MessageID   string          `json:"message_id"`
		OperationID string          `json:"operation_id"`
		RequestID   string          `json:"request_id"`
		Reason      string          `json:"reason"`
		Outcome     string          `json:"outcome"`
		Before      json.RawMessage `json:"before"`
		After       json.RawMessage `json:"after"`
		RemoteAddr  string          `json:"remote_addr"`
		UserAgent   string          `json:"user_agent"`
		PrevHash    *string         `json:"prev_hash"`
		HashVersion *int            `json:"hash_version"`
		Nonce       string          `json:"nonce"`
	}
	raw, err := json.Marshal(l)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &j))
	at, err := time.Parse(time.RFC3339Nano, j.At)
	require.NoError(t, err)
	e := audit.Entry{Seq: j.Seq, At: at, Actor: quarantine.Actor{Issuer: j.Issuer, Subject: j.Subject, Email: j.Email},
		Tenant: j.Tenant, Action: j.Action, ObjectType: j.ObjectType, ObjectID: j.ObjectID, MessageID: j.MessageID,
		OperationID: j.OperationID, RequestID: j.RequestID, Reason: j.Reason, Outcome: audit.Outcome(j.Outcome),
		RemoteAddr: j.RemoteAddr, UserAgent: j.UserAgent, HashVersion: 2}
	if j.Verified != nil {
		e.Actor.EmailVerified = *j.Verified
	}
	if j.HashVersion != nil {
		e.HashVersion = *j.HashVersion
	}
	if len(j.Before) > 0 && string(j.Before) != "null" {
		e.Before = j.Before
	}
	if len(j.After) > 0 && string(j.After) != "null" {
		e.After = j.After
	}
	if j.PrevHash != nil {
		e.PrevHash, err = hex.DecodeString(*j.PrevHash)
		require.NoError(t, err)
	}
	if j.Nonce != "" {
		e.Nonce, err = hex.DecodeString(j.Nonce)
		require.NoError(t, err)
	}
	return e
}

// v3Export is a log of acme's and globex's entries, signed at its head,
// and its export filtered to acme: seqs 1, 2 (acme), 3, 4 (globex, stubs),
// 5 (acme), 6 (globex, a stub), then the trailer.
func v3Export(t *testing.T) (export string, keys *audit.KeySet) {
	t.Helper()
	b := setup(t)
	signer := newSigner(t)
	globex := func(action string) audit.Event {
		e := event(action)
		e.Tenant = "globex"
		e.Reason = "globex's own business"
		return e
	}
	acme := event("replay.approve")
	acme.Reason = "approved: <b>fixed</b>"
	acme.After = map[string]any{"status": "approved", "note": "a, b: c"}
	appendAll(t, b, event("auth.login"), acme, globex("replay.request"), globex("replay.approve"), event("deadletter.discard"), globex("auth.login"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	// Signed, as the console's exports are when it has its key.
	require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	return out.String(), audit.NewKeySet(signer.PublicKey())
}

// TestV3FilteredExportIsProven: entries appended now are of hash version
// 3, so every stub of a filtered export carries its entry's content digest
// (and nothing else of it) and the verifier recomputes the stub's hash:
// the export is proven from its first entry to its signed head, none
// unproven.
func TestV3FilteredExportIsProven(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := parseExport(t, export)
	require.Len(t, lines, 7, export)
	for _, l := range lines[:6] {
		if !l.stub() {
			assert.Equal(t, "3", string(l["hash_version"]), "seq %s: an entry names its hash version", l["seq"])
			nonce, err := hex.DecodeString(l.str(t, "nonce"))
			require.NoError(t, err)
			assert.Len(t, nonce, 16, "seq %s: an entry shows its nonce", l["seq"])
			continue
		}
		assert.Equal(t, "3", string(l["hash_version"]), "seq %s: a stub names its hash version", l["seq"])
		digest, err := hex.DecodeString(l.str(t, "content_digest"))
		require.NoError(t, err)
		assert.Len(t, digest, 32, "seq %s: a stub carries its content digest", l["seq"])
		for key := range l {
			assert.Contains(t, []string{"seq", "left_out", "hash_version", "content_digest", "prev_hash", "hash"}, key, "seq %s: a stub shows no %s", l["seq"], key)
		}
	}
	assert.NotContains(t, export, "globex", "nothing of another tenant's entries")

	res, err := audit.VerifyExport(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.Signed)
	assert.Equal(t, int64(3), res.Entries)
	assert.Equal(t, int64(3), res.LeftOut)
	assert.Zero(t, res.Unproven, "every stub's hash is recomputed: no entry rests on a stub's word")
	assert.NotContains(t, res.String(), "prev_hash")
}

// TestV3FilteredExportRefusesARewrittenEntry: before version 3 a stub's
// hash covered content the export leaves out, so its prev_hash was taken
// on trust: an included entry rewritten, its hash recomputed and the next
// stub's prev_hash set to match still led to the signed head. A version 3
// stub's hash is recomputed from its seq, content digest and prev_hash,
// so the rewrite is refused at the stub.
func TestV3FilteredExportRefusesARewrittenEntry(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := parseExport(t, export)
	require.Equal(t, `"replay.approve"`, string(lines[1]["action"]))
	require.True(t, lines[2].stub())

	forged := lines[1].entry(t)
	forged.Reason = "nothing happened"
	lines[1].set(t, "reason", forged.Reason)
	lines[1].set(t, "hash", hex.EncodeToString(audit.HashOf(&forged)))
	lines[2].set(t, "prev_hash", hex.EncodeToString(audit.HashOf(&forged)))
	doctored := joinExport(t, lines)
	require.NotEqual(t, export, doctored)

	res, err := audit.VerifyExport(strings.NewReader(doctored), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "the rewritten entry verified: %s", res)
	assert.Equal(t, int64(3), res.Line, "refused at the stub after it: %s", res.Problem)
	assert.Contains(t, res.Problem, "seq 3: hash does not match")
	assert.ErrorIs(t, res.Err(), audit.ErrChainBroken)
}

// TestV3ExportRefusesADoctoredStub: a stub's content digest is covered by
// its hash; one altered, one taken off (the stub made to look like one of
// an older entry, whose hash nobody can recompute), and a stub that claims
// version 3 without a digest are refused.
func TestV3ExportRefusesADoctoredStub(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	for name, tt := range map[string]struct {
		doctor func(l exportLine)
		want   string
	}{
		"DigestAltered": {func(l exportLine) {
			d, err := hex.DecodeString(l.str(t, "content_digest"))
			require.NoError(t, err)
			d[0] ^= 1
			l.set(t, "content_digest", hex.EncodeToString(d))
		}, "seq 3: hash does not match"},
		"DowngradedToAnOldStub": {func(l exportLine) {
			delete(l, "hash_version")
			delete(l, "content_digest")
		}, "seq 3: a stub without a content digest (hash version 1 or 2) after a line of hash version 3"},
		"DigestRemoved": {func(l exportLine) { delete(l, "content_digest") }, "seq 3: a stub of hash version 3 without its content digest"},
		// fix-audit-salt: the nonce is what keeps a stub from confirming a
		// guess of its content; a stub never shows one.
		"NonceAdded": {func(l exportLine) { l.set(t, "nonce", strings.Repeat("00", 16)) }, "seq 3: a stub (left_out) shows a nonce"},
	} {
		t.Run(name, func(t *testing.T) {
			lines := parseExport(t, export)
			require.True(t, lines[2].stub())
			require.Contains(t, lines[2], "content_digest", "the stub carries its content digest")
			tt.doctor(lines[2])
			res, err := audit.VerifyExport(strings.NewReader(joinExport(t, lines)), keys)
			require.NoError(t, err)
			assert.False(t, res.OK(), "the doctored stub verified: %s", res)
			assert.Contains(t, res.Problem, tt.want)
			assert.Equal(t, int64(3), res.Line)
		})
	}
}

// TestV3ExportEntryNeedsItsNonce: an entry of version 3 shows its nonce,
// which its hash covers: one taken off or altered is refused.
func TestV3ExportEntryNeedsItsNonce(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	for name, tt := range map[string]struct {
		doctor func(l exportLine)
		want   string
	}{
		"Removed": {func(l exportLine) { delete(l, "nonce") }, "seq 2: an entry of hash version 3 without its nonce"},
		"Altered": {func(l exportLine) {
			n, err := hex.DecodeString(l.str(t, "nonce"))
			require.NoError(t, err)
			n[0] ^= 1
			l.set(t, "nonce", hex.EncodeToString(n))
		}, "seq 2: hash does not match its contents"},
		"Short": {func(l exportLine) { l.set(t, "nonce", "00") }, "seq 2: nonce is not 32 hex digits"},
	} {
		t.Run(name, func(t *testing.T) {
			lines := parseExport(t, export)
			require.False(t, lines[1].stub())
			tt.doctor(lines[1])
			res, err := audit.VerifyExport(strings.NewReader(joinExport(t, lines)), keys)
			require.NoError(t, err)
			assert.False(t, res.OK(), "the doctored entry verified: %s", res)
			assert.Contains(t, res.Problem, tt.want)
			assert.Equal(t, int64(2), res.Line)
		})
	}
}

// insertV2 writes entries of hash version 2 at the end of the chain, as a
// console before version 3 appended them (no hash_version, no content
// digest), with the runtime role: the database takes them while no entry
// of version 3 precedes them.
func insertV2(t *testing.T, b bundle, tenants ...string) []audit.Entry {
	t.Helper()
	var prev audit.Entry
	err := b.db.Pool.QueryRow(b.ctx, `SELECT seq, hash, at FROM audit_log ORDER BY seq DESC LIMIT 1`).Scan(&prev.Seq, &prev.Hash, &prev.At)
	if err != nil {
		prev = audit.Entry{At: time.Now().Add(-time.Hour)}
	}
	var out []audit.Entry
	for i, tenant := range tenants {
		e := audit.Entry{Seq: prev.Seq + 1, At: prev.At.Add(time.Second).UTC().Truncate(time.Microsecond),
			Actor:  quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-old", Email: "old@example.com", EmailVerified: true},
			Tenant: tenant, Action: "replay.approve", Outcome: audit.OutcomeOK, Reason: fmt.Sprintf("old entry %d", i),
			After: json.RawMessage(`{"n":1}`), PrevHash: prev.Hash, HashVersion: 2}
		e.Hash = audit.HashOf(&e)
		_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_log (seq, at, actor_issuer, actor_subject, actor_email, actor_email_verified,
            tenant, action, outcome, reason, after, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13)`,
			e.Seq, e.At, e.Actor.Issuer, e.Actor.Subject, e.Actor.Email, e.Actor.EmailVerified, e.Tenant, e.Action, string(e.Outcome),
			e.Reason, string(e.After), e.PrevHash, e.Hash)
		require.NoError(t, err, "an entry of hash version 2 at seq %d", e.Seq)
		out = append(out, e)
		prev = e
	}
	return out
}

// TestV3ChainSpansV2ThenV3: a log written by consoles before version 3
// keeps its hashes; the entries appended after it are of version 3 and
// chain onto the last old one. The database's verify, the database's own
// hash function and exports all take the chain across the change; a
// filtered export counts as unproven only the entries before its newest
// stub of an old entry.
func TestV3ChainSpansV2ThenV3(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	insertV2(t, b, "acme", "globex", "acme", "globex") // seqs 1 to 4
	globex := event("replay.request")
	globex.Tenant = "globex"
	appendAll(t, b, event("replay.approve"), globex, event("replay.approve")) // seqs 5 to 7
	page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{audit.AllTenants}})
	require.NoError(t, err)
	versions := map[int64]int{}
	for _, e := range page.Entries {
		versions[e.Seq] = e.HashVersion
	}
	assert.Equal(t, map[int64]int{1: 2, 2: 2, 3: 2, 4: 2, 5: 3, 6: 3, 7: 3}, versions, "old entries keep version 2, new ones are version 3")
	requireIntact(t, b, 7)
	var same bool
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT bool_and(hash = audit_entry_hash(audit_log)) FROM audit_log`).Scan(&same))
	assert.True(t, same, "the database computes both versions as Go does")

	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	export := func(f audit.Filter) audit.ExportResult {
		var out bytes.Buffer
		require.NoError(t, audit.ExportJSONLSigned(b.ctx, b.db.Pool, f, head, signer, &out))
		res, err := audit.VerifyExport(strings.NewReader(out.String()), keys)
		require.NoError(t, err)
		require.True(t, res.OK(), res.String())
		return res
	}
	all := export(audit.Filter{})
	assert.Equal(t, int64(7), all.Entries)
	assert.Zero(t, all.Unproven)

	acme := export(audit.Filter{Tenants: []string{"acme"}}) // 1, 3, 5 and 7; stubs 2, 4 and 6
	assert.Equal(t, int64(4), acme.Entries)
	assert.Equal(t, int64(3), acme.LeftOut)
	assert.Equal(t, int64(2), acme.Unproven, "seqs 1 and 3 come before seq 4, a stub of version 2; seq 6 is a stub of version 3")
	assert.Contains(t, acme.String(), "2 entries before seq 4")

	recent := export(audit.Filter{Tenants: []string{"acme"}, After: 4})
	assert.Equal(t, int64(2), recent.Entries)
	assert.Zero(t, recent.Unproven, "from seq 5 on, every stub is of version 3")
}

// TestV3DatabaseKeepsVersionsInOrder: hash versions never go back along
// the chain: after an entry of version 3 the database refuses one without
// (a console before version 3 still running), so that a verifier may
// refuse an old-looking stub after a version 3 line; and verify reports a
// stored content digest that is not the row's.
func TestV3DatabaseKeepsVersionsInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries := appendAll(t, b, event("one"), event("two"))
	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_log (seq, at, action, outcome, actor_email_verified, prev_hash, hash)
        VALUES (3, $1, 'old.console', 'ok', false, $2, sha256('x'))`, entries[1].At, entries[1].Hash)
	require.Error(t, err, "a row of version 2 after one of version 3")
	assert.Contains(t, err.Error(), "hash version")

	tamper(t, b, `UPDATE audit_log SET reason = 'rewritten', hash = '\x`+hex.EncodeToString(rehashed(entries[1], "rewritten"))+`' WHERE seq = 2`)
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.False(t, res.OK())
	assert.Equal(t, int64(2), res.FirstBad)
	assert.Contains(t, res.Problem, "seq 2: content_digest is not the digest of its contents (edited row)")
}

// rehashed is e's hash with reason changed.
func rehashed(e audit.Entry, reason string) []byte {
	e.Reason = reason
	return audit.HashOf(&e)
}
