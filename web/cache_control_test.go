package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
	"github.com/quarantine-console/quarantine/web"
)

// TestPagesAreNotStoredAssetsAre: every answer of the console but its
// static assets carries "Cache-Control: no-store" (pages show payloads,
// headers, stack traces and who did what; an error page or a probe shows
// nothing, and nothing is lost by not storing it), while the assets keep
// their own caching: a year, immutable, at their versioned address.
func TestPagesAreNotStoredAssetsAre(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", MsgID: "cache-control"})
	c, u := b.SignIn(t, "*:auditor", "*:oncall", "*:approver")
	req := testfactory.Request(t, b.Replays, u.Actor, []int64{dl}, replay.SubmitInput{})
	for _, path := range []string{
		"/", "/deadletters", fmt.Sprintf("/deadletters/%d", dl), fmt.Sprintf("/deadletters/%d/headers.json", dl),
		views.PathReplays, fmt.Sprintf("/replay/requests/%d", req.ID), "/approvals", "/audit", "/audit/1",
		"/healthz", "/nope", "/static/nope.css",
	} {
		resp := b.Do(t, c, "GET", path, nil, nil)
		require.NotEqual(t, http.StatusFound, resp.Status, path)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "%s (%d)", path, resp.Status)
	}

	anon := testfactory.NoFollow(nil)
	resp := b.Do(t, anon, "GET", web.AssetPath("app.css"), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"), "a versioned asset")
	resp = b.Do(t, anon, "GET", "/static/app.css", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), "an asset without its version is revalidated, not kept from the cache")
}
