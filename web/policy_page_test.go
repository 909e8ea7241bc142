package web_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// startWithPolicy starts a console whose policy file is policy (written
// to a file of the test's own), and returns the file's path.
func startWithPolicy(t *testing.T, policy []byte) (*testfactory.Console, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(file, policy, 0o600))
	return testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) { c.Replay.PolicyFile = file }}), file
}

// shippedPolicyAnd is the shipped policy file (dev/policy.toml) with more
// appended.
func shippedPolicyAnd(t *testing.T, more string) []byte {
	t.Helper()
	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	return append(src, []byte(more)...)
}

// TestPolicyPageByScope: the policy page shows the retention lines for
// every tenant and for the caller's own (where they read the policy or the
// dead letters); a person who sees every tenant reads them all and the
// file's path on the server, anyone else its name only.
func TestPolicyPageByScope(t *testing.T) {
	t.Parallel()
	b, file := startWithPolicy(t, shippedPolicyAnd(t, `
[[retention.rule]]
tenant = "acme"
item_type = "acme-kept.>"
closed = "30d"

[[retention.rule]]
tenant = "globex"
item_type = "globex-kept.>"
closed = "60d"

[[retention.rule]]
tenant = "*"
item_type = "everyones-kept.>"
closed = "90d"
`))
	lines := func(body string) []string {
		var out []string
		for _, w := range []string{"acme-kept", "globex-kept", "everyones-kept"} {
			if strings.Contains(body, w) {
				out = append(out, w)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		groups   []string
		lines    []string
		fullPath bool
	}{
		{"OncallOfAcme", []string{"acme:oncall"}, []string{"acme-kept", "everyones-kept"}, false},
		{"ViewerOfGlobexToo", []string{"acme:approver", "globex:viewer"}, []string{"acme-kept", "globex-kept", "everyones-kept"}, false},
		{"AdminEverywhere", []string{"*:admin"}, []string{"acme-kept", "globex-kept", "everyones-kept"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := b.SignIn(t, tc.groups...)
			page := b.Do(t, c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			assert.Equal(t, tc.lines, lines(page.Body))
			assert.Equal(t, tc.fullPath, strings.Contains(page.Body, file), "the file's path on the server")
			assert.Contains(t, page.Body, "policy.toml", "the file's name")
		})
	}
}

// TestPolicyPageWarnsOfUnlistedSubjects: a table whose subject rules do not
// end with one matching every subject lets a producer's
// Dlq-Original-Subject pick the class of a target nobody classified; the
// policy page says so (as the console's log does at start), and says
// nothing when the last subject rule catches every subject (dev/policy.toml).
func TestPolicyPageWarnsOfUnlistedSubjects(t *testing.T) {
	t.Parallel()
	noCatchAll := `
[[rule]]
item_type = "search.>"
class = "rebuildable"

[[rule]]
subject = "app.*.payments.>"
class = "manual"
`
	for _, tc := range []struct {
		name   string
		policy []byte
		warns  bool
	}{
		{"NoCatchAll", []byte(noCatchAll), true},
		{"Shipped", shippedPolicyAnd(t, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := startWithPolicy(t, tc.policy)
			c, _ := b.SignIn(t, "acme:oncall")
			page := b.Do(t, c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			warning := page.Doc(t).Find(`[data-testid="policy-unlisted-subjects"]`)
			assert.Equal(t, tc.warns, warning.Length() == 1, "the warning of subjects no rule classifies")
			if tc.warns {
				assert.Contains(t, warning.Text(), `subject = ">"`)
			}
		})
	}
}

// TestPolicyPageSaysWhenItIsNotTheActivePolicy: a console whose policy
// file is not the active version (another replica deployed a newer one)
// says so above its table: its version, the active one, since when, and to
// those who run the console which process made it active. A console on the
// active version says nothing of the kind.
func TestPolicyPageSaysWhenItIsNotTheActivePolicy(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	admin, _ := b.SignIn(t, "*:admin")
	oncall, _ := b.SignIn(t, "acme:oncall")
	page := b.Do(t, oncall, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="policy-stale"]`).Length(), "the active version")

	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	newer, err := replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)))
	require.NoError(t, err)
	deploy := replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }})
	require.NoError(t, deploy.ActivatePolicy(context.Background(), "console-7f9c-42"))
	mine := b.Replays.Policy().Version()

	for _, tc := range []struct {
		name string
		c    *http.Client
		by   bool
	}{{"Admin", admin, true}, {"Oncall", oncall, false}} {
		t.Run(tc.name, func(t *testing.T) {
			page := b.Do(t, tc.c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			note := page.Doc(t).Find(`[data-testid="policy-stale"]`)
			require.Equal(t, 1, note.Length(), page.Body)
			text := strings.Join(strings.Fields(note.Text()), " ")
			assert.Contains(t, text, "This console runs policy version "+mine[:16])
			assert.Contains(t, text, "the active policy is version "+newer.Version()[:16])
			assert.Contains(t, text, "submits, approves and replays nothing")
			assert.Equal(t, tc.by, strings.Contains(text, "activated by console-7f9c-42."), text)
			assert.NotContains(t, text, " .", "the sentence ends at its time (a line break before its period was a space)")
			assert.NotContains(t, text, " ,", "by whom follows its time (a line break before its comma was a space)")
		})
	}
}

// TestPolicyPageShowsAWaitingRollback: while a rollback allowance waits,
// the Policy page says which version it lets back and until when, and to
// those who run the console who allowed it; used, it is gone.
func TestPolicyPageShowsAWaitingRollback(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	admin, _ := b.SignIn(t, "*:admin")
	oncall, _ := b.SignIn(t, "acme:oncall")
	ctx := context.Background()
	src, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	newer, err := replaypolicy.Parse("newer.toml", []byte(strings.Replace(string(src), "default_rate = 500", "default_rate = 400", 1)))
	require.NoError(t, err)
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }}).ActivatePolicy(ctx, "console-7f9c-42"))
	page := b.Do(t, admin, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="policy-rollback"]`).Length(), "none allowed")

	mine := b.Replays.Policy().Version()
	r, err := replay.AllowPolicyRollback(ctx, b.DB.Pool, mine, 0, quarantine.Actor{Subject: "ops@bastion"}, "the newer rate starves refunds")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		c    *http.Client
		by   bool
	}{{"Admin", admin, true}, {"Oncall", oncall, false}} {
		t.Run(tc.name, func(t *testing.T) {
			page := b.Do(t, tc.c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			note := page.Doc(t).Find(`[data-testid="policy-rollback"]`)
			require.Equal(t, 1, note.Length(), page.Body)
			text := strings.Join(strings.Fields(note.Text()), " ")
			assert.Contains(t, text, "Policy version "+mine[:16]+"… may be made active again until")
			assert.Equal(t, r.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"), note.Find("time").AttrOr("datetime", ""))
			assert.Equal(t, tc.by, strings.Contains(text, "Allowed by ops@bastion"), text)
		})
	}

	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: b.Replays.Policy}).ActivatePolicy(ctx, "rollback"))
	page = b.Do(t, admin, "GET", "/policy", nil, nil)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="policy-rollback"]`).Length(), "used")
}
