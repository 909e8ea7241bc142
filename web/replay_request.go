package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// What a request page reads: every item up to maxRequestItems (an
// approver approves what the page lists: a request with more items is not
// approved from the page, and the replay rules let no request that needs
// an approval hold more), the payload forms of a request of at most
// maxEditableItems items, the diffs of its first
// maxShownEdits edited items (a request with more edits is not approved
// from the page either), and the first maxShownPayloads payloads, each up
// to shownPayloadBytes (every other item's payload is the link of its
// hash).
const (
	maxRequestItems   = replaypolicy.MaxApprovableItems
	maxEditableItems  = 20
	maxShownEdits     = 20
	maxShownPayloads  = 20
	shownPayloadBytes = 16 << 10
)

// requestView reads the replay request of the :id parameter as the user
// sees it, if they may read dead letters in its tenant; otherwise 404
// (audited).
func (s *Server) requestView(c echo.Context) (replay.View, error) {
	id, err := requestID(c)
	if err != nil {
		return replay.View{}, err
	}
	v, err := s.deps.Replays.View(c.Request().Context(), id, userOf(c).Actor,
		replay.ViewOptions{Items: maxRequestItems, Payloads: maxEditableItems, Edits: maxShownEdits, Shown: maxShownPayloads, ShownBytes: shownPayloadBytes})
	if err != nil {
		return replay.View{}, err
	}
	return v, s.inTenant(c, v.Request)
}

// replayRequest shows a request: the full intent, approvals, progress and
// what the viewer may do.
func (s *Server) replayRequest(c echo.Context) error {
	v, err := s.requestView(c)
	if err != nil {
		return err
	}
	return s.renderRequest(c, http.StatusOK, v, nil, changedSinceRead(c, v.Request))
}

// changedSinceRead is what a request page reloaded by its own poll says
// when the request changed since the page was read: the reload carries
// the version the approve or reject form held (read), and the page it
// brings holds the new one, which a click on Approve would approve (or
// Reject reject). Both refuse a version other than the one read
// (replaypolicy.JudgeRead), and a page that reloads by itself must not
// read again on the approver's behalf unannounced.
// (TestRev37PollReloadSaysTheRequestChanged)
func changedSinceRead(c echo.Context, req replay.Request) string {
	read, err := strconv.Atoi(c.QueryParam("read"))
	if err != nil || req.Status != replay.StatusPendingApproval || read == req.Version {
		return ""
	}
	return "The request changed while you were reading it: this page now shows it as it is. Read it again before you approve or reject it."
}

// replayProgress is the live progress fragment htmx polls. While the
// request runs it brings, out of band, the rows of its items that changed
// since the page's last poll and the count of those that came back
// (replayLive).
func (s *Server) replayProgress(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p, err := s.deps.Replays.Progress(ctx, req.ID)
	if err != nil {
		return err
	}
	var as []replay.Approval
	if req.Status == replay.StatusPendingApproval {
		if as, err = s.deps.Replays.Approvals(ctx, req.ID); err != nil {
			return err
		}
	}
	// The request moved on (approved, finished, cancelled), or, while it
	// waits, changed (an edit made a new intent, an approval was given or
	// voided), or, while it runs, one of its items was settled (by someone
	// else: a person's own settle reloads their page), whose form a swap
	// would take from the page with what was typed in it: what the page
	// shows and offers changed with it, so htmx reloads all of it (app.js
	// keeps a page someone types in, and says it changed).
	seen, stamp := c.QueryParam("seen"), waitingStamp(req, as)
	refresh := seen != "" && (seen != string(req.Status) || c.QueryParam("v") != stamp)
	was := parseLiveStamp(c.QueryParam("live"))
	if runs(req) && was.ok && p.NeedsReconciliation < was.reconcile {
		refresh = true
	}
	live := liveRead{stamp: was}
	if !refresh && runs(req) {
		if live, err = s.replayLive(c, req, p, was); err != nil {
			return err
		}
		p = live.progress // read with the rows, which the fragment shows beside them
	}
	if refresh {
		c.Response().Header().Set("HX-Refresh", "true")
	}
	return s.render(c, http.StatusOK, views.ReplayProgressLive(progressModel(req, p, as, live.stamp.String()), live.redraw))
}

// waitingStamp says which state of a request waiting for approval a page
// shows: its version (an edit, a new intent) and its approvals (as, given
// or voided), which change the page while its status does not; "" in any
// other status, whose progress the poll's fragment shows itself.
func waitingStamp(req replay.Request, as []replay.Approval) string {
	if req.Status != replay.StatusPendingApproval {
		return ""
	}
	var latest time.Time
	for _, a := range as {
		latest = later(latest, a.At)
		if a.VoidedAt != nil {
			latest = later(latest, *a.VoidedAt)
		}
	}
	return fmt.Sprintf("%d-%d-%d", req.Version, len(as), latest.UnixMicro())
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// requestFormError answers an action on a request that failed, a conflict
// (409: the request moved on, approved, finished or changed) or invalid
// input (422), with the request page as it is now: the message next to the
// form that failed and at the top (a sentence), and the request's own address in the
// address bar (Page.Canonical), never the action's. Any other error goes
// to the error handler.
func (s *Server) requestFormError(c echo.Context, err error, field string) error {
	code := quarantine.ErrorCode(err)
	if code != quarantine.ECONFLICT && code != quarantine.EINVALID {
		return err
	}
	v, verr := s.requestView(c)
	if verr != nil {
		return verr
	}
	msg := quarantine.ErrorMessage(err)
	errs := map[string]string{field: msg}
	if dl := c.Param("dl"); field == "payload" {
		errs["payload-"+dl] = sentence(msg)
	}
	if field == "approve" && errors.Is(err, replay.ErrConfirmation) {
		// Said at the phrase (and at the top), not a third time under
		// the form.
		errs = map[string]string{"confirmation": msg}
	}
	// The rules' reasons are clauses; the top of the page, like the field,
	// reads a sentence.
	return s.renderRequest(c, errorStatus(err), v, errs, sentence(classRead(msg)))
}

// renderRequest writes the request page of v with status, the form errors
// errs and, when set, an error flash.
func (s *Server) renderRequest(c echo.Context, status int, v replay.View, errs map[string]string, flash string) error {
	stoppable, err := s.deps.Replays.CanStop(c.Request().Context(), v.Request.ID)
	if err != nil {
		return err
	}
	m := s.requestModel(c, v, errs, stoppable)
	if m.Again, err = s.requestAgainForm(c, v.Request); err != nil {
		return err
	}
	m.Again.Error = errs["again"]
	p := s.page(c, fmt.Sprintf("Replay request %d", m.ID), "replays")
	p.Canonical = fmt.Sprintf("/replay/requests/%d", m.ID)
	if flash != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashError, Text: flash})
	}
	return s.render(c, status, views.ReplayRequest(p, m))
}

// progressModel is the progress block of req: its items by outcome, a
// poll while it may still change, and the status the page shows and,
// while it waits for approval, the state of it (waitingStamp of req and
// its approvals as), and, while it runs, what the page shows of its items
// (live, liveStamp.String), all in the poll's URL.
func progressModel(req replay.Request, p replay.Progress, as []replay.Approval, live string) views.ReplayProgressModel {
	n := replay.CountItems(req, p)
	m := views.ReplayProgressModel{
		URL: fmt.Sprintf("/replay/requests/%d/progress", req.ID) +
			pairsQuery("seen", string(req.Status), "v", waitingStamp(req, as), "live", live),
		Poll:   req.Status.Open() && req.Status != replay.StatusDraft,
		Every:  "2s",
		Status: string(req.Status), Summary: n.String(),
		Total: n.Total, Pending: p.Pending, Deferred: p.Deferred, Unknown: p.Unknown, Replayed: n.Replayed,
		Skipped: n.Skipped, Suppressed: n.Suppressed, Blocked: n.Blocked,
		NeedsReconciliation: n.NeedsReconciliation, Cancelled: n.Cancelled, NotApplied: n.NotApplied, Applied: n.Applied, NotStored: p.NotStored, NotStoredWhy: p.NotStoredWhy,
		Waiting: n.Unapproved, NotRun: n.NotRun,
	}
	if req.Status == replay.StatusPendingApproval {
		m.Every = "5s" // an approval elsewhere changes the page; nothing runs
	}
	return m
}

// requestModel is the request page of v for the user: the buttons the
// replay rules (v) and their roles in the tenant allow; stoppable says
// whether a stop would end the request (replay.Service.CanStop).
func (s *Server) requestModel(c echo.Context, v replay.View, errs map[string]string, stoppable bool) views.ReplayRequestModel {
	req, d, u := v.Request, v.Decision, userOf(c)
	download := s.mayDownload(u, req.Tenant)
	table := s.deps.Replays.Policy()
	m := views.ReplayRequestModel{
		ID: req.ID, Tenant: req.Tenant, Class: string(req.Class), Status: string(req.Status), StatusReason: req.StatusReason,
		Requester: req.Requester.Display(), Reason: req.Reason, PolicyVersion: req.PolicyVersion,
		PolicyCurrent: !table.Stale(req.PolicyVersion), Rate: rateText(req.Rate), Intent: req.IntentHex(), Version: req.Version,
		Decision: d.Reason, Needs: describe(table, req.Class, v.HeldTo), Created: req.CreatedAt, Items: withCameBack(withFailures(s.itemRows(c, req, v.Items, v.Now), v.Failures), v.CameBack.Items),
		Approvals:          views.ApprovalsView{Count: v.Count.String(), Needed: v.Count.Needed > 0},
		ReconciliationNote: req.ReconciliationNote,
		Edited:             req.PayloadEdited, Edits: editViews(req.ID, v.Edits, download), Forms: editForms(req.ID, req.Status == replay.StatusDraft, v.Items, v.Payloads, v.Undo, errs, typedEdit(c), download),
		MoreItems: max(0, req.ItemCount+req.SkippedCount-len(v.Items)), Errors: errs,
		CameBack: v.CameBack.Replayed, CameBackOf: cameBackOf(req),
		ApproveURL: fmt.Sprintf("/replay/requests/%d/approve", req.ID),
		RejectURL:  fmt.Sprintf("/replay/requests/%d/reject", req.ID),
		CancelURL:  fmt.Sprintf("/replay/requests/%d/cancel", req.ID),
	}
	if req.SubmittedAt != nil {
		m.Submitted = *req.SubmittedAt
	}
	if s.deps.Access.Can(u, req.Tenant, authz.ObjAudit, authz.ActRead) {
		m.AuditURL = fmt.Sprintf("/audit?request=%d", req.ID) // its own entries and its items'

	}
	if req.ClosedBy.Identified() {
		m.ClosedBy = req.ClosedBy.Display()
	}
	if n := replay.CountItems(req, v.Progress); req.Status == replay.StatusDraft && n.Total > 0 && n.Blocked+n.Skipped == n.Total {
		// A draft the rules left every item of out: why, as its void would.
		m.Decision = voidReason(n, v.Items, m.Decision)
	}
	if req.Status == replay.StatusVoid {
		n := replay.CountItems(req, v.Progress)
		m.StatusReason = voidReason(n, v.Items, req.StatusReason)
		// No approval applies to it any more, whatever its count was: the
		// page says void, not "0 of 1".
		m.Approvals.Void = true
		if k, ok := table.Knobs(req.Class); ok {
			m.Approvals.Unreplayable, m.Approvals.ClassNeeds = unreplayable(n), k.Approvals
		}
	}
	if req.Status == replay.StatusPendingApproval {
		// The reason stored when it was submitted is out of date once anyone
		// approved; the rules' verdict as things stand (Decision) says it.
		m.StatusReason = ""
	}
	m.Payloads = shownPayloads(v, download)
	if !req.Status.Editable() || m.Decision == m.StatusReason {
		// The policy's verdict matters while a request waits (and only once
		// on the page); afterwards the status, its reason and the progress
		// say what happened.
		m.Decision = ""
	}
	for i, a := range v.Approvals {
		// Why it does not count, by the rule that made the count (CountOf),
		// or because no approval of a void request applies any more.
		var why string
		if i < len(v.Count.Ignored) {
			why = v.Count.Ignored[i]
		}
		if why == "" && req.Status == replay.StatusVoid {
			why = "the request is void"
		}
		m.Approvals.Rows = append(m.Approvals.Rows, views.ReplayApprovalRow{Approver: a.Approver.Display(), At: a.At, Ignored: why})
	}
	obj := authz.ReplayObject(string(req.Class))
	pending := req.Status == replay.StatusPendingApproval
	// Requesters never see an approve or reject button on their own request.
	m.CanApprove = pending && v.Reviewer && d.ActorCanApprove && s.deps.Access.Can(u, req.Tenant, obj, authz.ActApprove)
	m.CanReject = pending && v.Reviewer && s.deps.Access.Can(u, req.Tenant, obj, authz.ActReject)
	m.CanCancel = v.Canceller && s.deps.Access.Can(u, req.Tenant, obj, authz.ActCancel)
	if why := unshown(v); m.CanApprove && why != "" {
		m.CanApprove = false
		m.ApproveRefused = why
	}
	if m.CanApprove {
		m.Confirmation = d.Confirmation
		m.ConfirmationTyped, _ = c.Get(typedApprovalKey).(string)
	}
	// The stop is offered where it would end the request (Stop's own
	// test: approved or running, or done with problems whose items wait
	// for a person, who could still republish them: by what the request
	// recorded, not the policy now, as Stop decides).
	if stoppable && s.deps.Access.Can(u, req.Tenant, obj, authz.ActStop) {
		m.Stop = &views.StopForm{URL: fmt.Sprintf("/replay/requests/%d/stop", req.ID), Reason: typedStop(c).Reason, Error: errs["stop"]}
		m.MayRepublish = req.MayEverRepublish()
		m.RepublishNow = s.deps.Replays.MayRepublish(req).Outcome == replaypolicy.Go
	}
	m.Settler = settlerOnce(m.Items)
	var live string
	if runs(req) {
		live = liveStampOf(v.Progress, m.Items).String()
	}
	m.Progress = progressModel(req, v.Progress, v.Approvals, live)
	typed := typedReconcile(c)
	for i := range m.Items {
		if it := &m.Items[i]; download && it.SkipReason == "" && !it.Removed { // nothing of a removed one is left (410)
			it.PayloadURL = itemPayloadURL(req.ID, it.DeadLetterID)
		}
		if f := m.Items[i].Reconcile; f != nil {
			dl := strconv.FormatInt(m.Items[i].DeadLetterID, 10)
			f.Error = errs["reconcile-"+dl]
			if typed.Item == dl {
				f.Note = typed.Note
			}
		}
	}
	return m
}

// cameBackOf is how many of req's first items its page checked for
// returns, when it holds more (0: all of them).
func cameBackOf(req replay.Request) int {
	if req.ItemCount+req.SkippedCount > replay.CameBackItemsMax {
		return replay.CameBackItemsMax
	}
	return 0
}

// voidReason says why a void request replays nothing, by its items' own
// outcomes (n): each one the rules left out, blocked (the rule's words of
// the first blocked item of items) or skipped. stored is the reason kept
// when it was voided, for a request whose items say nothing.
func voidReason(n replay.ItemCounts, items []replay.Item, stored string) string {
	var rule string
	for _, it := range items {
		if it.Verdict == replay.VerdictBlock && it.SkipReason != "" {
			rule = it.SkipReason
			break
		}
	}
	switch {
	case n.Blocked > 0 && n.Blocked == n.Total && rule != "":
		if n.Total == 1 {
			return "Nothing to replay: its item is blocked: " + rule
		}
		return fmt.Sprintf("Nothing to replay: all %d items are blocked: %s", n.Total, rule)
	case n.Blocked > 0:
		return fmt.Sprintf("Nothing to replay: %d blocked, %d skipped; each item's reason is beside it below.", n.Blocked, n.Skipped)
	case n.Skipped > 0 && n.Skipped == n.Total:
		return "Nothing to replay: every item was skipped; each one's reason is beside it below."
	}
	return stored
}

// unreplayable says whether nothing of a request's items n could be
// replayed: every one was blocked or skipped. A request void for another
// reason (its draft expired, the policy changed) held items that could.
func unreplayable(n replay.ItemCounts) bool {
	return n.Blocked+n.Skipped == n.Total
}

// unshown says why a request the page cannot show all of is not approved
// from it ("" when the page shows it all): an approver approves what they
// read, every item and every edit in full.
func unshown(v replay.View) string {
	if all := v.Request.ItemCount + v.Request.SkippedCount; len(v.Items) < all {
		return fmt.Sprintf("This request holds %d items and this page lists the first %d: nobody can approve what they could not read. "+
			"Ask the requester to cancel it and request smaller sets.", all, len(v.Items))
	}
	if v.Edited > len(v.Edits) {
		return fmt.Sprintf("%d payloads of this request were edited and this page shows the first %d: nobody can approve what they could not read. "+
			"Ask the requester to cancel it and request smaller sets.", v.Edited, len(v.Edits))
	}
	for _, e := range v.Edits {
		if e.OriginalSize > views.MaxDiffBytes || e.EditedSize > views.MaxDiffBytes {
			// An edit not made in the browser's form (which edits payloads
			// up to replay.MaxEditablePayload): its diff is not shown.
			return fmt.Sprintf("An edit of this request changes a payload of %s into one of %s, larger than this page compares (%s): "+
				"nobody can approve a change they could not read. Ask the requester to undo the edit, or to cancel the request and fix the message at its producer.",
				views.Bytes(int64(e.OriginalSize)), views.Bytes(int64(e.EditedSize)), views.Bytes(views.MaxDiffBytes))
		}
	}
	return ""
}

// shownPayloads are the payloads reviewers read on the page, in item
// order, as the dead letter page shows a payload: with a download link
// for one cut short when the viewer may download payloads (download).
func shownPayloads(v replay.View, download bool) []views.ItemPayloadView {
	var out []views.ItemPayloadView
	for _, it := range v.Items {
		p, ok := v.Shown[it.DeadLetterID]
		if !ok {
			continue
		}
		if p.Removed {
			out = append(out, views.ItemPayloadView{MsgID: it.MsgID, Edited: it.Edited, Removed: true})
			continue
		}
		pv := views.NewPayloadView(p.Data, int64(p.Size), false)
		if download {
			pv.DownloadURL = itemPayloadURL(v.Request.ID, it.DeadLetterID)
		}
		out = append(out, views.ItemPayloadView{MsgID: it.MsgID, Edited: it.Edited, Payload: pv})
	}
	return out
}
