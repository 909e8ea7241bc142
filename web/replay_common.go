package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// actor is the signed-in user as the replay store records people.
func actor(c echo.Context) replaypolicy.Actor {
	u := userOf(c)
	return replaypolicy.Actor{Issuer: u.Issuer, Subject: u.Subject, Email: u.Email}
}

func (s *Server) meta(c echo.Context) dlq.Meta {
	return dlq.Meta{RequestID: c.Response().Header().Get(echo.HeaderXRequestID), RemoteAddr: c.RealIP(), UserAgent: c.Request().UserAgent()}
}

// loadRequest returns the replay request of the :id parameter if the user
// may read dead letters in its tenant; otherwise 404 (audited).
func (s *Server) loadRequest(c echo.Context) (dlq.ReplayRequest, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return dlq.ReplayRequest{}, echo.NewHTTPError(http.StatusNotFound, "There is no such replay request.")
	}
	req, err := s.deps.Replays.Request(c.Request().Context(), id)
	if err != nil {
		return req, err
	}
	if !s.deps.Access.Can(userOf(c), req.Tenant, authz.ObjDeadLetter, authz.ActRead) {
		return req, s.notFoundDenied(c, req.Tenant, "replay_request", c.Param("id"))
	}
	return req, nil
}

func describe(t *replaypolicy.Table, class replaypolicy.Class) string {
	if t == nil {
		return ""
	}
	return t.Describe(class)
}

func rateText(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func (s *Server) itemRows(items []dlq.ReplayItem) []views.ReplayItemRow {
	out := make([]views.ReplayItemRow, len(items))
	for i, it := range items {
		var hs []string
		for _, h := range it.Headers {
			hs = append(hs, h.Name+": "+h.Value)
		}
		out[i] = views.ReplayItemRow{
			DeadLetterID: it.DeadLetterID, URL: fmt.Sprintf("/deadletters/%d", it.DeadLetterID), MsgID: it.MsgID,
			OperationID: it.OperationID, Subject: it.Subject, PayloadSHA256: fmt.Sprintf("%x", it.PayloadSHA256),
			Headers: strings.Join(hs, "\n"), SkipReason: it.SkipReason,
		}
	}
	return out
}

// replayError turns store errors of a form action into a message for the
// page, or returns them for the error handler.
func replayMessage(err error) (string, bool) {
	var refused *dlq.RefusedError
	switch {
	case errors.As(err, &refused):
		return refused.Error(), true
	case errors.Is(err, dlq.ErrConflict), errors.Is(err, dlq.ErrInvalid), errors.Is(err, dlq.ErrForbidden):
		msg := err.Error()
		for _, sentinel := range []error{dlq.ErrConflict, dlq.ErrInvalid, dlq.ErrForbidden} {
			if i := strings.Index(msg, sentinel.Error()+": "); i >= 0 {
				msg = msg[i+len(sentinel.Error())+2:]
			}
		}
		return msg, true
	}
	return "", false
}

func (s *Server) tenantsWith(ctx context.Context, u authz.User, obj, act string) authz.Scope {
	return s.deps.Access.Scope(u, obj, act, s.knownTenants(ctx))
}

// selectedIDs reads the dead letters a form selects (the repeated "id"
// field of the list's checkboxes or the detail page); anything that is not
// an id is a 422.
func selectedIDs(form url.Values) ([]int64, error) {
	ids := make([]int64, 0, len(form["id"]))
	for _, v := range form["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, echo.NewHTTPError(http.StatusUnprocessableEntity, "The selection is not a list of dead letters.")
		}
		ids = append(ids, id)
	}
	return ids, nil
}
