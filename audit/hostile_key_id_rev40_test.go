package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestRev40VerifierShowsAFilesKeyIDAsText: a forged export (any content,
// its chain consistent) whose trailer names a key id holding a carriage
// return and terminal escapes is refused, but the refusal printed the key
// id raw: in a terminal, "\r\x1b[2K" wiped "audit export BROKEN ..." and
// wrote a fake "audit export ok ..." in its place. What a verification
// says is now printable text: the key id quoted, any control character
// escaped.
func TestRev40VerifierShowsAFilesKeyIDAsText(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	e := Entry{Seq: 1, At: at, Actor: quarantine.Actor{Subject: "mallory"}, Tenant: "acme", Action: "replay.approve", Outcome: OutcomeOK}
	e.HashVersion = currentHashVersion
	seal(&e)
	verified := false
	line := jsonEntry{Seq: 1, At: at.Format(timeLayout), ActorSubject: "mallory", ActorEmailOK: &verified, Tenant: "acme",
		Action: "replay.approve", Outcome: "ok", Hash: hex.EncodeToString(e.Hash), HashVersion: 3, Nonce: hex.EncodeToString(e.Nonce)}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(&line))
	sum := sha256.Sum256(body.Bytes())
	fake := "\r\x1b[2Kaudit export ok: 1 entry; the export is signed\x1b[8m"
	trailer := func(exportKey, headKey string) []byte {
		var b bytes.Buffer
		b.Write(body.Bytes())
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(map[string]any{
			"chain_head": map[string]any{"seq": 1, "hash": e.HashHex(), "signed_at": at.Format(timeLayout), "reason": "export",
				"key_id": headKey, "public_key": strings.Repeat("00", 32), "signature": strings.Repeat("00", 64)},
			"export": map[string]any{"filter": "", "first_seq": 1, "last_seq": 1, "exported_at": at.Add(time.Second).Format(timeLayout),
				"lines_sha256": hex.EncodeToString(sum[:]), "key_id": exportKey, "signature": strings.Repeat("00", 64)},
		}))
		return b.Bytes()
	}
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		file []byte
		keys *KeySet
	}{
		"export key, keys given": {trailer(fake, "5f0c3a9e1b2d4c6f"), NewKeySet(pub)},
		"head key, no keys":      {trailer("5f0c3a9e1b2d4c6f", fake), NewKeySet()},
	} {
		res, err := VerifyExport(bytes.NewReader(c.file), c.keys)
		require.NoError(t, err, name)
		require.False(t, res.OK(), name)
		s := res.String()
		assert.False(t, strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }), "%s: a control character in %q", name, s)
		assert.Contains(t, s, `\x1b[2Kaudit export ok`, "%s: the key id shown as text", name)
		assert.True(t, strings.HasPrefix(s, "audit export BROKEN") || strings.HasPrefix(s, "audit export NOT CHECKED"), "%s: %q", name, s)
	}

	assert.Equal(t, "5f0c3a9e1b2d4c6f", keyName("5f0c3a9e1b2d4c6f"), "a plain key id is named as it is")
	assert.Equal(t, `a\u202eb\nc\u009b`, Printable("a\u202eb\nc\u009b"))
	assert.Equal(t, "tab\tkept", Printable("tab\tkept"))
}
