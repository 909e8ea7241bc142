package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// stepTimeout bounds one browser step (a navigation, a click, a wait). It
// is generous: CI runs the suite on machines slower and busier than ours,
// where Chromium, the console and PostgreSQL share two loaded cores. A
// step that does not fail waits only as long as it needs.
const stepTimeout = time.Minute

// evalTimeout bounds one evaluation inside a wait: one that takes longer
// (a page being replaced, a busy browser) counts as "not yet".
const evalTimeout = 10 * time.Second

// complete is true in a page that has finished loading: parsed to its end,
// its deferred scripts (htmx, app.js) run. A page still parsing may lack
// the elements after the one a wait looked for, and an element may hold
// only part of its text.
const complete = `document.readyState === "complete"`

// browser is one headless Debian Chromium for a test. People in the test
// each get their own browser context from it (newSession): separate
// cookies, as separate browsers would have.
type browser struct {
	ctx context.Context // the browser's root target
	out *syncBuffer     // what Chromium printed
}

// newBrowser starts Chromium with a fresh profile and a 1440×900 window;
// it is closed at cleanup.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	b := &browser{out: &syncBuffer{}}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, // as root, chromedp adds --no-sandbox itself
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
		chromedp.CombinedOutput(b.out),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits until the browser process is gone
		if t.Failed() {
			saveArtifact(t, "chromium.log", []byte(b.out.String()))
		}
	})
	// The first run starts the browser and binds it to the context it is
	// given: no timeout here, or the browser would die with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v\n%s", err, b.out.String())
	}
	b.ctx = ctx
	return b
}

// session is one person in the browser: a tab in a browser context of its
// own, pointed at the console.
type session struct {
	t     *testing.T
	ctx   context.Context
	base  string // console URL
	label string // names the person's artifacts
	Email string // who signed in (LoginAs)
}

// newSession opens a tab in a new browser context (its own cookie jar).
// When the test fails, the tab's page HTML and a screenshot go to the
// artifacts folder as <test>.<label>.html and .fail.png.
func (b *browser) newSession(t *testing.T, consoleURL, label string) *session {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	s := &session{t: t, ctx: ctx, base: strings.TrimSuffix(consoleURL, "/"), label: label}
	t.Cleanup(func() {
		if t.Failed() {
			s.saveFailureArtifacts()
		}
	})
	// Opens the tab; like the browser, it lives as long as this context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab (%s): %v", label, err)
	}
	// The window's frame takes some of its 1440×900; the page gets all of it.
	s.do("size the viewport", chromedp.EmulateViewport(1440, 900))
	return s
}

// do runs browser steps with a step timeout and fails the test on error.
func (s *session) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.t.Fatalf("%s (%s): %v", what, s.label, err)
	}
}

// run runs one browser action returning a value, with a step timeout.
func run[T any](s *session, what string, a chromedp.Action[T]) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		s.t.Fatalf("%s (%s): %v", what, s.label, err)
	}
	return v
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON result into T.
func eval[T any](s *session, what, expr string) T {
	s.t.Helper()
	return run(s, what, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// Open navigates to a console path (or absolute URL) and waits for the load.
func (s *session) Open(path string) {
	s.t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = s.base + path
	}
	s.do("open "+path, chromedp.Navigate(u))
}

// WaitUntil polls a JavaScript condition in the page until it is true in
// a complete page (see complete): what the test reads next is all there.
// Errors (e.g. while a navigation replaces the page) count as "not yet".
func (s *session) WaitUntil(what, jsCond string) {
	s.t.Helper()
	err := wait.Poll(stepTimeout, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(s.ctx, evalTimeout)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](complete+` && !!(`+jsCond+`)`))
		if err != nil {
			return err
		}
		if !ok {
			return wait.ErrNotYet
		}
		return nil
	})
	if err != nil {
		s.t.Fatalf("waiting for %s (%s) at %s: %v", what, s.label, s.Location(), err)
	}
}

// MarkPage marks the page the session shows now, so that WaitNewPage can
// tell the page an action loads from this one: a form posted back to its
// own address, or a page that shows the awaited element already, would
// satisfy a wait on the address or the element before the answer came.
func (s *session) MarkPage() {
	s.t.Helper()
	eval[bool](s, "mark the page", `(window.__e2eLeft = true)`)
}

// WaitNewPage waits for a page loaded since MarkPage, complete, in which
// jsCond holds (the element the test reads next, say).
func (s *session) WaitNewPage(what, jsCond string) {
	s.t.Helper()
	s.WaitUntil(what, `!window.__e2eLeft && (`+jsCond+`)`)
}

// ClickLoads clicks css, which loads a new page (a link, a form's submit
// button), and waits until that page is complete and jsCond holds in it.
// Not for what htmx swaps into the same page (boosted links, live
// filters): no new page comes.
func (s *session) ClickLoads(css, what, jsCond string) {
	s.t.Helper()
	s.MarkPage()
	s.Click(css)
	s.WaitNewPage(what, jsCond)
}

// Location is the page's current URL.
func (s *session) Location() string {
	ctx, cancel := context.WithTimeout(s.ctx, evalTimeout)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	return loc
}

// testID is the CSS selector of a data-testid.
func testID(id string) string { return `[data-testid="` + id + `"]` }

// jsString quotes s for JavaScript source.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// read evaluates a JavaScript expression once the page is complete and
// returns its value: a read never sees a page still parsing, where an
// element after the ones waited for may be missing yet (an Exists that
// answers false too early passes vacuously). It waits up to stepTimeout
// for the page; errors while a navigation replaces it count as "not yet".
func read[T any](s *session, what, expr string) T {
	s.t.Helper()
	var v readResult[T]
	err := wait.Poll(stepTimeout, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(s.ctx, evalTimeout)
		defer cancel()
		var err error
		v, err = chromedp.Run(ctx, chromedp.Evaluate[readResult[T]](`(() => `+complete+` ? {complete: true, value: (`+expr+`)} : {complete: false})()`))
		if err != nil {
			return err
		}
		if !v.Complete {
			return fmt.Errorf("document.readyState is not complete: %w", wait.ErrNotYet)
		}
		return nil
	})
	if err != nil {
		s.t.Fatalf("%s (%s) at %s: %v", what, s.label, s.Location(), err)
	}
	return v.Value
}

// readResult is what read's expression answers: whether the page was
// complete, and then the value read.
type readResult[T any] struct {
	Complete bool `json:"complete"`
	Value    T    `json:"value"`
}

// Exists reports whether an element matches the CSS selector in the page,
// once it is complete.
func (s *session) Exists(css string) bool {
	s.t.Helper()
	return read[bool](s, "look for "+css, `!!document.querySelector(`+jsString(css)+`)`)
}

// Text is the trimmed text of the first element matching css in the
// complete page; the test fails when there is none.
func (s *session) Text(css string) string {
	s.t.Helper()
	v := read[*string](s, "read "+css, `(() => { const e = document.querySelector(`+jsString(css)+`); return e ? e.textContent.trim() : null })()`)
	if v == nil {
		s.t.Fatalf("no element %s (%s) at %s", css, s.label, s.Location())
	}
	return *v
}

// Texts is the trimmed text of every element matching css in the complete
// page.
func (s *session) Texts(css string) []string {
	s.t.Helper()
	return read[[]string](s, "read all "+css, `[...document.querySelectorAll(`+jsString(css)+`)].map(e => e.textContent.trim())`)
}

// Attr is an attribute of the first element matching css in the complete
// page ("" if absent).
func (s *session) Attr(css, name string) string {
	s.t.Helper()
	return read[string](s, "read "+name+" of "+css,
		`(() => { const e = document.querySelector(`+jsString(css)+`); return (e && e.getAttribute(`+jsString(name)+`)) || "" })()`)
}

// Fill replaces the value of an input or textarea by typing, as a person
// does. (The value is emptied first through the value property:
// chromedp.Clear fails on an empty textarea, which has no text node.)
func (s *session) Fill(css, value string) {
	s.t.Helper()
	s.do("wait for "+css, chromedp.WaitVisible(chromedp.CSS(css)))
	eval[bool](s, "empty "+css, `(() => { const e = document.querySelector(`+jsString(css)+`); e.value = ""; return true })()`)
	s.do("fill "+css, chromedp.SendKeys(chromedp.CSS(css), value))
}

// Select chooses an option of a <select> by value.
func (s *session) Select(css, value string) {
	s.t.Helper()
	s.do("select "+value+" in "+css, chromedp.WaitVisible(chromedp.CSS(css)), chromedp.SetValue(chromedp.CSS(css), value))
}

// Click clicks the first element matching css once it is visible.
func (s *session) Click(css string) {
	s.t.Helper()
	s.do("click "+css, chromedp.WaitVisible(chromedp.CSS(css)), chromedp.Click(chromedp.CSS(css)))
}

// LoginAs signs in the way a person does: the console sends the browser to
// Dex, Dex shows its own login page, the person types the email and the
// demo password and submits, Dex sends the browser back with a code, and
// the console shows its header with the person's name.
func (s *session) LoginAs(email string) {
	s.t.Helper()
	s.Open("/")
	s.WaitUntil("Dex's login form", `document.querySelector('input[name="login"]') && document.querySelector('input[name="password"]')`)
	if loc := s.Location(); strings.HasPrefix(loc, s.base) {
		s.t.Fatalf("login form served by the console (%s), not by Dex", loc)
	}
	s.Fill(`input[name="login"]`, email)
	s.Fill(`input[name="password"]`, DemoPassword)
	s.Click(`button[type="submit"]`)
	s.WaitUntil("the console's header after sign-in as "+email,
		`location.href.startsWith(`+jsString(s.base+"/")+`) && document.querySelector('[data-testid="user-name"]')`)
	s.Email = email
}

// Screenshot saves a full-page PNG of what the session shows to
// .data/e2e-artifacts/<test>.png (<test>.<name>.png when name is not empty).
func (s *session) Screenshot(name string) {
	s.t.Helper()
	png, err := s.fullPage()
	if err != nil {
		s.t.Fatalf("screenshot (%s): %v", s.label, err)
	}
	suffix := "png"
	if name != "" {
		suffix = name + ".png"
	}
	saveArtifact(s.t, suffix, png)
}

// fullPage takes a PNG of the whole page: the viewport is stretched to the
// page's height for the shot and set back after. (Chromium's own
// capture-beyond-viewport sometimes answers "0 width" in headless mode.)
func (s *session) fullPage() ([]byte, error) {
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	h, err := chromedp.Run(ctx, chromedp.Evaluate[int64](
		`Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)`))
	if err != nil {
		return nil, err
	}
	h = min(max(h, 900), 10000)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, h)); err != nil {
		return nil, err
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if rerr := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err == nil {
		err = rerr
	}
	return png, err
}

func (s *session) saveFailureArtifacts() {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); err == nil {
		saveArtifact(s.t, s.label+".html", []byte("<!-- "+s.Location()+" -->\n"+html))
	}
	if png, err := s.fullPage(); err == nil {
		saveArtifact(s.t, s.label+".fail.png", png)
	}
}

// fetchResult is what fetch() in the page got.
type fetchResult struct {
	Status      int    `json:"status"`
	URL         string `json:"url"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

// Fetch runs fetch() in the page, so the request carries the browser's own
// session cookie and the headers a same-origin request from the page has
// (Origin, Sec-Fetch-Site). form, when not nil, is sent as an
// application/x-www-form-urlencoded body.
func (s *session) Fetch(method, path string, form url.Values) fetchResult {
	s.t.Helper()
	init := `{method: ` + jsString(method) + `, credentials: "same-origin"`
	if form != nil {
		init += `, headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: ` + jsString(form.Encode())
	}
	init += `}`
	return eval[fetchResult](s, method+" "+path, `fetch(`+jsString(path)+`, `+init+`).then(async r => ({
		status: r.status, url: r.url, contentType: r.headers.get("Content-Type") || "", body: await r.text()}))`)
}

// Cookies are the browser's cookies for the console, as a Go HTTP client
// would send them (for requests the page could not make, like a
// cross-site POST).
func (s *session) Cookies() []*http.Cookie {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{s.base + "/"}})
	if err != nil {
		s.t.Fatalf("read cookies (%s): %v", s.label, err)
	}
	var out []*http.Cookie
	for _, c := range res.Cookies {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	if len(out) == 0 {
		s.t.Fatalf("the browser holds no cookie for %s (%s)", s.base, s.label)
	}
	return out
}

// httpWithCookies sends a request with the given cookies and extra
// headers, without following redirects, and returns the status and body.
func httpWithCookies(t *testing.T, method, rawURL string, cookies []*http.Cookie, header http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, rawURL, err)
	}
	return resp.StatusCode, string(b)
}
