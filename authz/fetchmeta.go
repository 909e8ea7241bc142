package authz

import "net/http"

// CrossSite reports whether the browser says another site started r: a
// Sec-Fetch-Site other than "same-origin" and "none" (nothing started it:
// typed, bookmarked, or opened from another application). "same-site"
// counts as another site: a sibling subdomain is not the console. A
// request without the header passes: it comes from a client that is not a
// browser (curl with a session cookie), which no other site can drive, or
// from a browser too old to send fetch metadata.
func CrossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// StartedOutside reports whether the browser says that something other
// than the console's own pages started r: another site (CrossSite), or
// nothing ("none"). Browsers send "none" for the address bar and
// bookmarks, and also for a link opened from a mail or chat application,
// which a stranger may have sent: for a GET that writes, or one that would
// sign a signed-in browser in again (Login.Start), it counts as another
// site's. A request without fetch metadata passes, as for CrossSite.
func StartedOutside(r *http.Request) bool {
	return CrossSite(r) || r.Header.Get("Sec-Fetch-Site") == "none"
}
