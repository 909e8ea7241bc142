package web_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// multipartBody is fields as a multipart/form-data body, and its
// Content-Type.
func multipartBody(t *testing.T, fields url.Values) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for name, vs := range fields {
		for _, v := range vs {
			require.NoError(t, w.WriteField(name, v))
		}
	}
	require.NoError(t, w.Close())
	return buf.String(), w.FormDataContentType()
}

// TestRevWeb17MultipartFormIsRefused: the route table reads a form
// (readForm) only when it is urlencoded, whole or not at all (400 for a
// body the parser cannot read, 413 for one cut at the route's limit). A
// multipart/form-data body skipped it, and the handlers read it through
// echo (c.FormValue, c.FormParams), which parses multipart and, in
// c.FormValue, drops its parse errors: a multipart form was acted on, and
// one that could not be read was acted on as the query alone. The console
// never sends multipart: such a body is refused (415) before anything is
// read or done.
func TestRevWeb17MultipartFormIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, u := b.SignIn(t, "acme:oncall")
	page := map[string]string{"Accept": "text/html"}

	t.Run("WellFormed", func(t *testing.T) {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", Error: "refund failed: multipart"})
		path := "/deadletters/" + strconv.FormatInt(id, 10) + "/discard"
		var before string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&before))
		body, ct := multipartBody(t, url.Values{"reason": {"dup"}, "confirmed": {"1"}})
		resp := b.DoForm(t, oncall, http.MethodPost, path, body, map[string]string{"Accept": "text/html", "Content-Type": ct})
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.Status, "a multipart form is refused")
		var after string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&after))
		assert.Equal(t, before, after, "nothing was discarded")
		assert.Zero(t, b.AuditCount(t, "action = 'deadletter.discard' AND object_id = $1 AND outcome = 'ok'", strconv.FormatInt(id, 10)))

		// The same form urlencoded, as the console's pages send it, works.
		ok := b.Do(t, oncall, http.MethodPost, path, url.Values{"reason": {"dup"}, "confirmed": {"1"}}, page)
		assert.Equal(t, http.StatusSeeOther, ok.Status)
	})

	t.Run("Unreadable", func(t *testing.T) {
		// A multipart body that cannot be read (no closing boundary) left
		// c.FormValue the query's values: the setting was saved from them.
		hdr := map[string]string{"Accept": "text/html", "Content-Type": "multipart/form-data; boundary=xyz"}
		body := "--xyz\r\nContent-Disposition: form-data; name=\"time_zone\"\r\n\r\nutc\r\n--xy"
		resp := b.DoForm(t, oncall, http.MethodPost, "/settings/time?time_zone=local", body, hdr)
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.Status, "a multipart form is refused")
		assert.Zero(t, b.AuditCount(t, "action = 'user.settings' AND actor_subject = $1", u.Subject), "no setting saved")
	})
}
