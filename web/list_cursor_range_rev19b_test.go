package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb19ListCursorOutsideTimestampRangeIsA500: the dead letter
// list's "before"/"after" cursor (dlq.Cursor, base64 of "<unix
// micros>:<id>") is decoded with any int64 of microseconds, and
// Validate only checks that it decodes. One whose time PostgreSQL cannot
// hold (before 4713 BC: an edited link, a truncated digit run, a
// negative number) reaches the keyset query, PostgreSQL refuses the
// parameter ("timestamp out of range", 22008), and the person gets 500
// "Something went wrong" (logged as a console failure) instead of the
// page's 422 "The page link is broken; start from the first page."
func TestRevWeb19ListCursorOutsideTimestampRangeIsA500(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	viewer, _ := b.SignIn(t, "acme:viewer")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme"})
	cursor := dlq.Cursor{At: time.UnixMicro(-9_000_000_000_000_000_000).UTC(), ID: 1}.Encode()
	for _, param := range []string{"before", "after"} {
		resp := b.Do(t, viewer, http.MethodGet, "/deadletters?"+param+"="+cursor, nil, map[string]string{"Accept": "text/html"})
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s=%s: a cursor PostgreSQL cannot hold is a broken link, not a server error", param, cursor)
	}
}
