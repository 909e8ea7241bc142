package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// mayDownload reports whether u may download payloads in tenant
// (deadletter:download): the pages link a download only then.
func (s *Server) mayDownload(u authz.User, tenant string) bool {
	return s.deps.Access.Can(u, tenant, authz.ObjDeadLetter, authz.ActDownload)
}

// deadLetterPayload downloads the raw payload of a dead letter (permission
// deadletter:download in its tenant). It is sent as an attachment of type
// application/octet-stream that browsers never sniff or render, and the
// download is audited.
func (s *Server) deadLetterPayload(c echo.Context) error {
	ctx := c.Request().Context()
	id, ok := deadLetterID(c)
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	p, err := s.deps.DeadLetters.PayloadInScope(ctx, id, s.deadLetterTenants(ctx, userOf(c), authz.ActDownload))
	var out *dlq.OutOfScopeError
	if errors.As(err, &out) {
		// The caller may read it there but not download: say so. Otherwise
		// it is not theirs to know about.
		if s.deps.Access.Can(userOf(c), out.Tenant, authz.ObjDeadLetter, authz.ActRead) {
			return s.deny(c, out.Tenant, authz.ObjDeadLetter+":"+authz.ActDownload, "dead letter "+c.Param("id"))
		}
		return s.notFoundDenied(c, out.Tenant, deadLetterAuditType, c.Param("id"))
	}
	if err != nil {
		return err
	}
	if p.Unavailable {
		return quarantine.Errorf(quarantine.ENOTFOUND, "The original message was gone from its stream; there is no payload.")
	}
	e := s.event(c, "deadletter.download", audit.OutcomeOK)
	e.Tenant, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID = p.Tenant, deadLetterAuditType, c.Param("id"), p.MsgID, p.OperationID
	if _, err := audit.AppendFunc(ctx, s.deps.Pool, e); err != nil {
		return fmt.Errorf("audit payload download: %w", err)
	}
	return sendAttachment(c, fmt.Sprintf("deadletter-%d.bin", p.ID), p.Data)
}

// startsPayload says what a dead letter's payload download starts, for
// the button of its refusal when another site started it (Route.Starts).
func startsPayload(c echo.Context) string {
	return "Download the payload of dead letter " + authz.ClientText(c.Param("id"), 20)
}

// sendAttachment sends a payload as a download of type
// application/octet-stream that browsers never sniff, render or cache.
func sendAttachment(c echo.Context, filename string, data []byte) error {
	return sendDownload(c, filename, echo.MIMEOctetStream, data)
}

// sendDownload sends data as a download named filename, of contentType,
// that browsers never sniff, render or cache.
func sendDownload(c echo.Context, filename, contentType string, data []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s"`, filename))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, contentType, data)
}
