package web

import (
	"net/http"
	"strings"

	"github.com/quarantine-console/quarantine"
)

// A GET is safe for http.CrossOriginProtection, and the session cookie is
// SameSite=Lax, which a top-level navigation from another site carries. A
// GET that writes (an export, a payload download: each an audit row under
// the caller) would let any page an operator opens make the log say they
// did it. Such routes declare it (Route.Writes) and enforce refuses them
// when the browser's fetch metadata says another site started the request.

// errCrossSiteGet is the answer to a GET that writes, started by another
// site. Nothing was written: not even a denial, which would again be a row
// under the person that another site chose to write.
var errCrossSiteGet = quarantine.Errorf(quarantine.EFORBIDDEN,
	"This link came from another site. Exports and downloads are recorded in the audit log under your name, "+
		"so the console starts them only from its own pages: start it again from here.")

// crossSiteGetError is errCrossSiteGet for one request: the refusal page
// offers Again, the same path and query, as a link of the console's own
// page, so that one click starts it. A download that had to sign in first
// comes back from the identity provider as another site's navigation and
// lands here; the click is what proves the person meant it.
type crossSiteGetError struct{ Again string }

func (e crossSiteGetError) Error() string { return errCrossSiteGet.Error() }
func (e crossSiteGetError) Unwrap() error { return errCrossSiteGet }

// crossSiteGet returns the refusal of r. Again is r's path, a local one
// only (one a browser could read as another host, "//host" or "/\host",
// gives no link), and its query, encoded again.
func crossSiteGet(r *http.Request) error {
	again := r.URL.EscapedPath()
	if !strings.HasPrefix(again, "/") || strings.HasPrefix(again, "//") || strings.HasPrefix(again, "/\\") {
		return crossSiteGetError{}
	}
	if q := r.URL.Query().Encode(); q != "" {
		again += "?" + q
	}
	return crossSiteGetError{Again: again}
}

// crossSite reports whether the browser says another site started r: a
// Sec-Fetch-Site other than "same-origin" and "none" (typed or bookmarked).
// "same-site" counts as another site: a sibling subdomain is not the
// console. A request without the header passes: it comes from a client
// that is not a browser (curl with a session cookie), which no other site
// can drive, or from a browser too old to send fetch metadata.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}
