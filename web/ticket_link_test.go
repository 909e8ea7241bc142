package web

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTicketProblem: a ticket link is an http(s) link to another host,
// without a user name or password before the host; the console's own
// hosts (the request's, its public URL's, its callback's) are compared by
// name, whatever the case, port or trailing dot.
func TestTicketProblem(t *testing.T) {
	t.Parallel()
	s := &Server{deps: Deps{Config: Config{ConsoleURLs: []string{"https://Console.Example.com", "https://sso-cb.example.com:8443/auth/callback", ""}}}}
	r := httptest.NewRequest("POST", "http://10.0.0.5:8080/groups/note", nil)
	console := s.consoleHosts(r)
	assert.Equal(t, []string{"10.0.0.5", "console.example.com", "sso-cb.example.com"}, console)
	for link, want := range map[string]string{
		"https://tickets.example.com/browse/OPS-1":                  "",
		"http://tickets.example.com:8080/OPS-1?x=1":                 "",
		"ftp://tickets.example.com/OPS-1":                           "starts with https://",
		"https:///OPS-1":                                            "starts with https://",
		"tickets.example.com/OPS-1":                                 "starts with https://",
		"https://tickets.example.com:OPS-1@evil.example/":           "user name or password",
		"https://user@tickets.example.com/OPS-1":                    "user name or password",
		"https://console.example.com/audit/export.csv":              "the console itself",
		"https://CONSOLE.example.com.:9443/deadletters/1/payload":   "the console itself",
		"http://10.0.0.5:8080/audit/export.jsonl":                   "the console itself",
		"https://sso-cb.example.com/anything":                       "the console itself",
		"https://console.example.com.evil.example/audit/export.csv": "",
	} {
		got := ticketProblem(link, console)
		if want == "" {
			assert.Empty(t, got, link)
		} else {
			assert.Contains(t, got, want, link)
		}
	}
}

// TestTicketProblemHostSpelling: a ticket link names its host as a DNS
// name in ASCII; an address in any form, a host a browser would map
// (non-ASCII, percent-encoded) and a name ending in a number are refused
// as such, and a console named in Unicode is matched by its xn-- form.
func TestTicketProblemHostSpelling(t *testing.T) {
	t.Parallel()
	s := &Server{deps: Deps{Config: Config{ConsoleURLs: []string{"https://Konsole.Bücher.example"}}}}
	r := httptest.NewRequest("POST", "http://console.example.com/groups/note", nil)
	console := s.consoleHosts(r)
	assert.Equal(t, []string{"console.example.com", "konsole.xn--bcher-kva.example"}, console)
	for link, want := range map[string]string{
		"https://tickets.example.com./OPS-1":                "",
		"https://xn--bcher-kva.example/OPS-1":               "",
		"https://jira-2.example.com:8443/OPS-1":             "",
		"https://tickets/OPS-1":                             "",
		"https://konsole.xn--bcher-kva.example/audit":       "the console itself",
		"https://KONSOLE.XN--BCHER-KVA.EXAMPLE./audit":      "the console itself",
		"https://konsole.bücher.example/audit":              "DNS name in ASCII",
		"https://b%C3%BCcher.example/OPS-1":                 "DNS name in ASCII",
		"https://192.0.2.7/OPS-1":                           "DNS name in ASCII",
		"https://[2001:db8::7]/OPS-1":                       "DNS name in ASCII",
		"https://0x7f.0.0.0x1/audit":                        "DNS name in ASCII",
		"https://tickets.example.0x/OPS-1":                  "DNS name in ASCII",
		"https://tickets.example.123/OPS-1":                 "DNS name in ASCII",
		"https://tickets..example.com/OPS-1":                "DNS name in ASCII",
		"https://tickets_1.example.com/OPS-1":               "DNS name in ASCII",
		"https://tickets.example.0xg/OPS-1":                 "",
		"https://console.example.com.tickets.example/OPS-1": "",
	} {
		got := ticketProblem(link, console)
		if want == "" {
			assert.Empty(t, got, link)
		} else {
			assert.Contains(t, got, want, link)
		}
	}
}
