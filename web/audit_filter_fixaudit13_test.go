package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixAudit13RequestExportVerifies: the request page's export link
// (/audit/export.*?request=N), taken by an auditor of every tenant, is a
// file `console audit verify --file` accepts, and its signed filter names
// the request: it starts past seq 1 with stubs, which only a filtered
// export may.
func TestFixAudit13RequestExportVerifies(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	var reqs []int64
	for i := range 2 {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("fixaudit13-export-%d", i), Error: "index shard 4 unavailable"})
		reqs = append(reqs, testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard 4 back"}).ID)
	}
	keys := audit.NewKeySet(b.Signer.PublicKey())
	for _, q := range []string{fmt.Sprintf("request=%d", reqs[1]), fmt.Sprintf("request=%d&tenant=acme", reqs[1])} {
		t.Run("JSONL/"+q, func(t *testing.T) {
			resp := b.Do(t, auditor, http.MethodGet, "/audit/export.jsonl?"+q, nil, nil)
			require.Equal(t, http.StatusOK, resp.Status, resp.Body)
			res, err := audit.VerifyExport(strings.NewReader(resp.Body), keys)
			require.NoError(t, err)
			assert.True(t, res.OK(), res.String())
			assert.Contains(t, res.Filter, fmt.Sprintf(`request="%d"`, reqs[1]))
		})
		t.Run("CSV/"+q, func(t *testing.T) {
			resp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv?"+q, nil, nil)
			require.Equal(t, http.StatusOK, resp.Status, resp.Body)
			res, err := audit.VerifyExportCSV(strings.NewReader(resp.Body), keys)
			require.NoError(t, err)
			assert.True(t, res.OK(), res.String())
			assert.Contains(t, res.Filter, fmt.Sprintf(`request="%d"`, reqs[1]))
		})
	}
}

// TestFixAudit13RepeatedFilterIsRefused: a filter given twice
// (?request=4&request=5) is refused with a message, on the page and by the
// exports: the filter takes one value, and applying the first would answer
// (and sign) another question than the one asked, while the export's audit
// row listed both.
func TestFixAudit13RepeatedFilterIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, _ := b.SignIn(t, "*:auditor")
	for _, q := range []url.Values{
		{"request": {"4", "5"}},
		{"tenant": {"acme", "globex"}, "actor": {"jane"}},
		{"from": {"now-1h", "now-2h"}},
	} {
		t.Run(q.Encode(), func(t *testing.T) {
			page := b.Do(t, auditor, http.MethodGet, "/audit?"+q.Encode(), nil, nil)
			require.Equal(t, http.StatusUnprocessableEntity, page.Status)
			errs := page.Doc(t).Find(`[data-testid="filter-errors"]`).Text()
			assert.Contains(t, errs, "more than once")
			assert.Zero(t, page.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "nothing is listed")
			for _, path := range []string{"/audit/export.csv", "/audit/export.jsonl"} {
				resp := b.Do(t, auditor, http.MethodGet, path+"?"+q.Encode(), nil, nil)
				assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s with a repeated filter exports nothing", path)
			}
		})
	}
	ok := b.Do(t, auditor, http.MethodGet, "/audit?request=4&tenant=acme", nil, nil)
	assert.Equal(t, http.StatusOK, ok.Status, "each filter once is no error")
}
