package web

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRevFix10bTicketLinkToConsoleByAnotherSpelling: ticketProblem compares
// the link's host with the console's hosts as strings (lower case, no port,
// no trailing dot), but a browser reads a URL's host the WHATWG way: IDNA
// mapping (full-width letters, the ideographic full stop, a soft hyphen
// that maps to nothing, percent-encoded forms of these) and the IPv4
// number forms (hex, octal, fewer parts, one integer). Each link below is
// stored, shown on the groups page and followed by the browser to the
// console itself, a same-origin navigation that runs the export under
// whoever opened "the ticket" — what the fix meant to refuse.
func TestRevFix10bTicketLinkToConsoleByAnotherSpelling(t *testing.T) {
	t.Parallel()
	s := &Server{deps: Deps{Config: Config{ConsoleURLs: []string{"https://console.example.com"}}}}
	r := httptest.NewRequest("POST", "http://10.0.0.5:8080/groups/note", nil)
	console := s.consoleHosts(r)
	for _, link := range []string{
		"https://\uff43onsole.example.com/audit/export.csv",    // full-width c: IDNA maps it to "c"
		"https://CONSOLE\uff0eexample.com/audit/export.csv",    // full-width full stop
		"https://console\u3002example.com/audit/export.csv",    // ideographic full stop: a dot
		"https://con\u00adsole.example.com/audit/export.csv",   // soft hyphen: mapped to nothing
		"https://%EF%BD%83onsole.example.com/audit/export.csv", // percent-encoded full-width c
		"http://0x0a.0.0.5:8080/audit/export.jsonl",            // hex IPv4 part
		"http://167772165:8080/audit/export.jsonl",             // 10.0.0.5 as one number
		"http://10.5:8080/audit/export.jsonl",                  // two-part IPv4
		"http://012.0.0.5:8080/audit/export.jsonl",             // octal IPv4 part
	} {
		assert.Contains(t, ticketProblem(link, console), "the console itself",
			"%s is followed by a browser to the console itself", link)
	}
}

// TestRevFix10bTicketLinkToConsoleByAnotherIPv6Spelling: a console reached
// by an IPv6 literal is named by the browser in its canonical form
// (RFC 5952: leading zeros dropped, the longest run of zero groups as
// "::"), whatever form the link spells; ticketProblem compares strings.
func TestRevFix10bTicketLinkToConsoleByAnotherIPv6Spelling(t *testing.T) {
	t.Parallel()
	s := &Server{}
	r := httptest.NewRequest("POST", "http://[fd00::5]:8080/groups/note", nil)
	console := s.consoleHosts(r)
	for _, link := range []string{
		"http://[fd00:0:0:0:0:0:0:5]:8080/audit/export.jsonl",
		"http://[fd00::0005]:8080/audit/export.jsonl",
	} {
		assert.Contains(t, ticketProblem(link, console), "the console itself",
			"%s is followed by a browser to the console itself", link)
	}
}
