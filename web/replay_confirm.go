package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// maxConfirmItems bounds the items a confirm page reads per request;
// maxReasonCarried the reason carried from the list to it.
const (
	maxConfirmItems  = 1000
	maxReasonCarried = 2000
)

// submitForm is the confirm page's form: the reason, and per request of the
// selection a rate and the typed confirmation.
type submitForm struct {
	Reason        string
	Note          string // the reconciliation note, where an item needs one
	Rates         map[int64]string
	Confirmations map[int64]string
}

func readSubmitForm(c echo.Context, sel replay.Selection) submitForm {
	f := submitForm{Reason: strings.TrimSpace(c.FormValue("reason")), Note: strings.TrimSpace(c.FormValue("reconciliation_note")),
		Rates: map[int64]string{}, Confirmations: map[int64]string{}}
	for _, r := range sel.Requests {
		key := strconv.FormatInt(r.ID, 10)
		f.Rates[r.ID] = strings.TrimSpace(c.FormValue("rate-" + key))
		f.Confirmations[r.ID] = c.FormValue("confirm-" + key)
	}
	return f
}

// Validate turns the form into what the replay service submits, with a
// message per bad field ("reason", "rate-<id>").
func (f submitForm) Validate() (replay.SubmitInput, map[string]string) {
	in := replay.SubmitInput{Reason: f.Reason, ReconciliationNote: f.Note, Rates: map[int64]float64{}, Confirmations: f.Confirmations}
	errs := map[string]string{}
	if in.Reason == "" {
		errs["reason"] = "Say why this should be replayed; approvers and auditors read it."
	}
	if n := len(in.ReconciliationNote); n > replay.MaxReconciliationNoteBytes {
		errs["reconciliation_note"] = fmt.Sprintf("This note is %d bytes; %d at most. Say what you checked briefly and link the evidence.", n, replay.MaxReconciliationNoteBytes)
	}
	for id, v := range f.Rates {
		if v == "" {
			continue
		}
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil {
			rate = -1 // not a number: refused as one below the minimum
		}
		if v := replaypolicy.JudgeRateInput(rate); v.Outcome != replaypolicy.Go {
			errs["rate-"+strconv.FormatInt(id, 10)] = strings.ToUpper(v.Reason[:1]) + v.Reason[1:] + "."
		}
		in.Rates[id] = rate
	}
	if len(errs) == 0 {
		return in, nil
	}
	return in, errs
}

// selection reads a selection for the user (only its requester finds it).
// Anyone else's attempt is audited as denied through appendDenied, as any
// object outside the caller's scope is: a colleague's browser another site
// sent to the confirm page gets a marked row, within the per-person limit.
func (s *Server) selection(c echo.Context, batch string) (replay.Selection, error) {
	sel, err := s.deps.Replays.Selection(c.Request().Context(), batch, userOf(c).Actor, maxConfirmItems)
	var denied *replay.SelectionDeniedError
	if errors.As(err, &denied) {
		s.appendDenied(c, denied.DeniedEvent(s.event(c, "", audit.OutcomeDenied)))
	}
	return sel, err
}

// renderConfirm writes the confirm page of batch as it is now, with the
// reason and note typed so far and the form errors errs.
func (s *Server) renderConfirm(c echo.Context, batch string, form submitForm, errs map[string]string, status int) error {
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	m := s.confirmModel(c, batch, sel, form, errs)
	return s.render(c, status, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

// replayConfirm shows the requester their frozen selection; once it was
// submitted, the request it became.
func (s *Server) replayConfirm(c echo.Context) error {
	batch := c.Param("batch")
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	if sel.Submitted() {
		if len(sel.Requests) > 1 {
			return s.renderSubmitted(c, sel)
		}
		return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(sel.Landing(), 10))
	}
	// The reason typed on the list comes along (bounded like any reason).
	reason := c.QueryParam("reason")
	if len(reason) > maxReasonCarried {
		reason = ""
	}
	m := s.confirmModel(c, batch, sel, submitForm{Reason: strings.TrimSpace(reason)}, nil)
	m.BackURL = listReturn(c.QueryParam("back"))
	return s.render(c, http.StatusOK, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

// replaySubmit sends the batch with the reason, rates and confirmations;
// bad input, and what the rules refuse, re-render the page (422) as the
// selection now is (items that changed since the draft are left out).
func (s *Server) replaySubmit(c echo.Context) error {
	ctx := c.Request().Context()
	batch := c.Param("batch")
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	for _, r := range sel.Requests {
		if r.ItemCount > 0 {
			if err := s.mayOnClass(c, r.Request, authz.ActRequest); err != nil {
				return err // rights lost since the draft
			}
		}
	}
	form := readSubmitForm(c, sel)
	in, errs := form.Validate()
	if errs == nil {
		done, err := s.deps.Replays.Submit(ctx, batch, userOf(c).Actor, in, authz.RequestMeta(c))
		var refused *replay.RefusedError
		switch {
		case errors.As(err, &refused):
			errs = map[string]string{}
			for id, why := range refused.Reasons {
				errs["request-"+strconv.FormatInt(id, 10)] = why
			}
		case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
			errs = map[string]string{"reason": quarantine.ErrorMessage(err)}
			return s.renderConfirm(c, batch, form, errs, http.StatusConflict)
		case err != nil:
			return err
		case len(done) > 1:
			// Several requests, each going its own way: the page that lists them.
			s.flash(c, fmt.Sprintf("Replay requested: %d requests, each with what it does next.", len(done)))
			return c.Redirect(http.StatusSeeOther, "/replay/batches/"+url.PathEscape(batch))
		default:
			s.flash(c, "Replay requested: "+nextStep(done[0])+".")
			return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(replay.Landing(done), 10))
		}
	}
	return s.renderConfirm(c, batch, form, errs, http.StatusUnprocessableEntity)
}

// confirmModel is the confirm page of sel, the selection batch, with the
// form as typed.
func (s *Server) confirmModel(c echo.Context, batch string, sel replay.Selection, form submitForm, errs map[string]string) views.ReplayConfirmModel {
	table := s.deps.Replays.Policy()
	m := views.ReplayConfirmModel{Action: "/replay/batches/" + batch, Reason: form.Reason, ReconciliationNote: form.Note, Errors: errs}
	for _, r := range sel.Requests {
		g := views.ReplayGroup{RequestID: r.ID, Tenant: r.Tenant, Class: string(r.Class), Needs: describe(table, r.Class),
			OnSubmit: onSubmitText(r.OnSubmit), Approvals: r.OnSubmit.Approvals,
			Items: r.ItemCount, Rate: rateText(r.Rate), Confirmation: r.Confirmation, Edited: r.PayloadEdited, Edits: editViews(r.ID, r.Edits),
			Waits: waitsView(r.Waits), NeedsNote: r.NeedsNote}
		if r.Class == replaypolicy.Revalidate && !s.deps.Replays.Revalidates() {
			g.NoRevalidation = replay.NoRevalidation
		}
		m.NeedsNote = m.NeedsNote || r.NeedsNote
		if k, ok := table.Knobs(r.Class); ok {
			g.MaxRate = rateText(k.MaxRate)
		}
		m.Forms = append(m.Forms, editForms(r.ID, r.Items, r.Payloads, errs)...)
		if r.OnSubmit.Void || r.OnSubmit.Refused != "" {
			g.Approvals = -1
		}
		for _, row := range withFailures(s.itemRows(c, r.Request, r.Items, nil), r.Failures) {
			if row.SkipReason != "" {
				g.Skipped = append(g.Skipped, row)
			} else if len(g.Sample) < 20 {
				g.Sample = append(g.Sample, row)
			}
		}
		g.Error = errs["request-"+strconv.FormatInt(r.ID, 10)]
		m.Groups = append(m.Groups, g)
		m.Total += r.ItemCount
		m.Skipped += r.Counts.Skipped
		m.Blocked += r.Counts.Blocked
	}
	return m
}

// onSubmitText says what a draft does once submitted (o: the rules'
// forecast), as its group on the confirm page heads it.
func onSubmitText(o replay.OnSubmit) string {
	switch {
	case o.Refused != "":
		return "refused as it stands: " + o.Refused
	case o.Void:
		return "nothing of it is left to replay: it is void"
	case o.Approvals == 0:
		return "publishes as soon as you submit"
	}
	return waitsFor(o.Approvals)
}

// waitsFor says that a request waits for n approvers, none of them the
// one who submits it.
func waitsFor(n int) string {
	return fmt.Sprintf("waits for %d %s, not you", n, views.Plural(n, "approver", "approvers"))
}

// nextStep says what a request just submitted does next.
func nextStep(r replay.Request) string {
	switch r.Status {
	case replay.StatusApproved, replay.StatusRunning:
		return "approved at once; the worker publishes its items now, and any inside a duplicate window once that has passed"
	case replay.StatusPendingApproval:
		return "it " + waitsFor(r.ApprovalsNeeded)
	case replay.StatusVoid:
		return "void, it replays nothing: " + r.StatusReason
	}
	return "it is " + views.Label(string(r.Status))
}

// renderSubmitted is the page of a selection submitted as more than one
// request: each, its items and what it does next.
func (s *Server) renderSubmitted(c echo.Context, sel replay.Selection) error {
	var m views.ReplaySubmittedModel
	for _, r := range sel.Requests {
		m.Requests = append(m.Requests, views.SubmittedRequest{ID: r.ID, URL: "/replay/requests/" + strconv.FormatInt(r.ID, 10),
			Tenant: r.Tenant, Class: string(r.Class), Status: string(r.Status), Items: r.Counts.String(), Next: nextStep(r.Request)})
	}
	return s.render(c, http.StatusOK, views.ReplaySubmitted(s.page(c, "Replay requested", "replays"), m))
}

// waitsView is how the confirm page says what waits for a duplicate window.
func waitsView(w replay.Waits) views.WaitsView {
	return views.WaitsView{Items: w.Items, Until: w.Until, Streams: strings.Join(w.Streams, ", "), Unread: w.Unread, First: w.First}
}
