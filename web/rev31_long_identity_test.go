package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testidp"
)

// TestRevTriage31LongestAddressSavesAGroup: a person whose provider sends
// an address as long as RFC 5321 allows (64 bytes before the @, 255
// after), not verified, is named in what they store as
// "<address> (unverified)": 333 bytes, past the 320 that
// group_triage.updated_by held, so every save of an error group's panel
// was a 500. It saves, and the panel names them.
func TestRevTriage31LongestAddressSavesAGroup(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	email := strings.Repeat("l", 64) + "@" + strings.Repeat("d", 63) + "." + strings.Repeat("o", 63) + "." + strings.Repeat("m", 63) + "." + strings.Repeat("a", 63)
	require.Len(t, email, 320)
	oncall, _ := b.SignInAs(t, testidp.Person{ID: "rev31-long-address", Email: email}, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev31-long-1",
		Error: "index shard rev31 long unavailable"})
	fp, ok := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok)
	resp := b.Do(t, oncall, "POST", "/groups/triage", url.Values{"tenant": {"acme"}, "group": {fp}, "note": {"looking at shard rev31"},
		"return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "%.400s", resp.Body)
	var by string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT updated_by FROM group_triage WHERE tenant = 'acme' AND fingerprint = $1`, fp).Scan(&by))
	assert.Equal(t, email+" (unverified)", by, "the panel names who saved it as every stored text does")
}

// TestRevGovern31OverlongIdentityIsNotSignedIn: a provider that names a
// person with a subject past the 255 characters OpenID Connect allows, or
// an address past 320 bytes, does not sign them in: what the console
// stores of a person is sized for an identity within them (the audit log
// would cut it, and two people must never read as one there). The page
// says which, and the failed sign-in is audited.
func TestRevGovern31OverlongIdentityIsNotSignedIn(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	for _, tc := range []struct {
		name   string
		person testidp.Person
		says   string
	}{
		{"Subject", testidp.Person{ID: "rev31-" + strings.Repeat("s", 200), Email: "rev31-subject@example.com", EmailVerified: true},
			"subject for this person is"},
		{"Email", testidp.Person{ID: "rev31-long-email", Email: strings.Repeat("e", 64) + "@" + strings.Repeat("x", 252) + ".com", EmailVerified: true},
			"email address for this person is 321 bytes long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			browser := testfactory.NoFollow(jar)
			start := b.Do(t, browser, "GET", "/auth/login", nil, nil)
			require.Equal(t, http.StatusFound, start.Status)
			callback := b.IdP.SignIn(t, browser, start.Header.Get("Location"), tc.person)
			resp := b.Do(t, browser, "GET", callback.RequestURI(), nil, nil)
			require.NotEqual(t, http.StatusSeeOther, resp.Status, "not signed in")
			assert.Contains(t, strings.Join(strings.Fields(byID(resp.Doc(t), "login-failed-reason").Text()), " "), tc.says)
			assert.Equal(t, http.StatusFound, b.Do(t, browser, "GET", "/deadletters", nil, nil).Status, "no session: sent to sign in")
			assert.Equal(t, 1, b.AuditCount(t, "action = 'auth.login' AND outcome = 'error' AND actor_subject = '"+
				b.IdP.Subject(tc.person.ID)+"'"), "the failed sign-in is audited")
		})
	}
}
