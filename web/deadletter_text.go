package web

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// deadLetterText downloads a whole text of a dead letter (which: a dlq
// Text* name) whose page shows only the start of it: the error, the stack
// trace (dlq.PreviewTextMax bytes of each on the page) or every header
// (dlq.PreviewHeadersMax on the page, values cut). Reading it needs what
// reading the page does; another tenant's is not found, like the page. It
// is sent as plain text, an attachment no browser sniffs, renders or
// caches, held once (as PostgreSQL sent it) however long it is.
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
		name := fmt.Sprintf("deadletter-%d-%s.txt", id, which)
		if which == dlq.TextHeaders {
			name = fmt.Sprintf("deadletter-%d-headers.json", id)
		}
		return sendDownload(c, name, echo.MIMETextPlainCharsetUTF8, text)
	}
}
