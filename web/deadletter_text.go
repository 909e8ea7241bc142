package web

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// deadLetterText downloads the whole error or stack trace (which: a dlq
// Text* name) of a dead letter, whose page shows only the first
// views.TextShownMax bytes of each. Reading it needs what reading the page
// does; it is sent as plain text no browser renders or caches.
func (s *Server) deadLetterText(which string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		id, ok := deadLetterID(c)
		if !ok {
			return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
		}
		text, err := s.deps.DeadLetters.TextInScope(ctx, id, s.deadLetterTenants(ctx, userOf(c), authz.ActRead), which)
		var out *dlq.OutOfScopeError
		if errors.As(err, &out) {
			return s.notFoundDenied(c, out.Tenant, deadLetterAuditType, c.Param("id"))
		}
		if err != nil {
			return err
		}
		return sendDownload(c, fmt.Sprintf("deadletter-%d-%s.txt", id, which), echo.MIMETextPlainCharsetUTF8, []byte(text))
	}
}
