package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/idna"

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
//
// "The console itself" is judged by name, so a link must name its host
// the one way a browser reads it as written: a DNS name in ASCII. A
// browser maps other spellings onto a host first (WHATWG URL parsing):
// full-width letters, an ideographic full stop, a soft hyphen (or these
// percent-encoded) through IDNA; 0x7f.0.0.1, 2130706433, 127.1 or
// 0177.0.0.1 to 127.0.0.1; any spelling of an IPv6 address to its
// canonical one. Rather than follow each mapping, such hosts are refused:
// a ticket tracker has a name.

// ticketProblem is the message for ticket link s, which may not lead to
// any of console (the console's own host names, as hostName gives them),
// or "" when it is a ticket link the groups page may show and link. Links
// saved before a rule was added are judged by it again when shown.
func ticketProblem(s string, console []string) string {
	u, err := url.Parse(s)
	switch {
	case len(s) > dlq.MaxGroupNote || !dlq.StorableText(s) || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Sprintf("A link that starts with https:// (or http://), at most %s bytes.", views.Count(dlq.MaxGroupNote))
	case u.User != nil:
		return "A ticket link may not carry a user name or password before its host (name@host): " +
			"the page would show them as if they were where it goes. Give the ticket's address without them."
	case !dnsName(u.Host):
		return "Ticket links must name their host by its DNS name in ASCII (xn-- form for internationalised names); " +
			"addresses are not accepted. A host written any other way may lead a browser to the console itself."
	case slices.Contains(console, hostName(u.Host)):
		return "This link leads to the console itself, not to a ticket: whoever opened it from the groups page " +
			"would do what it does under their own name. Give the ticket's address in your tracker."
	}
	return ""
}

// dnsName reports whether host (as a parsed URL has it: percent-decoded,
// perhaps with a port) is a DNS name in ASCII: labels of letters, digits
// and hyphens between dots (one trailing dot allowed), the last with a
// letter and not a hexadecimal number (0x1f), which a browser reads as
// part of an IPv4 address. So no IP literal in any form, no brackets, and
// nothing IDNA would map.
func dnsName(host string) bool {
	if strings.HasPrefix(host, "[") {
		return false
	}
	name := bareHost(host)
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
		return false
	}
	labels := strings.Split(name, ".")
	if slices.Contains(labels, "") {
		return false
	}
	last := labels[len(labels)-1]
	hex := strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == ""
	return strings.ContainsAny(last, "abcdefghijklmnopqrstuvwxyz") && !hex
}

// consoleHosts are the host names the console is reached by, as hostName
// gives them: the one r was sent to, and those of its public URL and its
// sign-in callback (Config.ConsoleURLs).
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
// without its port, brackets or trailing dot, in lower case, an
// internationalised name in its xn-- form (a console configured by
// https://bücher.example is the link https://xn--bcher-kva.example): two
// names of the same host compare equal. Cookies go to a host whatever the
// port.
func hostName(host string) string {
	name := bareHost(host)
	if a, err := idna.Lookup.ToASCII(name); err == nil && a != "" {
		return a
	}
	return name
}

// bareHost is host (as a URL or a request carries it, perhaps with a
// port) without its port, brackets or trailing dot, in lower case.
func bareHost(host string) string {
	return strings.TrimSuffix(strings.ToLower((&url.URL{Host: host}).Hostname()), ".")
}
