package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
	"github.com/quarantine-console/quarantine/testidp"
)

// TestRevOncall32LeftOutForgetsATenantNoLongerRead: what "Replay all
// matching" and "Discard all matching" left out is kept in the person's
// session (globex's dead letters, where they could only read: the tenant,
// the message ids) and named on each rendering of the batch's confirm page
// and of the close's confirmation. Once an admin removes their role in
// globex, neither names globex or its message ids any more: what is shown
// is judged by what the person may read now, not when it was kept.
func TestRevOncall32LeftOutForgetsATenantNoLongerRead(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"Replay", "Discard"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
			admin, _ := b.SignIn(t, "*:admin")
			email := "rev32-" + strings.ToLower(path) + "@example.com"
			oncall, _ := b.SignInAs(t, testidp.Person{ID: "rev32-" + path, Email: email, EmailVerified: true}, "acme:oncall")
			resp := b.Do(t, admin, http.MethodPost, "/admin/bindings", url.Values{"email": {email}, "role": {"viewer"}, "tenant": {"globex"}}, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
			prefix := "rev32-" + strings.ToLower(path)
			var letters []testfactory.Letter
			for i, tenant := range []string{"acme", "acme", "globex", "globex"} {
				letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("%s-%d", prefix, i),
					Error: "index shard rev32 unavailable"})
			}
			testfactory.DeadLetters(t, b.Pool, letters...)
			action := map[string]string{"Replay": "/replay/filter", "Discard": "/deadletters/discard/filter"}[path]
			wait.Until(t, "all matching offered, globex's read", 30*time.Second, func() bool {
				d := b.Do(t, oncall, http.MethodGet, "/deadletters?type=search.index_update", nil, nil).Doc(t)
				action = d.Find(`form[action^="`+action+`"]`).AttrOr("action", action)
				return strings.Contains(d.Text(), prefix+"-2") && d.Find(`form[action^="`+action+`"]`).Length() > 0
			})
			// again renders the page that names what was left out, as it
			// is rendered after: the batch's confirm page, or the close's
			// confirmation a submit without a reason renders again.
			var again func() testfactory.Response
			if path == "Replay" {
				resp := b.Do(t, oncall, http.MethodPost, action, nil, nil)
				require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
				confirm := resp.Header.Get("Location")
				again = func() testfactory.Response { return b.Do(t, oncall, http.MethodGet, confirm, nil, nil) }
			} else {
				resp := b.Do(t, oncall, http.MethodPost, action, nil, nil)
				require.Equal(t, http.StatusOK, resp.Status, "%.300s", resp.Body)
				form := url.Values{}
				resp.Doc(t).Find(`form[data-testid="confirm-form"] input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
					form.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
				})
				require.Len(t, form["id"], 2, "acme's two are offered")
				again = func() testfactory.Response {
					return b.Do(t, oncall, http.MethodPost, "/deadletters/discard", form, nil)
				}
			}
			leftOut := func(r testfactory.Response) string {
				return strings.Join(strings.Fields(r.Doc(t).Find(`[data-testid="confirm-left-out"]`).Text()), " ")
			}
			before := again()
			require.Contains(t, leftOut(before), "2 dead letters in globex", "%.300s", before.Body)
			require.Contains(t, leftOut(before), prefix+"-2", "globex's are named")

			var id string
			require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT id::text FROM role_bindings WHERE subject = $1`, "email:"+email).Scan(&id))
			resp = b.Do(t, admin, http.MethodPost, "/admin/bindings/"+id+"/delete", url.Values{}, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

			after := again()
			require.Contains(t, []int{http.StatusOK, http.StatusUnprocessableEntity}, after.Status, "%.300s", after.Body)
			assert.False(t, strings.Contains(after.Body, "globex"), "the page names a tenant the person no longer reads: %q", leftOut(after))
			for _, msgID := range []string{prefix + "-2", prefix + "-3"} {
				assert.False(t, strings.Contains(after.Body, msgID), "the page names %s, of a tenant the person no longer reads", msgID)
			}
			assert.NotContains(t, leftOut(after), "matching", "nothing left out of what they may read: %q", leftOut(after))
		})
	}
}
