package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// replayItemPayload downloads the payload one item of a request will send
// (the edited one, if the requester edited it), for reviewers who compare
// it with the original (permission deadletter:download in the request's
// tenant). Like a dead letter's payload, it is an attachment browsers never
// sniff or render, and the download is audited.
func (s *Server) replayItemPayload(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if !s.mayDownload(userOf(c), req.Tenant) {
		return s.deny(c, req.Tenant, authz.ObjDeadLetter+":"+authz.ActDownload, fmt.Sprintf("replay request %d", req.ID))
	}
	dl, ok := pathID(c, "dl")
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
	}
	ctx := c.Request().Context()
	p, err := s.deps.Replays.ItemPayload(ctx, req.ID, dl)
	if err != nil {
		return err
	}
	if p.Removed {
		// Nothing is downloaded, so nothing is audited as downloaded.
		return echo.NewHTTPError(http.StatusGone, views.RemovedPayloadText)
	}
	e := s.event(c, "deadletter.download", audit.OutcomeOK)
	e.Tenant, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID = req.Tenant, deadLetterAuditType, c.Param("dl"), p.MsgID, p.OperationID
	e.After = map[string]any{"request": req.ID, "as_sent": true}
	if _, err := audit.AppendFunc(ctx, s.deps.Pool, e); err != nil {
		return fmt.Errorf("audit payload download: %w", err)
	}
	return sendAttachment(c, fmt.Sprintf("replay-%d-deadletter-%d.bin", req.ID, dl), p.Data)
}

// itemPayloadURL is the download of the payload request requestID sends
// for dead letter deadLetterID (replayItemPayload).
func itemPayloadURL(requestID, deadLetterID int64) string {
	return fmt.Sprintf("/replay/requests/%d/items/%d/payload", requestID, deadLetterID)
}

// startsItemPayload says what a download of the payload a replay request
// sends for one item starts, for the button of its refusal when another
// site started it (Route.Starts).
func startsItemPayload(c echo.Context) string {
	return "Download the payload replay request " + authz.ClientText(c.Param("id"), 20) +
		" sends for dead letter " + authz.ClientText(c.Param("dl"), 20)
}
