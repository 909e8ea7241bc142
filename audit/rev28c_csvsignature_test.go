package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevLeft28CSVSignatureCoversStubCountsAndHead: a signed CSV export's
// signature record says how many stubs it holds (left_out) and which stub
// is the newest before hash version 3 (unproven_stub), and its chain-head
// record names the head's hash. A changed value in any of them is caught
// by verify: a stub count that is not the file's, an unproven stub moved
// (to none, which would report every entry proven, or to an older stub,
// which would report fewer unproven), a head hash that is not the
// chain's. Each is reported as a problem, never as an export that
// verified with other figures.
func TestRevLeft28CSVSignatureCoversStubCountsAndHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	insertV2(t, b, "acme", "globex", "acme", "globex", "acme", "globex") // seqs 1 to 6, of version 2
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, audit.ExportCSVSigned(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}}, head, signer, &out))
	export := out.String()
	res, err := audit.VerifyExportCSV(strings.NewReader(export), keys)
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	require.Equal(t, int64(3), res.LeftOut, "seqs 2, 4 and 6 are globex's stubs")
	require.Equal(t, int64(6), res.UnprovenStub)
	require.Equal(t, int64(3), res.Unproven, "seqs 1, 3 and 5 come before seq 6, a stub of version 2")

	records := csvRecords(t, export)
	sig, chainHead := len(records)-2, len(records)-1
	require.Contains(t, records[sig][0], " left_out=3 unproven_stub=6 ")
	for _, c := range []struct {
		name   string
		change func(r [][]string)
	}{
		{"LeftOutChanged", func(r [][]string) {
			r[sig][0] = strings.Replace(r[sig][0], " left_out=3 ", " left_out=2 ", 1)
		}},
		{"UnprovenStubToNone", func(r [][]string) {
			r[sig][0] = strings.Replace(r[sig][0], " unproven_stub=6 ", " unproven_stub=0 ", 1)
		}},
		{"UnprovenStubToAnOlderStub", func(r [][]string) {
			r[sig][0] = strings.Replace(r[sig][0], " unproven_stub=6 ", " unproven_stub=2 ", 1)
		}},
		{"HeadHashChanged", func(r [][]string) {
			h := []byte(r[chainHead][2])
			h[0] = "01"[(h[0]-'0'+1)%2] // a hex digit still
			r[chainHead][2] = string(h)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := csvRecords(t, export)
			c.change(r)
			doctored := csvJoin(t, r)
			require.NotEqual(t, export, doctored)
			res, err := audit.VerifyExportCSV(strings.NewReader(doctored), keys)
			require.NoError(t, err)
			assert.False(t, res.OK(), "the doctored export verified: %s", res)
			assert.NotEmpty(t, res.Problem, res.String())
		})
	}
}
