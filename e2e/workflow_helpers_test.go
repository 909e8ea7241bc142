package e2e

// Helpers for the operator-workflow journeys of issue 13: answering the
// confirmation dialogs app.js opens, turning JavaScript off to walk the
// pages it enhances, and screenshots at a desktop width, a phone width and
// in the dark scheme.

import (
	"context"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ClickAnswering clicks css, which opens a JavaScript confirmation, and
// accepts or dismisses it as a person would; it returns the question asked.
// The test fails when no dialog opens.
func (s *session) ClickAnswering(css string, accept bool) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	opening := chromedp.Events(ctx, page.JavascriptDialogOpening)
	asked := make(chan string, 1)
	go func() {
		for e, err := range opening {
			if err != nil {
				return
			}
			asked <- e.Message
			// The click waits for the dialog: answer it from here.
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			return
		}
	}()
	s.Click(css)
	select {
	case q := <-asked:
		return q
	case <-ctx.Done():
		s.t.Fatalf("clicking %s (%s) opened no confirmation dialog", css, s.label)
		return ""
	}
}

// ScriptOff turns JavaScript off (true) or on for the pages the session
// opens next, as a browser without it (or before app.js loads) would be.
func (s *session) ScriptOff(off bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off}); err != nil {
		s.t.Fatalf("script execution off=%t (%s): %v", off, s.label, err)
	}
}

// Screenshots saves the page as Screenshot does at 1440 px, then at a
// phone's 390 px (<name>.phone.png) and in the dark scheme
// (<name>.dark.png), and puts the page back as it was.
func (s *session) Screenshots(name string) {
	s.t.Helper()
	s.Screenshot(name)
	prefix := ""
	if name != "" {
		prefix = name + "."
	}
	s.shotAt(390, prefix+"phone.png")
	s.darkScheme(true)
	s.shotAt(1440, prefix+"dark.png")
	s.darkScheme(false)
}

// shotAt saves a full-page PNG at width as <test>.<suffix>.
func (s *session) shotAt(width int64, suffix string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
		s.t.Fatalf("viewport %d (%s): %v", width, s.label, err)
	}
	h, err := chromedp.Run(ctx, chromedp.Evaluate[int64](`Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)`))
	if err == nil {
		err = chromedp.Do(ctx, chromedp.EmulateViewport(width, min(max(h, 900), 10000)))
	}
	var png []byte
	if err == nil {
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	}
	if rerr := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err == nil {
		err = rerr
	}
	if err != nil {
		s.t.Fatalf("screenshot at %d px (%s): %v", width, s.label, err)
	}
	saveArtifact(s.t, suffix, png)
}

func (s *session) darkScheme(on bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	value := "light"
	if on {
		value = "dark"
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: value}},
	}); err != nil {
		s.t.Fatalf("color scheme %s (%s): %v", value, s.label, err)
	}
}

// TimeZone makes the browser's zone id (an IANA name) for the pages the
// session opens next.
func (s *session) TimeZone(id string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: id}); err != nil {
		s.t.Fatalf("time zone %s (%s): %v", id, s.label, err)
	}
}
