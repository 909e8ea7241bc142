package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnreadableQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		why   string // a word of the reason, "" when it is read whole
	}{
		{"", ""},
		{"tenant=acme&status=unresolved", ""},
		{"q=a%3Bb&q2=100%25", ""},
		{"tenant=acme&&", ""},
		{"=x&flag", ""},
		{"tenant=ac+me", ""},
		{strings.Repeat("&", 9_999), ""}, // 10,000 pairs, all empty
		{"state=unresolved;tenant=acme", `";"`},
		{"tenant=acme;", `";"`},
		{"tenant=acme%", `"%"`},
		{"tenant=acme%4", `"%"`},
		{"tenant=%zzacme", `"%"`},
		{"%zz=acme", `"%"`},
		{"tenant=acme" + strings.Repeat("&", 10_000), "10001 parameters"},
	} {
		got := unreadableQuery(tc.query)
		if tc.why == "" {
			assert.Empty(t, got, "%.40q", tc.query)
			continue
		}
		assert.Contains(t, got, tc.why, "%.40q", tc.query)
	}
}
