package audit_test

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// csvRecords reads a CSV export into its records, every one as long as
// the header.
func csvRecords(t *testing.T, export string) [][]string {
	t.Helper()
	records, err := csv.NewReader(strings.NewReader(export)).ReadAll()
	require.NoError(t, err)
	return records
}

// csvJoin writes records back as the export writes them (encoding/csv).
func csvJoin(t *testing.T, records [][]string) string {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	require.NoError(t, w.WriteAll(records))
	return b.String()
}

// csvSignedExport is a log of acme's and globex's entries of hash version
// 3, signed at its head, and its CSV export filtered to acme as the
// console writes it: seqs 1, 2 (acme), 3, 4 (globex, stubs), 5 (acme),
// 6 (globex, a stub), the export's signature, the chain head.
func csvSignedExport(t *testing.T) (export string, keys *audit.KeySet) {
	t.Helper()
	b := setup(t)
	signer := newSigner(t)
	globex := func(action string) audit.Event {
		e := event(action)
		e.Tenant, e.Reason = "globex", "globex's own business"
		return e
	}
	acme := event("replay.approve")
	acme.Reason = "=approved, \"quoted\"\nsecond line"
	acme.After = map[string]any{"status": "approved", "note": "a, b: c"}
	appendAll(t, b, event("auth.login"), acme, globex("replay.request"), globex("replay.approve"), event("deadletter.discard"), globex("auth.login"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	return out.String(), audit.NewKeySet(signer.PublicKey())
}

// TestExportSignCSVVerifies: the CSV export the console writes carries its
// own signature (a "# export-signature" record before the chain head) over
// the exact bytes before it, the filter, the range, the counts and the
// chain head; VerifyExportCSV checks it, every entry's hash, the links and
// the signed head, without the database.
func TestExportSignCSVVerifies(t *testing.T) {
	t.Parallel()
	export, keys := csvSignedExport(t)
	records := csvRecords(t, export)
	require.Len(t, records, 9, "header, seqs 1 to 6, the export's signature, the chain head:\n%s", export)
	require.Equal(t, export, csvJoin(t, records), "precondition: the records written back are the export's bytes")
	assert.True(t, strings.HasPrefix(records[7][0], "# export-signature first_seq=1 last_seq=6 entries=3 left_out=3 unproven_stub=0 exported_at="), records[7][0])
	assert.Equal(t, make([]string, len(records[7])-1), records[7][1:], "the rest of the signature record is empty")
	assert.Equal(t, "# chain-head", records[8][0], "the chain head stays the last record")

	res, err := audit.VerifyExportCSV(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned, res.String())
	assert.True(t, res.Signed, "the chain head's signature verified")
	assert.Equal(t, int64(3), res.Entries)
	assert.Equal(t, int64(3), res.LeftOut)
	assert.Equal(t, int64(5), res.Linked)
	assert.Zero(t, res.Unproven, "every stub is of version 3, re-hashed by the console before it signed")
	assert.Equal(t, `tenants="acme"`, res.Filter)
	assert.Equal(t, int64(6), res.Head.Seq)
	assert.NotContains(t, res.String(), "WARNING")

	doctor := func(t *testing.T, change func(records [][]string) [][]string) audit.ExportResult {
		t.Helper()
		doctored := csvJoin(t, change(csvRecords(t, export)))
		require.NotEqual(t, export, doctored)
		res, err := audit.VerifyExportCSV(strings.NewReader(doctored), keys)
		require.NoError(t, err)
		require.False(t, res.OK(), "the doctored export verified: %s", res)
		return res
	}
	t.Run("RowEdited", func(t *testing.T) {
		res := doctor(t, func(r [][]string) [][]string { r[5][13] = "nothing happened"; return r })
		assert.Contains(t, res.Problem, "seq 5")
	})
	t.Run("EntryMadeAStub", func(t *testing.T) {
		// A stub of the CSV carries no content digest: the chain alone
		// cannot tell it from an entry the filter left out.
		res := doctor(t, func(r [][]string) [][]string {
			for i := range r[2] {
				if i != 0 && i != 19 && i != 20 {
					r[2][i] = ""
				}
			}
			return r
		})
		assert.Contains(t, res.Problem, "signed with")
	})
	t.Run("FirstRowCut", func(t *testing.T) {
		doctor(t, func(r [][]string) [][]string { return slices.Delete(r, 1, 2) })
	})
	t.Run("FilterChanged", func(t *testing.T) {
		res := doctor(t, func(r [][]string) [][]string { r[8][8] = `filter:tenants="acme,globex"`; return r })
		assert.Contains(t, res.Problem, "signature does not verify")
	})
	t.Run("CountChanged", func(t *testing.T) {
		res := doctor(t, func(r [][]string) [][]string {
			r[7][0] = strings.Replace(r[7][0], " entries=3 ", " entries=2 ", 1)
			return r
		})
		assert.Contains(t, res.Problem, "signature does not verify")
	})
	t.Run("SameValuesOtherBytes", func(t *testing.T) {
		// A cell quoted that needs no quotes reads as the same value, but
		// the signature covers the bytes.
		doctored := strings.Replace(export, ",auth.login,", `,"auth.login",`, 1)
		require.NotEqual(t, export, doctored)
		require.Equal(t, csvRecords(t, export), csvRecords(t, doctored))
		res, err := audit.VerifyExportCSV(strings.NewReader(doctored), keys)
		require.NoError(t, err)
		assert.False(t, res.OK(), res.String())
		assert.Contains(t, res.Problem, "not the ones it was signed with")
	})
	t.Run("SignatureTakenOff", func(t *testing.T) {
		res := doctor(t, func(r [][]string) [][]string { return slices.Delete(r, 7, 8) })
		assert.Contains(t, res.Problem, "must carry the console's signature")
	})
	t.Run("OtherKey", func(t *testing.T) {
		res, err := audit.VerifyExportCSV(strings.NewReader(export), audit.NewKeySet(newSigner(t).PublicKey()))
		require.NoError(t, err)
		assert.False(t, res.OK(), res.String())
		assert.Contains(t, res.Problem, "not one of the public keys given")
	})
	t.Run("CutShort", func(t *testing.T) {
		res := doctor(t, func(r [][]string) [][]string { return r[:7] })
		assert.Contains(t, res.Problem, "cut short")
	})
}

// TestExportSignCSVPreV3Filtered: a filtered CSV export of entries
// appended before hash version 3 is signed as any other; its signature
// says which stub the console could not re-hash (no content digest), so
// the entries before it are reported unproven, and with the signature
// taken off it does not verify.
func TestExportSignCSVPreV3Filtered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	insertV2(t, b, "acme", "globex", "acme", "globex") // seqs 1 to 4, all of version 2
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	export := out.String()

	res, err := audit.VerifyExportCSV(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned, res.String())
	assert.Equal(t, int64(2), res.Entries)
	assert.Equal(t, int64(2), res.LeftOut)
	assert.Equal(t, int64(2), res.Unproven, "seqs 1 and 3 come before seq 4, a stub of version 2")
	assert.Equal(t, int64(4), res.UnprovenStub)

	records := csvRecords(t, export)
	require.True(t, strings.HasPrefix(records[len(records)-2][0], "# export-signature "))
	stripped := csvJoin(t, slices.Delete(records, len(records)-2, len(records)-1))
	res, err = audit.VerifyExportCSV(strings.NewReader(stripped), keys)
	require.NoError(t, err)
	require.False(t, res.OK(), res.String())
	assert.Contains(t, res.Problem, "must carry the console's signature")
}

// TestExportSignCSVUnsignedStaysReadable: a CSV export without a signature
// of its own (ExportCSV, as before) still reads: an unfiltered one verifies
// as far as its chain goes, with the warning that edits since the export
// cannot be ruled out.
func TestExportSignCSVUnsignedStaysReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	appendAll(t, b, event("one"), event("two"), event("three"))
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSV(b.ctx, b.db.Pool, audit.Filter{}, head, &out))
	res, err := audit.VerifyExportCSV(strings.NewReader(out.String()), audit.NewKeySet(signer.PublicKey()))
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.False(t, res.ExportSigned)
	assert.True(t, res.Signed)
	assert.Equal(t, int64(3), res.Entries)
	assert.Contains(t, res.String(), audit.UnsignedExportWarning)

	edited := strings.Replace(out.String(), ",two,", ",TWO,", 1)
	require.NotEqual(t, out.String(), edited)
	res, err = audit.VerifyExportCSV(strings.NewReader(edited), audit.NewKeySet(signer.PublicKey()))
	require.NoError(t, err)
	assert.False(t, res.OK(), res.String())
	assert.Contains(t, res.Problem, "seq 2: hash does not match")
}

// TestExportSignCSVLongExport: the signature covers the bytes of an export
// far longer than one read of the file (records that span reads, cells
// over several lines); it verifies, and one byte changed near its end is
// found.
func TestExportSignCSVLongExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	var events []audit.Event
	for i := range 120 {
		e := event("test.long")
		e.Reason = strings.Repeat("a reason, \"quoted\"\nover lines; ", 1+i%7)
		if i%3 == 0 {
			e.Tenant = "globex"
		}
		events = append(events, e)
	}
	appendAll(t, b, events...)
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	export := out.String()
	require.Greater(t, len(export), 16<<10, "many times one read of the CSV reader (4 KiB)")

	res, err := audit.VerifyExportCSV(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned)
	assert.Equal(t, int64(80), res.Entries)
	assert.Equal(t, int64(39), res.LeftOut, "globex's 40 but seq 1, before acme's first")

	// The last entry's action quoted: the same values, other bytes, far
	// into the file; only the signature's hash of the bytes tells.
	at := strings.LastIndex(export, ",test.long,")
	require.Positive(t, at)
	edited := export[:at] + `,"test.long",` + export[at+len(",test.long,"):]
	require.Equal(t, csvRecords(t, export), csvRecords(t, edited))
	res, err = audit.VerifyExportCSV(strings.NewReader(edited), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), res.String())
	assert.Contains(t, res.Problem, "not the ones it was signed with")
}
