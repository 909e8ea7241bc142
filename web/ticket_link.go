package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// An error group's ticket link is shown on the groups page to everyone who
// reads the tenant's dead letters, as a label that names where it goes
// (views.TicketLabel), and followed from the console's own page. So a link
// is refused when its label could name another host than the one it goes
// to (a user name or password before the host: https://tickets.example.com:x@evil.example/),
// and when it leads to the console itself: a link followed from the
// console's page is a same-origin navigation, and one to an export or a
// payload download would write an audit row under whoever opened "the
// ticket" (fetchmeta.go refuses such GETs only when something else
// started them).

// ticketProblem is the message for ticket link s, which may not lead to
// any of console (host names of the console itself, lower case), or ""
// when it is a ticket link the groups page may show.
func ticketProblem(s string, console []string) string {
	u, err := url.Parse(s)
	switch {
	case len(s) > dlq.MaxGroupNote || !dlq.StorableText(s) || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Sprintf("A link that starts with https:// (or http://), at most %s bytes.", views.Count(dlq.MaxGroupNote))
	case u.User != nil:
		return "A ticket link may not carry a user name or password before its host (name@host): " +
			"the page would show them as if they were where it goes. Give the ticket's address without them."
	case slices.Contains(console, hostName(u.Host)):
		return "This link leads to the console itself, not to a ticket: whoever opened it from the groups page " +
			"would do what it does under their own name. Give the ticket's address in your tracker."
	}
	return ""
}

// consoleHosts are the host names the console is reached by, lower case:
// the one r was sent to, and those of its public URL and its sign-in
// callback (Config.ConsoleURLs).
func (s *Server) consoleHosts(r *http.Request) []string {
	hosts := []string{hostName(r.Host)}
	for _, raw := range s.deps.Config.ConsoleURLs {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			hosts = append(hosts, hostName(u.Host))
		}
	}
	return hosts
}

// hostName is host (as a URL or a request carries it, perhaps with a port)
// without its port, brackets or trailing dot, in lower case: two names of
// the same host compare equal. Cookies go to a host whatever the port.
func hostName(host string) string {
	return strings.TrimSuffix(strings.ToLower((&url.URL{Host: host}).Hostname()), ".")
}
