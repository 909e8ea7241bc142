package web

import (
	"net/http"

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
		"so the console starts them only from its own pages: open the page here and start it again.")

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
