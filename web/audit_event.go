package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

func (s *Server) auditEvent(c echo.Context) error {
	seq, ok := pathID(c, "seq")
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such audit event.")
	}
	tenants := s.auditScope(c, authz.ActRead)
	if tenants == nil {
		tenants = []string{audit.AllTenants}
	}
	e, err := audit.Get(c.Request().Context(), s.deps.Pool, seq, tenants)
	if err != nil {
		return err // ErrNotFound also for another tenant's event: 404, existence not leaked
	}
	m := views.AuditEventModel{
		Seq: e.Seq, At: e.At, ActorIssuer: e.Actor.Issuer, ActorSubject: e.Actor.Subject, ActorEmail: emailLabel(e.Actor.Email, e.Actor.EmailVerified),
		Tenant: e.Tenant, Action: e.Action, ObjectType: e.ObjectType, ObjectID: e.ObjectID, MessageID: e.MessageID,
		OperationID: e.OperationID, RequestID: e.RequestID, Reason: e.Reason, Outcome: string(e.Outcome),
		RemoteAddr: e.RemoteAddr, UserAgent: e.UserAgent, Before: prettyJSON(e.Before), After: prettyJSON(e.After),
		Hash: e.HashHex(), ListURL: "/audit", ObjectURL: objectURL(e), ObjectText: draftObjectText(e), OperationURL: operationURL(e),
	}
	if e.PrevHash != nil {
		m.PrevHash = (&audit.Entry{Hash: e.PrevHash}).HashHex()
	}
	return s.render(c, http.StatusOK, views.AuditEvent(s.page(c, "Audit event "+c.Param("seq"), "audit"), m))
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}
