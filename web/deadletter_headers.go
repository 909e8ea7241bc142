package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// deadLetterHeaders downloads every header of a dead letter, whose page
// shows only the first headerRowsMax of them and cuts long values: the
// headers as stored (JSON, one object per header, a value not valid UTF-8
// as base64), indented. Reading it needs what reading the page does; it is
// sent as plain text no browser renders or caches.
func (s *Server) deadLetterHeaders(c echo.Context) error {
	ctx := c.Request().Context()
	id, ok := deadLetterID(c)
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	// Preview, not Get: the headers do not need a payload of up to the
	// stream's message size read with them.
	d, err := s.deps.DeadLetters.GetPreview(ctx, id, s.deadLetterTenants(ctx, userOf(c), authz.ActRead), nil)
	var out *dlq.OutOfScopeError
	if errors.As(err, &out) {
		return s.notFoundDenied(c, out.Tenant, deadLetterAuditType, c.Param("id"))
	}
	if err != nil {
		return err
	}
	var text bytes.Buffer
	if err := json.Indent(&text, d.HeadersJSON, "", "  "); err != nil {
		text.Reset()
		text.Write(d.HeadersJSON) // as stored, when it is not JSON after all
	}
	text.WriteByte('\n')
	return sendDownload(c, fmt.Sprintf("deadletter-%d-headers.json", id), echo.MIMETextPlainCharsetUTF8, text.Bytes())
}
