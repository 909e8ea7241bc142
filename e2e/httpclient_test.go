package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// httpSession is a person signed in without a browser: an HTTP client with
// its own cookie jar that went through Dex's real login form (for tests
// with many concurrent clients, where a browser each would be too heavy).
// Its requests carry no Origin or Sec-Fetch-Site header, as a non-browser
// client's do, so the cross-origin protection lets them through and
// authorization decides.
type httpSession struct {
	Email  string
	base   string
	client *http.Client
	// Home is the console page Dex sent the person back to.
	Home *goquery.Document
}

// signInHTTP signs in the way a person does, over plain HTTP: the console
// sends the client to Dex, Dex shows its login page, the form is posted
// with the demo password, Dex redirects back with a code. No cookie is
// minted, no endpoint skipped. Call it from the test goroutine.
func signInHTTP(t *testing.T, consoleURL, email string) *httpSession {
	t.Helper()
	h, err := trySignInHTTP(consoleURL, email, DemoPassword)
	if err != nil {
		t.Fatalf("sign in %s: %v", email, err)
	}
	return h
}

// trySignInHTTP is signInHTTP returning the error (a wrong password ends
// on Dex's page, not on the console).
func trySignInHTTP(consoleURL, email, password string) (*httpSession, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	h := &httpSession{Email: email, base: strings.TrimSuffix(consoleURL, "/"), client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	resp, err := h.client.Get(h.base + "/auth/login")
	if err != nil {
		return nil, err
	}
	page, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	action, ok := page.Find("form").First().Attr("action")
	if !ok {
		return nil, fmt.Errorf("no login form at %s", resp.Request.URL)
	}
	target, err := resp.Request.URL.Parse(action)
	if err != nil {
		return nil, err
	}
	resp, err = h.client.PostForm(target.String(), url.Values{"login": {email}, "password": {password}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.String(), h.base+"/") {
		return nil, &signInError{status: resp.StatusCode, at: resp.Request.URL.String(), body: string(body)}
	}
	if h.Home, err = goquery.NewDocumentFromReader(strings.NewReader(string(body))); err != nil {
		return nil, err
	}
	return h, nil
}

// signInError is a sign-in that did not end on the console.
type signInError struct {
	status int
	at     string
	body   string
}

func (e *signInError) Error() string {
	return fmt.Sprintf("sign-in ended at %s with status %d", e.at, e.status)
}

// Get fetches a console path and returns the status and body.
func (h *httpSession) Get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	return h.do(req)
}

// PostForm posts a form to a console path without following the redirect
// (a 303 after a successful POST is the answer to check).
func (h *httpSession) PostForm(ctx context.Context, path string, form url.Values) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return h.do(req)
}

func (h *httpSession) do(req *http.Request) (int, string, error) {
	client := *h.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
