package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// loadRequest returns the replay request of the :id parameter if the user
// may read dead letters in its tenant; otherwise 404 (audited).
func (s *Server) loadRequest(c echo.Context) (replay.Request, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return replay.Request{}, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such replay request.")
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

func (s *Server) itemRows(items []replay.Item) []views.ReplayItemRow {
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
			return nil, quarantine.Errorf(quarantine.EINVALID, "The selection is not a list of dead letters.")
		}
		ids = append(ids, id)
	}
	return ids, nil
}
