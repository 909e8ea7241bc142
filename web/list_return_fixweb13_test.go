package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixWeb13ListReturnStaysOnTheList: a return_to is taken only when a
// browser would resolve it to the list or a dead letter's page (not a
// download under it, which a Back link would fetch and audit).
func TestFixWeb13ListReturnStaysOnTheList(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/deadletters":                     "/deadletters",
		"/deadletters?type=orders.refund":  "/deadletters?type=orders.refund",
		"/deadletters/83":                  "/deadletters/83",
		"/deadletters/../audit/export.csv": "/deadletters",
		"/deadletters/%2e%2e/audit":        "/deadletters",
		"/deadletters/%2E%2E/audit":        "/deadletters",
		"/deadletters/.%2e/audit":          "/deadletters",
		`/deadletters\..\audit`:            "/deadletters",
		"/deadletters/./83":                "/deadletters",
		"/deadlettersx":                    "/deadletters",
		"/audit/export.csv?x=/deadletters": "/deadletters",
		"//evil.example/deadletters":       "/deadletters",
		"https://evil.example/deadletters": "/deadletters",
		"/deadletters?return=/../audit":    "/deadletters?return=/../audit",
		// Round 31: a dead letter's page, not another path under the list.
		"/deadletters/83/payload":    "/deadletters",
		"/deadletters/83/stack.txt":  "/deadletters",
		"/deadletters/count?type=x":  "/deadletters",
		"/deadletters/083":           "/deadletters",
		"/deadletters/83?tab=errors": "/deadletters/83?tab=errors",
	} {
		assert.Equal(t, want, listReturn(in), in)
	}
}
