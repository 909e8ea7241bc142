package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixWeb13ListReturnStaysOnTheList: a return_to is taken only when a
// browser would resolve it to the list or a page under it.
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
	} {
		assert.Equal(t, want, listReturn(in), in)
	}
}
