package authz

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevAuth31CallbackFloodIsBounded: a sign-in's state lives in a
// cookie, which a client that is no browser sends again however often it
// likes; each callback asked the provider to exchange its code, with the
// console's client secret, without limit. A provider that limits its
// clients would then refuse the console's refreshes too and sign everyone
// out. Past the limit a callback asks the provider nothing and says why.
func TestRevAuth31CallbackFloodIsBounded(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	var exchanges atomic.Int64
	b.idp.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == b.idp.TokenPath() {
				exchanges.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	state := b.authorize(t).Query().Get("state")
	var flowCookie *http.Cookie
	for _, ck := range b.client.Jar.Cookies(mustURL(t, b.srv.URL)) {
		if strings.HasSuffix(ck.Name, state) {
			flowCookie = ck
		}
	}
	require.NotNil(t, flowCookie, "the sign-in's cookie")

	start := time.Now()
	const tries = 3 * exchangeBurst
	limited := 0
	for range tries {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/auth/callback?code=forged&state="+state, nil)
		require.NoError(t, err)
		req.AddCookie(flowCookie) // sent again, as no browser would
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body := b.body(t, resp)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		if strings.Contains(body, "too many sign-ins from your network address") {
			limited++
		}
	}
	refilled := int(time.Since(start)/exchangeEvery) + 1
	asked := tries - limited
	assert.LessOrEqual(t, asked, exchangeBurst+refilled, "the provider was asked at most the burst (and what refilled)")
	// oauth2 asks again, the secret in the form, when the provider refuses
	// a code with the secret in the header: at most twice each.
	assert.LessOrEqual(t, exchanges.Load(), int64(2*asked), "what reached the provider")
	assert.Positive(t, exchanges.Load())
	assert.Equal(t, float64(limited), b.denials.Total(DenialLoginRate), "each refusal is counted")
}

// TestExchangeLimits: one address is held to its burst then one an
// exchangeEvery; another address has its own; an IPv6 address counts as
// its /64.
func TestExchangeLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	l := newExchangeLimits(3)
	for i := range 3 {
		assert.True(t, l.Allow("10.0.0.1", now), "within the burst: %d", i)
	}
	assert.False(t, l.Allow("10.0.0.1", now), "past it")
	assert.True(t, l.Allow("10.0.0.2", now), "another address")
	assert.True(t, l.Allow("10.0.0.1", now.Add(exchangeEvery)), "one more after exchangeEvery")
	assert.False(t, l.Allow("10.0.0.1", now.Add(exchangeEvery)))

	for i := range 3 {
		assert.True(t, l.Allow(fmt.Sprintf("2001:db8:1:2::%x", i+1), now))
	}
	assert.False(t, l.Allow("2001:db8:1:2:ffff::9", now), "another address of the same /64")
	assert.True(t, l.Allow("2001:db8:1:3::1", now), "another /64")
	assert.Equal(t, "2001:db8:1:2::/64", exchangeKey("2001:db8:1:2:aaaa::1"))
	assert.Equal(t, "192.0.2.7", exchangeKey("192.0.2.7"))
	assert.Equal(t, "192.0.2.7", exchangeKey("::ffff:192.0.2.7"), "an IPv4 address mapped into IPv6 is that address")
	assert.Equal(t, newExchangeLimits(0).burst, exchangeBurst)
}
