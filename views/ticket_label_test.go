package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTicketLabel: the label names the host the link goes to, as the
// parsed link has it, then its path; a host too long for the label shows
// its end.
func TestTicketLabel(t *testing.T) {
	t.Parallel()
	long := "a-very-long-subdomain-that-says-tickets-example-com.evil.example"
	for link, want := range map[string]string{
		"https://tickets.example.com/browse/OPS-4711/":                      "tickets.example.com/browse/OPS-4711",
		"http://tickets.example.com:8080/OPS-1?tab=all":                     "tickets.example.com:8080/OPS-1",
		"https://tickets.example.com:OPS-4711-xxxx@evil.example/browse/OPS": "evil.example/browse/OPS",
		"https://tickets.example.com/" + long:                               "tickets.example.com/a-very-long-subdomain-that-…",
		"https://" + long + "/OPS-1":                                        "…" + long[len(long)-47:],
		"not a link":                                                        "not a link",
	} {
		assert.Equal(t, want, TicketLabel(link), link)
	}
}
