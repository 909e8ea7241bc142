package web

import (
	"net/http"
	"strings"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
)

// A GET is safe for http.CrossOriginProtection, and the session cookie is
// SameSite=Lax, which a top-level navigation from another site carries. A
// GET that writes (an export, a payload download: each an audit row under
// the caller) would let any page an operator opens, or any link sent to
// them, make the log say they did it. Such routes declare it
// (Route.Writes) and enforce refuses them unless the browser's fetch
// metadata says the console's own pages started the request
// (authz.StartedOutside).

// errCrossSiteGet is the answer to a GET that writes, started by another
// site. Nothing was written: not even a denial, which would again be a row
// under the person that another site chose to write.
var errCrossSiteGet = quarantine.Errorf(quarantine.EFORBIDDEN,
	"This link came from another site. Exports and downloads are recorded in the audit log under your name, "+
		"so the console starts them only from its own pages: start it again from here.")

// errOutsideGet is the answer to a GET that writes which the browser says
// nothing started (Sec-Fetch-Site: none): typed in, a bookmark, or a link
// opened from another application, a mail or a chat message that anyone
// may have sent. Nothing was written, as for errCrossSiteGet.
var errOutsideGet = quarantine.Errorf(quarantine.EFORBIDDEN,
	"This link was opened from outside the console (a chat or mail message, a bookmark, the address bar). "+
		"Exports and downloads are recorded in the audit log under your name, "+
		"so the console starts them only from its own pages: start it again from here.")

// crossSiteGetError is the refusal of one GET that writes, errCrossSiteGet
// or errOutsideGet: the refusal page offers Again, the same path and
// query, as a link of the console's own page, so that one click starts it
// (a same-origin navigation), named by What (Route.Starts: "Download the
// payload of dead letter 17"). A download that had to sign in first comes
// back from the identity provider as another site's navigation and lands
// here; the click on what it names is what proves the person meant it.
type crossSiteGetError struct {
	Again string
	What  string
	err   error // errCrossSiteGet when nil
}

func (e crossSiteGetError) Error() string { return e.Unwrap().Error() }

func (e crossSiteGetError) Unwrap() error {
	if e.err == nil {
		return errCrossSiteGet
	}
	return e.err
}

// crossSiteGet returns the refusal of r, a request of a GET that starts
// what. Again is r's path, a local one only (one a browser could read as
// another host, "//host" or "/\host", gives no link), and its query,
// encoded again.
func crossSiteGet(r *http.Request, what string) error {
	why := errCrossSiteGet
	if !authz.CrossSite(r) {
		why = errOutsideGet
	}
	again := r.URL.EscapedPath()
	if !strings.HasPrefix(again, "/") || strings.HasPrefix(again, "//") || strings.HasPrefix(again, "/\\") {
		return crossSiteGetError{err: why}
	}
	if q := r.URL.Query().Encode(); q != "" {
		again += "?" + q
	}
	return crossSiteGetError{Again: again, What: what, err: why}
}
