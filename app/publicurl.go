package app

import (
	"net/url"
	"strings"
)

// PublicURLOf is CONSOLE_PUBLIC_URL as the console stores it: without a
// trailing "/", and with its scheme and host in lower case (both are
// case-insensitive, and every later decision compares them: whether the
// console is https, the callback built on it, the origins a request is
// checked against). A value that is not an origin comes back trimmed
// only; it was refused before (checkPublicURL).
func PublicURLOf(raw string) string {
	raw = strings.TrimSuffix(raw, "/")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return raw
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// IsHTTPS reports whether publicURL is an https URL, whatever the case
// of its scheme.
func IsHTTPS(publicURL string) bool {
	scheme, _, ok := strings.Cut(publicURL, "://")
	return ok && strings.EqualFold(scheme, "https")
}

// Secure reports whether the console is reached over https: its public
// URL is https, or a proxy in front ends TLS (TLSTerminated). It makes
// the session cookies Secure (and __Host-), sends HSTS, and puts the
// production checks of serve in force. The one place that decides it.
func (c Config) Secure() bool { return c.TLSTerminated || IsHTTPS(c.PublicURL) }
