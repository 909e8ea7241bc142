package web

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxEditableItems bounds the payload forms on a request page.
const maxEditableItems = 20

// replayRequest shows a request: the full intent, approvals, progress and
// what the viewer may do.
func (s *Server) replayRequest(c echo.Context) error {
	m, err := s.requestModel(c, nil)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.ReplayRequest(s.page(c, fmt.Sprintf("Replay request %d", m.ID), "approvals"), m))
}

// replayProgress is the live progress fragment htmx polls.
func (s *Server) replayProgress(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	pm, err := s.progressModel(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.ReplayProgress(pm))
}

func (s *Server) progressModel(ctx context.Context, req replay.Request) (views.ReplayProgressModel, error) {
	p, err := s.deps.Replays.Progress(ctx, req.ID)
	if err != nil {
		return views.ReplayProgressModel{}, err
	}
	return views.ReplayProgressModel{
		URL:   fmt.Sprintf("/replay/requests/%d/progress", req.ID),
		Poll:  req.Status == replay.StatusApproved || req.Status == replay.StatusRunning,
		Total: p.Total(), Pending: p.Pending, Published: p.Published, Duplicate: p.Duplicate, Skipped: p.Skipped,
		Failed: p.Failed, Unknown: p.Unknown, Blocked: p.Blocked, Cancelled: p.Cancelled,
	}, nil
}

func (s *Server) requestModel(c echo.Context, errs map[string]string) (views.ReplayRequestModel, error) {
	ctx := c.Request().Context()
	req, err := s.loadRequest(c)
	if err != nil {
		return views.ReplayRequestModel{}, err
	}
	u, me := userOf(c), userOf(c).Actor
	table := s.deps.Replays.Policy()
	items, err := s.deps.Replays.Items(ctx, req.ID, 200)
	if err != nil {
		return views.ReplayRequestModel{}, err
	}
	approvals, err := s.deps.Replays.Approvals(ctx, req.ID)
	if err != nil {
		return views.ReplayRequestModel{}, err
	}
	d, err := s.deps.Replays.Decision(ctx, req.ID, me)
	if err != nil {
		return views.ReplayRequestModel{}, err
	}
	progress, err := s.progressModel(ctx, req)
	if err != nil {
		return views.ReplayRequestModel{}, err
	}
	m := views.ReplayRequestModel{
		ID: req.ID, Tenant: req.Tenant, Class: string(req.Class), Status: string(req.Status), StatusReason: req.StatusReason,
		Requester: req.Requester.Email, Reason: req.Reason, PolicyVersion: req.PolicyVersion,
		PolicyCurrent: table != nil && table.Version() == req.PolicyVersion, Rate: rateText(req.Rate), Intent: req.IntentHex(),
		Decision: d.Reason, Needs: describe(table, req.Class), Created: req.CreatedAt, Items: s.itemRows(items),
		MoreItems: req.ItemCount + req.SkippedCount - len(items), Progress: progress, Errors: errs,
		ApproveURL: fmt.Sprintf("/replay/requests/%d/approve", req.ID),
		RejectURL:  fmt.Sprintf("/replay/requests/%d/reject", req.ID),
		CancelURL:  fmt.Sprintf("/replay/requests/%d/cancel", req.ID),
	}
	if req.Status != replay.StatusDraft && req.Status != replay.StatusPendingApproval {
		// The policy's verdict matters while a request waits; afterwards the
		// status, its reason and the progress say what happened.
		m.Decision = ""
	}
	if m.MoreItems < 0 {
		m.MoreItems = 0
	}
	for _, a := range approvals {
		m.Approvals = append(m.Approvals, views.ReplayApprovalRow{
			Approver: a.Approver.Email, At: a.At, Counts: hex.EncodeToString(a.IntentHash) == req.IntentHex(),
		})
	}
	obj := authz.ReplayObject(string(req.Class))
	pending := req.Status == replay.StatusPendingApproval
	// Requesters never see an approve button on their own request.
	m.CanApprove = pending && d.ActorCanApprove && !req.Requester.SameAs(me) && s.deps.Access.Can(u, req.Tenant, obj, authz.ActApprove)
	m.CanReject = pending && !req.Requester.SameAs(me) && s.deps.Access.Can(u, req.Tenant, obj, authz.ActReject)
	m.CanCancel = req.Status.Open() && req.Requester.SameAs(me) && s.deps.Access.Can(u, req.Tenant, obj, authz.ActCancel)
	if m.CanApprove {
		m.Confirmation = d.Confirmation
	}
	if (req.Status == replay.StatusDraft || req.Status == replay.StatusPendingApproval) && req.Requester.SameAs(me) &&
		req.Class != replaypolicy.SameOperation && req.ItemCount <= maxEditableItems {
		for _, it := range items {
			if it.SkipReason != "" {
				continue
			}
			p, err := s.deps.Replays.ItemPayload(ctx, req.ID, it.DeadLetterID)
			if err != nil {
				return m, err
			}
			if !utf8.Valid(p) {
				continue // binary payloads are not edited in a text box
			}
			m.Edits = append(m.Edits, views.PayloadEdit{DeadLetterID: it.DeadLetterID, MsgID: it.MsgID, Payload: string(p),
				URL: fmt.Sprintf("/replay/requests/%d/items/%d/payload", req.ID, it.DeadLetterID)})
		}
	}
	return m, nil
}
