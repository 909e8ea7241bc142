package web

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// requestID reads the :id parameter of a replay request route.
func requestID(c echo.Context) (int64, error) {
	id, ok := pathID(c, "id")
	if !ok {
		return 0, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such replay request.")
	}
	return id, nil
}

// inTenant answers not found (audited) unless the user may read dead
// letters in the tenant of the replay request they asked for, and, for a
// request never submitted (a draft, or one voided or cancelled before it
// was submitted), made it: someone else's does not exist for them
// (replay.Request.HiddenFrom, which the request locator's hides asks too).
func (s *Server) inTenant(c echo.Context, req replay.Request) error {
	u := userOf(c)
	if !s.deps.Access.Can(u, req.Tenant, authz.ObjDeadLetter, authz.ActRead) || req.HiddenFrom(u.Actor) {
		return s.notFoundDenied(c, req.Tenant, "replay_request", c.Param("id"))
	}
	return nil
}

// loadRequest returns the replay request of the :id parameter if the user
// may read dead letters in its tenant; otherwise 404 (audited).
func (s *Server) loadRequest(c echo.Context) (replay.Request, error) {
	id, err := requestID(c)
	if err != nil {
		return replay.Request{}, err
	}
	req, err := s.deps.Replays.Request(c.Request().Context(), id)
	if err != nil {
		return req, err
	}
	return req, s.inTenant(c, req)
}

// mayOnClass answers 403 (audited) unless the user holds act on replays of
// req's class in its tenant.
func (s *Server) mayOnClass(c echo.Context, req replay.Request, act string) error {
	obj := authz.ReplayObject(string(req.Class))
	if s.deps.Access.Can(userOf(c), req.Tenant, obj, act) {
		return nil
	}
	return s.deny(c, req.Tenant, obj+":"+act, fmt.Sprintf("replay request %d", req.ID))
}

// describe is what the policy in force (t) asks of a request of class
// whose items were classed by union too (replaypolicy.Table.DescribeRequest).
func describe(t *replaypolicy.Table, class replaypolicy.Class, union []replaypolicy.Class) string {
	if t == nil {
		return ""
	}
	return t.DescribeRequest(class, union)
}

func rateText(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// itemRows are the items of req as the pages show them, each with the
// rules' verdict (the one stored when it was last judged, or, for an item
// now judges, a request not yet approved, the verdict as things stand) and
// what became of it, and the form to settle it where the viewer may.
func (s *Server) itemRows(c echo.Context, req replay.Request, items []replay.Item, now map[int64]replaypolicy.Verdict) []views.ReplayItemRow {
	out := make([]views.ReplayItemRow, len(items))
	for i, it := range items {
		out[i] = s.itemRow(c, req, it, now[it.DeadLetterID])
	}
	return out
}

// itemRow is one item of req as the pages show it (v: its verdict as
// things stand, if judged now).
func (s *Server) itemRow(c echo.Context, req replay.Request, it replay.Item, v replaypolicy.Verdict) views.ReplayItemRow {
	row := views.ReplayItemRow{
		DeadLetterID: it.DeadLetterID, URL: fmt.Sprintf("/deadletters/%d", it.DeadLetterID), MsgID: it.MsgID,
		OperationID: it.OperationID, Subject: it.Subject, PayloadSHA256: fmt.Sprintf("%x", it.PayloadSHA256),
		MsgIDCut: it.Cut.MsgID, OperationIDCut: it.Cut.OperationID, SubjectCut: it.Cut.Subject,
		SkipReason: classRead(it.SkipReason), Verdict: it.Verdict, Check: it.Check, Edited: it.Edited,
		Outcome: replay.ShownOutcome(it.Outcome, it.OutcomeReason), OutcomeReason: it.OutcomeReason,
	}
	if it.Until != nil {
		row.Until = *it.Until
	}
	if v.Check != "" && it.SkipReason == "" && v.Outcome != replaypolicy.Go {
		row.Verdict, row.Check, row.Why = replay.VerdictOf(v), v.Check, classRead(v.Reason)
	}
	if it.Outcome == "" && it.SkipReason == "" && !req.Status.Open() {
		row.NotRun = notRun(req.Status)
	}
	if it.Outcome == replay.JobNeedsReconciliation && s.deps.Access.Can(userOf(c), req.Tenant, authz.ReplayObject(string(req.Class)), authz.ActReconcile) &&
		s.viewerMayReconcile(c, req).Outcome == replaypolicy.Go {
		dl := strconv.FormatInt(it.DeadLetterID, 10)
		republish := s.deps.Replays.MayRepublish(req)
		row.Reconcile = &views.ReconcileForm{DeadLetterID: it.DeadLetterID, Settled: it.Settled,
			URL:          fmt.Sprintf("/replay/requests/%d/items/%s/reconcile", req.ID, dl),
			CanRepublish: republish.Outcome == replaypolicy.Go}
		if !row.Reconcile.CanRepublish {
			row.Reconcile.NoRepublish = sentence(classRead(republish.Reason))
		}
	} else if it.Outcome == replay.JobNeedsReconciliation {
		own := s.viewerMayReconcile(c, req).Outcome != replaypolicy.Go
		row.Settler = &views.SettleWait{Tenant: req.Tenant, Own: own}
	}
	return row
}

// ctxViewer holds viewerOf's answer for the rest of the page.
const ctxViewer = "quarantine.viewer"

// viewer is the signed-in user as separation of duties compares them
// besides their session: their identity as the directory has it now (now;
// zero when never seen) and every address the console has seen it with
// (known, replay.Service.KnownAs).
type viewer struct {
	now   quarantine.Actor
	known []quarantine.Actor
}

// viewerOf is the signed-in user's viewer, read once a page: the pages
// offer what the actions allow, judged alike (replay.Request.SeenBy). A
// failed read is logged and leaves the session alone to judge by; the
// action reads them again, and refuses.
func (s *Server) viewerOf(c echo.Context) viewer {
	if v, ok := c.Get(ctxViewer).(viewer); ok {
		return v
	}
	ctx, u := c.Request().Context(), userOf(c).Actor
	var v viewer
	var err error
	if v.now, err = s.deps.Replays.IdentityNow(ctx, u); err == nil {
		v.known, err = s.deps.Replays.KnownAs(ctx, u)
	}
	if err != nil {
		s.deps.Log.Warn("read the viewer as the directory has them", "issuer", u.Issuer, "subject", u.Subject, "err", err)
	}
	c.Set(ctxViewer, v)
	return v
}

// viewerMayApprove is whether the signed-in user may approve req as
// Approve judges it (replay.Request.MayApprove, with their identity now
// and every address it was seen with).
func (s *Server) viewerMayApprove(c echo.Context, req replay.Request) replaypolicy.Verdict {
	v := s.viewerOf(c)
	return req.SeenBy(v.known).MayApprove(userOf(c).Actor, v.now)
}

// viewerMayReconcile is whether the signed-in user may settle an item of
// req as Reconcile judges it (replay.Request.MayReconcile, with their
// identity now and every address it was seen with).
func (s *Server) viewerMayReconcile(c echo.Context, req replay.Request) replaypolicy.Verdict {
	v := s.viewerOf(c)
	return req.SeenBy(v.known).MayReconcile(userOf(c).Actor, v.now)
}

// withFailures adds to rows why each one's dead letter failed (by dead
// letter), for the people who judge the replay.
func withFailures(rows []views.ReplayItemRow, fs map[int64]replay.Failure) []views.ReplayItemRow {
	for i := range rows {
		f := fs[rows[i].DeadLetterID]
		rows[i].ErrorClass, rows[i].Error, rows[i].ErrorCut, rows[i].Removed = f.ErrorClass, f.Error, f.Cut, f.Removed
	}
	return rows
}

// withCameBack adds to rows the dead letter each one's replay came back
// as (by the item's dead letter), for the people who read what the replay
// did: the broker stored it, and the consumer failed on it again.
func withCameBack(rows []views.ReplayItemRow, back map[int64]replay.CameBack) []views.ReplayItemRow {
	for i := range rows {
		if b, ok := back[rows[i].DeadLetterID]; ok {
			rows[i].CameBack = &views.CameBackView{ID: b.ID, URL: deadLetterURL(b.ID), Status: string(b.Status), ErrorClass: b.ErrorClass,
				More: b.More, ItemURL: rows[i].URL}
		}
	}
	return rows
}

// notRun says why the items of a request that ended in status before
// they ran were never sent.
func notRun(status replay.Status) string {
	switch status {
	case replay.StatusRejected:
		return "the request was rejected"
	case replay.StatusCancelled:
		return "the request was cancelled before it ran"
	case replay.StatusVoid:
		return "the request is void: nothing of it ran"
	}
	return "the request ended before it ran"
}

// editViews are the edited payloads of request requestID as reviewers
// read them; each offers both payloads for download (the original from
// the dead letter, the edited one from the request) when the viewer may
// download payloads (download).
func editViews(requestID int64, edits []replay.Edit, download bool) []views.EditView {
	return editViewsBy(requestID, edits, download, func(e replay.Edit) views.PayloadDiff {
		return views.NewPayloadDiffOfStarts(e.Original, e.Edited, e.OriginalSize, e.EditedSize)
	})
}

// editViewsBy is editViews with each edit's diff as diff compares it.
func editViewsBy(requestID int64, edits []replay.Edit, download bool, diff func(replay.Edit) views.PayloadDiff) []views.EditView {
	out := make([]views.EditView, len(edits))
	for i, e := range edits {
		out[i] = views.EditView{DeadLetterID: e.DeadLetterID, MsgID: e.MsgID, Reason: e.Reason,
			OriginalSHA: hex.EncodeToString(e.OriginalSHA256), EditedSHA: hex.EncodeToString(e.EditedSHA256),
			Diff: diff(e)}
		if download {
			out[i].OriginalURL = fmt.Sprintf("/deadletters/%d/payload", e.DeadLetterID)
			out[i].EditedURL = itemPayloadURL(requestID, e.DeadLetterID)
		}
	}
	return out
}

// editForms are the payload forms of items whose payloads (by dead
// letter) the requester may still change; binary payloads are not edited
// in a text box, and one over replay.MaxEditablePayload not in the browser:
// its form says so and links its download (which asks for the download
// right). An edited item's form says what undoing the edit would do
// (undo, by dead letter), in a draft (draft) or not; that of an item left
// out that holds an edit all the same (LivePayload.UndoOnly) shows the
// edit, why the item is left out, and offers only the undo. typed is the
// edit sent that the page comes back for: its item's form shows the
// payload and reason as typed, not the payload stored. The download is
// linked only for a requester who may download payloads (download).
func editForms(requestID int64, draft bool, items []replay.Item, payloads map[int64]replay.LivePayload, undo map[int64]replay.UndoPreview,
	errs map[string]string, typed payloadForm, download bool) []views.PayloadEdit {
	var out []views.PayloadEdit
	for _, it := range items {
		p, ok := payloads[it.DeadLetterID]
		if !ok || (!p.UndoOnly && p.Editable() && !utf8.Valid(p.Data)) {
			continue
		}
		url := itemPayloadURL(requestID, it.DeadLetterID)
		f := views.PayloadEdit{DeadLetterID: it.DeadLetterID, MsgID: it.MsgID, Payload: string(p.Data), URL: url,
			Error: errs[fmt.Sprintf("payload-%d", it.DeadLetterID)], Edited: it.Edited, Draft: draft}
		f.LineBreaks, f.MixedBreaks = views.LineBreaksOf(p.Data)
		if p.UndoOnly {
			f.UndoOnly, f.LeftOut = true, sentence(classRead(it.SkipReason))
		}
		if p, ok := undo[it.DeadLetterID]; ok && it.Edited {
			f.UndoApproves, f.UndoStale = p.Approves, p.Stale
			switch {
			case p.Stale && strings.Contains(f.Error, p.Refused):
				f.UndoRefused = "the message above says why." // an undo refused for it just now: said once
			case p.Refused != "":
				f.UndoRefused = sentence(classRead(p.Refused))
			}
			if p.LeavesOut != "" {
				f.UndoLeavesOut = sentence(classRead(p.LeavesOut))
			}
		}
		switch {
		case f.UndoOnly && (!p.Editable() || !utf8.Valid(p.Data)):
			f.Payload = "" // the undo needs no copy of the edit: the diffs show it
		case !p.Editable():
			f.TooLarge, f.Size, f.Max = true, int64(p.Size), replay.MaxEditablePayload
			if download {
				f.DownloadURL = url
			}
		}
		if typed.Item == strconv.FormatInt(it.DeadLetterID, 10) && !f.TooLarge {
			f.Reason = typed.Reason
			if !f.UndoOnly {
				f.Payload = typed.Payload
			}
		}
		out = append(out, f)
	}
	return out
}

func (s *Server) tenantsWith(ctx context.Context, u authz.User, obj, act string) authz.Scope {
	return s.deps.Access.Scope(u, obj, act, s.knownTenants(ctx))
}

// replayScope is where u may do act on the replays of some class.
func (s *Server) replayScope(ctx context.Context, u authz.User, act string) authz.Scope {
	set := map[string]bool{}
	for _, obj := range (Permission{Object: replayObjects, Action: act}).Objects() {
		sc := s.tenantsWith(ctx, u, obj, act)
		if sc.All {
			return sc
		}
		for _, t := range sc.Tenants {
			set[t] = true
		}
	}
	return authz.Scope{Tenants: slices.Sorted(maps.Keys(set))}
}

// classScopes are where u may do act on the replays of each class, the
// classes u may do it on nowhere left out, in the tenants whose dead
// letters u reads: a request is found by the request locator, which
// answers one of a tenant whose dead letters u may not read as not found
// (its page, and every action on it), so a request there is none of u's to
// act on, nor are the payloads its edits show to be listed to u.
func (s *Server) classScopes(ctx context.Context, u authz.User, act string) []replay.ClassScope {
	known := s.knownTenants(ctx)
	reads := s.deps.Access.Scope(u, authz.ObjDeadLetter, authz.ActRead, known)
	var out []replay.ClassScope
	for _, cl := range replaypolicy.KnownClasses() {
		sc := s.deps.Access.Scope(u, authz.ReplayObject(string(cl)), act, known).Within(reads)
		if !sc.Empty() {
			out = append(out, replay.ClassScope{Class: cl, Tenants: sc.Tenants, All: sc.All})
		}
	}
	return out
}

// selectionForm is the dead letters a form selects: the repeated "id"
// field of the list's checkboxes or of the detail page.
type selectionForm struct {
	IDs []string
}

func readSelection(form url.Values) selectionForm { return selectionForm{IDs: form["id"]} }

// Validate returns the ids, each once in the order first named
// (dlq.UniqueIDs), or an invalid error when one is not an id (empty is for
// the action to judge).
func (f selectionForm) Validate() ([]int64, error) {
	ids := make([]int64, 0, len(f.IDs))
	for _, v := range f.IDs {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, quarantine.Errorf(quarantine.EINVALID, "The selection is not a list of dead letters.")
		}
		ids = append(ids, id)
	}
	return dlq.UniqueIDs(ids), nil
}

// classRead is a reason of the replay rules as a page shows it: each
// class key in it ("same_operation: replay request 1 already holds …",
// "… replays at least as same_operation, stricter than dedupe") reads as
// the class's chip reads ("same operation"). A key is a whole word: not
// part of a longer one ("not_same_operation", "x.same_operation"), and not
// inside double quotes, where a reason quotes what the producer chose (a
// message id, a phrase to type) exactly. Only the page changes: the rules'
// own text, which the audit log and the stored verdicts keep, does not.
func classRead(reason string) string {
	if !strings.Contains(reason, "_") {
		return reason // only keys with "_" read differently
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(reason); {
		c := reason[i]
		switch {
		case c == '\\' && quoted && i+1 < len(reason):
			b.WriteString(reason[i : i+2])
			i += 2
			continue
		case c == '"':
			quoted = !quoted
		case !quoted && (i == 0 || !keyByte(reason[i-1])):
			if k, ok := classKeyAt(reason[i:]); ok {
				b.WriteString(views.Label(k))
				i += len(k)
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// classKeyAt is the class key s starts with as a whole word, if any.
func classKeyAt(s string) (string, bool) {
	n := 0
	for n < len(s) && wordByte(s[n]) {
		n++
	}
	if n+1 < len(s) && !wordByte(s[n]) && keyByte(s[n]) && wordByte(s[n+1]) {
		return "", false // part of a dotted or dashed name (an item type, a subject)
	}
	if k := s[:n]; strings.Contains(k, "_") && replaypolicy.Class(k).Valid() {
		return k, true
	}
	return "", false
}

// wordByte tells whether c can be part of a word (a class key is one).
func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// keyByte tells whether c can be part of a word or of a longer name
// around one (an item type "email.same_operation", a subject).
func keyByte(c byte) bool { return wordByte(c) || c == '.' || c == '-' || c == '/' }
