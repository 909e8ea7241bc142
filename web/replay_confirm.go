package web

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
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
	// Limits are each request's limits (by request id), for its rate.
	Limits map[int64]replaypolicy.Knobs
	// Phrases are the phrases to type (by request id) of the requests that
	// ask for one and can be requested: a phrase typed wrong is refused
	// beside its own field.
	Phrases map[int64]string
	text    map[string]string // text that cannot be stored, by field (formText)
}

func readSubmitForm(c echo.Context, sel replay.Selection) (submitForm, error) {
	t, err := readFormText(c)
	if err != nil {
		return submitForm{}, err
	}
	f := submitForm{Reason: t.get("reason"), Note: t.get(fieldNote), Rates: map[int64]string{}, Confirmations: map[int64]string{}}
	for _, r := range sel.Requests {
		key := strconv.FormatInt(r.ID, 10)
		f.Rates[r.ID] = t.get(fieldRate + key)
		f.Confirmations[r.ID] = t.raw(fieldConfirm + key)
	}
	f.Phrases, f.text = phrasesAsked(sel), t.Errors()
	return f, nil
}

// phrasesAsked are the phrases the confirm page of sel asks to type (by
// request id): those of the requests with items to replay that the rules
// neither void nor refuse.
func phrasesAsked(sel replay.Selection) map[int64]string {
	out := map[int64]string{}
	for _, r := range sel.Requests {
		if r.Confirmation != "" && r.ItemCount > 0 && !r.OnSubmit.Void && r.OnSubmit.Refused == "" {
			out[r.ID] = r.Confirmation
		}
	}
	return out
}

// phraseError is the message beside a confirmation field where typed is
// not phrase, or "".
func phraseError(phrase, typed string) string {
	switch typed = strings.TrimSpace(typed); {
	case typed == phrase:
		return ""
	case typed == "":
		return `Type "` + phrase + `" to confirm.`
	}
	return `Type "` + phrase + `" exactly as shown to confirm; what was typed differs.`
}

// Validate turns the form into what the replay service submits, with a
// message per bad field ("reason", "rate-<id>"): a rate above its
// request's maximum (Limits) is refused beside its own field.
func (f submitForm) Validate() (replay.SubmitInput, map[string]string) {
	in := replay.SubmitInput{Reason: f.Reason, ReconciliationNote: f.Note, Rates: map[int64]float64{}, Confirmations: f.Confirmations}
	errs := map[string]string{}
	if in.Reason == "" {
		errs["reason"] = "Say why this should be replayed; approvers and auditors read it."
	}
	if n := len(in.ReconciliationNote); n > replay.MaxReconciliationNoteBytes {
		errs["reconciliation_note"] = fmt.Sprintf("This note is %d bytes; %d at most. Say what you checked briefly and link the evidence.", n, replay.MaxReconciliationNoteBytes)
	}
	for id, phrase := range f.Phrases {
		if msg := phraseError(phrase, f.Confirmations[id]); msg != "" {
			errs["confirm-"+strconv.FormatInt(id, 10)] = msg
		}
	}
	for id, v := range f.Rates {
		if v == "" {
			continue
		}
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil {
			rate = -1 // not a number: refused as one below the minimum
		}
		if verdict := replaypolicy.JudgeRateInput(rate); verdict.Outcome != replaypolicy.Go {
			errs["rate-"+strconv.FormatInt(id, 10)] = strings.ToUpper(verdict.Reason[:1]) + verdict.Reason[1:] + "."
		} else if k, ok := f.Limits[id]; ok && rate > k.MaxRate {
			errs["rate-"+strconv.FormatInt(id, 10)] = fmt.Sprintf("%s messages per second is over this request's limit of %s. "+
				"Lower it, or leave it empty for the default of %s.", v, rateText(k.MaxRate), rateText(k.DefaultRate))
		}
		in.Rates[id] = rate
	}
	errs = addTextErrors(errs, f.text)
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
		s.appendDenied(c, denied.DeniedEvents(s.event(c, "", audit.OutcomeDenied))...)
	}
	return sel, err
}

// renderConfirm writes the confirm page of batch as it is now, with the
// form as typed so far and the form errors errs (errs["selection"], about
// the whole selection, heads the page). sent is the selection as it was
// when the form was sent (nil: no form was sent): a typed confirmation
// comes back only for a request whose intent has not changed since.
func (s *Server) renderConfirm(c echo.Context, batch string, form submitForm, sent *replay.Selection, errs map[string]string, status int) error {
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	if errs == nil {
		errs = map[string]string{}
	}
	form.Confirmations = keptConfirmations(form.Confirmations, sent, sel, errs)
	m := s.confirmModel(c, batch, sel, form, errs)
	m.BackURL = listReturn(c.FormValue("back")) // the form carries the list it came from
	carryToForms(&m)
	p := s.page(c, "Confirm replay", "deadletters")
	if msg := errs["selection"]; msg != "" {
		p.Flash = append(p.Flash, views.Flash{Kind: views.FlashError, Text: msg})
	}
	return s.render(c, status, views.ReplayConfirm(p, m))
}

// renderVoided writes the confirm page of batch, which the submit voided
// because nothing of it was left (voided: each draft, with the request
// that holds what it had), with errs: 422, the summary's title naming that
// request.
func (s *Server) renderVoided(c echo.Context, batch string, form submitForm, errs map[string]string, voided map[int64]replay.HeldElsewhere) error {
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	m := s.confirmModel(c, batch, sel, form, errs)
	m.BackURL = listReturn(c.FormValue("back"))
	m.Voided = true
	var by []int64
	for _, h := range voided {
		if !slices.Contains(by, h.By) {
			by = append(by, h.By)
		}
		m.VoidedByYours = h.Yours
	}
	if len(by) == 1 {
		m.VoidedBy = by[0] // one request holds it all
	}
	carryToForms(&m)
	return s.render(c, http.StatusUnprocessableEntity, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

// keptConfirmations are the confirmations typed (by request) that the
// page shows again: a phrase confirms one exact intent, so it is kept
// only where the request's intent is what it was when the form was sent
// (sent); where it changed, the field is emptied and errs say why.
func keptConfirmations(typed map[int64]string, sent *replay.Selection, now replay.Selection, errs map[string]string) map[int64]string {
	if sent == nil {
		return nil
	}
	was := map[int64]string{}
	for _, r := range sent.Requests {
		was[r.ID] = intentOf(r)
	}
	kept := map[int64]string{}
	for _, r := range now.Requests {
		t := typed[r.ID]
		switch {
		case strings.TrimSpace(t) == "":
		case r.Status == replay.StatusVoid:
			// Nothing of it is left to request: no phrase to type again.
		case was[r.ID] == intentOf(r):
			kept[r.ID] = t
		default:
			key := "confirm-" + strconv.FormatInt(r.ID, 10)
			if errs[key] == "" {
				errs[key] = "Type it again: what this request replays changed after you typed it."
			}
		}
	}
	return kept
}

// intentOf is what a typed confirmation of draft r stands for: the phrase,
// the draft's stored intent (kept up to date as items are left out or
// edited), and its tenant, class, policy version and live items as read
// (ItemHash each); the rate and note are the form's own and come back as
// typed.
func intentOf(r replay.SelectionRequest) string {
	var live []replay.Item
	for _, it := range r.Items {
		if it.SkipReason == "" {
			live = append(live, it)
		}
	}
	read := replay.IntentHash(r.Tenant, r.Class, r.PolicyVersion, 0, "", live)
	return r.Confirmation + "\x00" + r.IntentHex() + "\x00" + hex.EncodeToString(read)
}

// replayConfirm shows the requester their frozen selection; once it was
// submitted, the request it became.
func (s *Server) replayConfirm(c echo.Context) error {
	batch := c.Param("batch")
	if c.Request().Header.Get(authz.PollHeader) != "" {
		// The table of the page a submitted selection landed on, polling
		// its requests' status and counts (ReplaySubmittedRequests).
		m, err := s.submittedModel(c, batch)
		if err != nil {
			return err
		}
		return s.render(c, http.StatusOK, views.ReplaySubmittedRequests(m))
	}
	sel, err := s.selection(c, batch)
	if err != nil {
		return err
	}
	if sel.Submitted() {
		if len(sel.Requests) > 1 {
			return s.renderSubmitted(c, batch)
		}
		return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(sel.Landing(), 10))
	}
	// The reason typed on the list comes along (carriedForm), and what
	// was typed on this page before a payload edit (typedOf).
	form := carriedForm(c.QueryParams())
	if typed, ok := s.typedOf(c.Request().Context(), batch); ok {
		form = typed
	}
	m := s.confirmModel(c, batch, sel, form, nil)
	m.BackURL = listReturn(c.QueryParam("back"))
	carryToForms(&m)
	return s.render(c, http.StatusOK, views.ReplayConfirm(s.page(c, "Confirm replay", "deadletters"), m))
}

// carriedReason is a replay's reason carried to the confirm page (from
// the list, or through a payload edit on the page), bounded like any
// reason: a longer one is dropped.
func carriedReason(reason string) string {
	if len(reason) > maxReasonCarried {
		return ""
	}
	return strings.TrimSpace(reason)
}

// carryToForms makes the payload forms of confirm page m send what the
// page's request form holds (its reason, note, rates and confirmations)
// and the list to go back to (when not the whole list), so that the page
// an edit comes back to (replayEditPayload) keeps them. Each is sent as
// the page's field holds it when the form is sent (a replay_… field
// app.js fills from it: the fields are the request form's, which a
// payload form cannot share), in the form's body: the form's address
// holds the list to go back to alone, never the reason or a rate, which
// would reach the access log and a proxy's. The edit's own fields keep
// their names: "reason" is why the payload changes.
func carryToForms(m *views.ReplayConfirmModel) {
	back := m.BackURL
	if back == views.PathDeadLetters {
		back = ""
	}
	carried := pairsQuery("back", back)
	var fields []views.CarriedField
	if m.NeedsNote {
		fields = append(fields, views.CarriedField{Name: "replay_" + fieldNote, Value: m.ReconciliationNote, Of: fieldNote})
	}
	for _, g := range m.Groups {
		if g.Items == 0 || g.ClassGone {
			continue // no rate or confirmation field
		}
		rate := fieldRate + strconv.FormatInt(g.RequestID, 10)
		fields = append(fields, views.CarriedField{Name: "replay_" + rate, Value: g.Rate, Of: views.FieldID(rate)})
		if g.Confirmation != "" {
			confirm := fieldConfirm + strconv.FormatInt(g.RequestID, 10)
			fields = append(fields, views.CarriedField{Name: "replay_" + confirm, Value: g.Typed, Of: views.FieldID(confirm)})
		}
	}
	for i := range m.Forms {
		if f := &m.Forms[i]; !f.TooLarge {
			f.URL += carried
			f.OnConfirm, f.ReplayReason, f.Carried = true, m.Reason, fields
		}
	}
}

// The confirm page's request form's fields besides the reason: the
// reconciliation note, and each request's rate and typed confirmation
// (the prefix, then the request's id).
const (
	fieldNote    = "reconciliation_note"
	fieldRate    = "rate-"
	fieldConfirm = "confirm-"
)

// carriedForm is what a confirm page's address carries of its request
// form: the reason typed on the list, bounded (carriedReason). What was
// typed on the page before a payload edit is kept in the session
// (keepTyped), not in the address the edit goes back to.
func carriedForm(q url.Values) submitForm {
	return submitForm{Reason: carriedReason(q.Get("reason")), Rates: map[int64]string{}, Confirmations: map[int64]string{}}
}

// sentFromConfirm is what a payload form of the confirm page sent of the
// page's request form (carryToForms' copies, as app.js filled them): the
// reason (replayReasonSent), the note, the rates and the confirmations.
func sentFromConfirm(c echo.Context) submitForm {
	form := c.Request().PostForm
	f := submitForm{Reason: replayReasonSent(c), Note: strings.TrimSpace(form.Get("replay_" + fieldNote)),
		Rates: map[int64]string{}, Confirmations: map[int64]string{}}
	for k, v := range form {
		if id, ok := idAfter(k, "replay_"+fieldRate); ok && len(v) > 0 {
			f.Rates[id] = strings.TrimSpace(v[0])
		}
		if id, ok := idAfter(k, "replay_"+fieldConfirm); ok && len(v) > 0 {
			f.Confirmations[id] = v[0]
		}
	}
	return f
}

// idAfter is the request id that follows prefix in a field's name.
func idAfter(name, prefix string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}

// replayReasonSent is the replay's reason a payload form of the confirm
// page was sent with: its replay_reason field (the page's reason field as
// it was when sent, as typed, whatever its length); "" for a form sent
// without it (not the console's).
func replayReasonSent(c echo.Context) string {
	if typed, ok := c.Request().PostForm["replay_reason"]; ok && len(typed) > 0 {
		return strings.TrimSpace(typed[0])
	}
	return ""
}

// confirmPage is the address of the confirm page of batch with the list to
// go back to (listReturn); what was typed in its request form is kept in
// the session (keepTyped), never in the address.
func confirmPage(batch, back string) string {
	if back != "" {
		back = listReturn(back)
	}
	return "/replay/batches/" + url.PathEscape(batch) + pairsQuery("back", back)
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
	if sel.Submitted() {
		return s.toSubmitted(c, batch, sel)
	}
	for _, r := range sel.Requests {
		if r.ItemCount > 0 {
			if err := s.mayOnClass(c, r.Request, authz.ActRequest); err != nil {
				return err // rights lost since the draft
			}
		}
	}
	form, err := readSubmitForm(c, sel)
	if err != nil {
		return err
	}
	form.Limits = rateLimits(s.deps.Replays.Policy(), sel)
	in, errs := form.Validate()
	if nothing := nothingToReplay(sel); nothing != nil {
		// Nothing is requested: a submit would only void the drafts.
		if errs == nil {
			errs = map[string]string{}
		}
		maps.Copy(errs, nothing)
	}
	if errs == nil {
		done, err := s.deps.Replays.Submit(ctx, batch, userOf(c).Actor, in, authz.RequestMeta(c))
		var refused *replay.RefusedError
		switch {
		case errors.As(err, &refused) && len(refused.Voided) > 0:
			// Nothing of it was left (another tab's submit took it): voided,
			// and said so; there is nothing to type again.
			errs = map[string]string{}
			for id, why := range refused.Reasons {
				errs["request-"+strconv.FormatInt(id, 10)] = why + "."
			}
			return s.renderVoided(c, batch, form, errs, refused.Voided)
		case errors.As(err, &refused):
			errs = map[string]string{}
			for id, why := range refused.Reasons {
				key := "request-" + strconv.FormatInt(id, 10)
				if phrase, ok := form.Phrases[id]; ok && phraseError(phrase, form.Confirmations[id]) != "" {
					key = "confirm-" + strconv.FormatInt(id, 10) // the phrase typed is what was refused
				}
				errs[key] = classRead(why)
			}
		case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
			if again, err := s.selection(c, batch); err == nil && again.Submitted() {
				return s.toSubmitted(c, batch, again) // the same press twice at once: the other one submitted it
			}
			errs = map[string]string{"reason": quarantine.ErrorMessage(err)}
			return s.renderConfirm(c, batch, form, &sel, errs, http.StatusConflict)
		case err != nil:
			return err
		case len(done) > 1:
			s.forgetTyped(ctx, batch)
			// Several requests, each going its own way: the page that lists them.
			s.flashSubmitted(c, done, fmt.Sprintf("Replay requested: %d requests, each with what it does next.", len(done)))
			return c.Redirect(http.StatusSeeOther, "/replay/batches/"+url.PathEscape(batch))
		default:
			s.forgetTyped(ctx, batch)
			s.flashSubmitted(c, done, "Replay requested: "+nextStep(done[0])+".")
			return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(replay.Landing(done), 10))
		}
	}
	return s.renderConfirm(c, batch, form, &sel, errs, http.StatusUnprocessableEntity)
}

// toSubmitted answers a submit of selection batch, sel, that was
// submitted already (a second press of the button whose first answer was
// never shown, a retry, another tab): nothing is submitted again, and the
// person is taken where the first submit took them, told so (as a GET of
// the confirm page of a submitted selection takes them).
func (s *Server) toSubmitted(c echo.Context, batch string, sel replay.Selection) error {
	s.flashInfo(c, "This selection was requested already (the button pressed twice, or another tab): nothing was requested again.")
	if len(sel.Requests) > 1 {
		return c.Redirect(http.StatusSeeOther, "/replay/batches/"+url.PathEscape(batch))
	}
	return c.Redirect(http.StatusSeeOther, "/replay/requests/"+strconv.FormatInt(sel.Landing(), 10))
}

// flashSubmitted keeps what the next page says of the requests done: ok
// (msg) when every one goes on; an error when none does (the rules voided
// them after the page was read; nothingToReplay refuses a selection known
// to be void). A selection only part of which the rules voided is
// submitted for the part that goes on, like any other: the void part
// replays nothing and changes nothing, so refusing the whole would only
// hold up the rest. Its flash is neutral, not green (not everything
// selected will be replayed) and not red (what could go on did): it says
// how many requests and dead letters were left out, and why.
// Green means everything requested will be replayed.
func (s *Server) flashSubmitted(c echo.Context, done []replay.Request, msg string) {
	void, letters, why := 0, 0, ""
	for _, r := range done {
		if r.Status == replay.StatusVoid {
			void++
			letters += r.ItemCount + r.SkippedCount
			why = r.StatusReason
		}
	}
	switch {
	case void == 0:
		s.flash(c, msg)
	case void == len(done) && void == 1:
		s.flashError(c, "Nothing will be replayed: the request is void: "+why)
	case void == len(done):
		s.flashError(c, fmt.Sprintf("Nothing will be replayed: all %d requests are void; each says why.", void))
	default:
		if void > 1 {
			why = "each says why"
		}
		s.flashInfo(c, fmt.Sprintf("Replay requested for %d of the %d requests; each goes on as its page says. "+
			"Left out: %d void %s of %d %s, none of which can be replayed: %s.",
			len(done)-void, len(done), void, views.Plural(void, "request", "requests"), letters, views.Plural(letters, "dead letter", "dead letters"),
			strings.TrimSuffix(why, ".")))
	}
}

// nothingToReplay is the form errors of a selection no request of which
// has an item left to replay (the rules' forecast: every item skipped or
// blocked), or nil. Submitting it would request nothing, so it is refused
// before anything changes (a form refusal, like a missing reason, and not
// audited as any); the page keeps what was typed.
func nothingToReplay(sel replay.Selection) map[string]string {
	if len(sel.Requests) == 0 {
		return nil
	}
	errs := map[string]string{}
	for _, r := range sel.Requests {
		if !r.OnSubmit.Void {
			return nil
		}
		errs["request-"+strconv.FormatInt(r.ID, 10)] = "Nothing of this can be replayed: every item is skipped or blocked, " +
			"each for the reason in its row below."
	}
	errs["selection"] = "Nothing was requested: no item of this selection can be replayed as it stands. " +
		"Each item's row says why and what to do instead; select again on Dead letters."
	return errs
}

// rateLimits are the limits of each request of sel (by id) whose class the
// table has: those of its class and of every class its items are classed
// by (replaypolicy.Table.RequestKnobs). A request of a class the table no
// longer has has none: it cannot be requested, and the rules refuse it.
func rateLimits(t *replaypolicy.Table, sel replay.Selection) map[int64]replaypolicy.Knobs {
	out := map[int64]replaypolicy.Knobs{}
	for _, r := range sel.Requests {
		if k, ok := requestKnobs(t, r); ok {
			out[r.ID] = k
		}
	}
	return out
}

// requestKnobs are the limits of request r as the rules judge it: of its
// class and of every class it is held to (SelectionRequest.Union, a
// draft's as its submit will store it; replaypolicy.Table.RequestKnobs);
// false without a table or when the table no longer has r's class.
func requestKnobs(t *replaypolicy.Table, r replay.SelectionRequest) (replaypolicy.Knobs, bool) {
	if t == nil {
		return replaypolicy.Knobs{}, false
	}
	return t.RequestKnobs(r.Class, r.Union)
}

// classGone is what the confirm page says of a request whose class the
// policy in force no longer has.
const classGone = "class no longer in the policy: cannot be requested"

// confirmModel is the confirm page of sel, the selection batch, with the
// form as typed.
func (s *Server) confirmModel(c echo.Context, batch string, sel replay.Selection, form submitForm, errs map[string]string) views.ReplayConfirmModel {
	table := s.deps.Replays.Policy()
	// What a filter's batch left out is said on every rendering of its
	// page, a refused submit's too (not only the first GET).
	m := views.ReplayConfirmModel{Action: "/replay/batches/" + batch, Reason: form.Reason, ReconciliationNote: form.Note, Errors: errs,
		LeftOut: s.leftOutOf(c, sessionLeftOut, batch)}
	for _, r := range sel.Requests {
		download := s.mayDownload(userOf(c), r.Tenant)
		g, requestable := confirmGroup(table, r, form, errs, download)
		if r.Class == replaypolicy.Revalidate && !s.deps.Replays.Revalidates() {
			g.NoRevalidation = replay.NoRevalidation
		}
		m.NeedsNote = m.NeedsNote || r.NeedsNote
		m.Requestable = m.Requestable || requestable
		m.Forms = append(m.Forms, editForms(r.ID, r.Status == replay.StatusDraft, r.Items, r.Payloads, r.Undo, errs, typedEdit(c), download)...)
		for _, row := range withFailures(s.itemRows(c, r.Request, r.Items, nil), r.Failures) {
			if row.SkipReason != "" {
				g.Skipped = append(g.Skipped, row)
			} else if len(g.Sample) < 20 {
				g.Sample = append(g.Sample, row)
			}
		}
		g.SkippedCount = r.Counts.Skipped + r.Counts.Blocked
		g.RequestURL = fmt.Sprintf("/replay/requests/%d", r.ID)
		m.Groups = append(m.Groups, g)
		m.Total += r.ItemCount
		m.Skipped += r.Counts.Skipped
		m.Blocked += r.Counts.Blocked
	}
	return m
}

// confirmGroup is request r of a selection as the confirm page heads it
// under table (the policy in force), with the form as typed and its
// errors, and download links where the requester may download payloads
// (download); requestable says whether it can be requested as it stands.
// Whether its class is still in the policy is the rules' own answer
// (replaypolicy.Table.RequestKnobs): one the policy no longer has is said
// so, with no rate to choose and nothing to request.
func confirmGroup(table *replaypolicy.Table, r replay.SelectionRequest, form submitForm, errs map[string]string, download bool) (g views.ReplayGroup, requestable bool) {
	g = views.ReplayGroup{RequestID: r.ID, Tenant: r.Tenant, Class: string(r.Class), Needs: describe(table, r.Class, r.Union),
		OnSubmit: onSubmitText(r.OnSubmit), Approvals: r.OnSubmit.Approvals,
		Items: r.ItemCount, Rate: rateText(r.Rate), Confirmation: r.Confirmation, Typed: form.Confirmations[r.ID], Edited: r.PayloadEdited, Edits: editViews(r.ID, r.Edits, download),
		Waits: waitsView(r.Waits), NeedsNote: r.NeedsNote, Error: errs["request-"+strconv.FormatInt(r.ID, 10)]}
	if typed := form.Rates[r.ID]; typed != "" {
		g.Rate = typed // as typed, refused or not: the next submit sends what the field shows
	}
	k, known := requestKnobs(table, r)
	switch {
	case r.Status == replay.StatusVoid: // voided meanwhile: nothing more to request
		g.OnSubmit, g.Approvals = nextStep(r.Request), -1
	case !known:
		g.OnSubmit, g.Approvals, g.ClassGone = classGone, -1, true
	case r.OnSubmit.Void || r.OnSubmit.Refused != "":
		g.MaxRate, g.Approvals = rateText(k.MaxRate), -1
	default:
		g.MaxRate, requestable = rateText(k.MaxRate), true
	}
	return g, requestable
}

// onSubmitText says what a draft does once submitted (o: the rules'
// forecast), as its group on the confirm page heads it.
func onSubmitText(o replay.OnSubmit) string {
	switch {
	case o.Refused != "":
		return "refused as it stands: " + classRead(o.Refused)
	case o.Void:
		return "nothing of it is left to replay: it is void"
	case o.Approvals == 0:
		return "publishes as soon as you submit"
	case o.SelfFixed != "" && o.Approvals == 1:
		return waitsFor(o.Approvals) + ": the fix marker that lets item type " + strconv.Quote(o.SelfFixed) + " replay was recorded by the requester (you)"
	}
	return waitsFor(o.Approvals)
}

// waitsFor says that a request waits for n approvers, none of them the
// one who submits it.
func waitsFor(n int) string {
	return fmt.Sprintf("waits for %d %s, not you", n, views.Plural(n, "approver", "approvers"))
}

// nextStep says what a request just submitted does next (or, on the page
// of a submitted selection that follows its requests, what it does now).
func nextStep(r replay.Request) string {
	switch r.Status {
	case replay.StatusApproved, replay.StatusRunning:
		if r.ApprovalsNeeded > 0 {
			return "approved; the worker publishes its items now, and any inside a duplicate window once that has passed"
		}
		return "approved at once; the worker publishes its items now, and any inside a duplicate window once that has passed"
	case replay.StatusPendingApproval:
		return "it " + waitsFor(r.ApprovalsNeeded)
	case replay.StatusVoid:
		return "void, it replays nothing: " + r.StatusReason
	}
	return "it is " + views.Label(string(r.Status))
}

// renderSubmitted is the page of a selection submitted as more than one
// request, batch: each, its items and what it does next.
func (s *Server) renderSubmitted(c echo.Context, batch string) error {
	m, err := s.submittedModel(c, batch)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.ReplaySubmitted(s.page(c, "Replay requested", "replays"), m))
}

// submittedModel is the table of the requests of batch, submitted, as
// they are now (replay.Service.Submitted): each one's status, its items
// counted as every page counts them, how many of those replayed came
// back (as the replays list says it) and what it does next; it polls
// every 2 s while one of them runs or may (approved), every 5 s while
// they only wait for approval (nothing of them changes but by a person),
// and not once every one ended. Anyone but the requester is refused as
// for the confirm page (not found, audited).
func (s *Server) submittedModel(c echo.Context, batch string) (views.ReplaySubmittedModel, error) {
	reqs, err := s.deps.Replays.Submitted(c.Request().Context(), batch, userOf(c).Actor)
	var denied *replay.SelectionDeniedError
	if errors.As(err, &denied) {
		s.appendDenied(c, denied.DeniedEvents(s.event(c, "", audit.OutcomeDenied))...)
	}
	if err != nil {
		return views.ReplaySubmittedModel{}, err
	}
	m := views.ReplaySubmittedModel{URL: "/replay/batches/" + url.PathEscape(batch), Every: "5s"}
	for _, r := range reqs {
		m.Requests = append(m.Requests, views.SubmittedRequest{ID: r.ID, URL: "/replay/requests/" + strconv.FormatInt(r.ID, 10),
			Tenant: r.Tenant, Class: string(r.Class), Status: string(r.Status), Items: r.Items.String(), Next: nextStep(r.Request),
			CameBack: r.CameBack})
		if r.Status.Open() && r.Status != replay.StatusDraft {
			m.Poll = true
			if r.Status != replay.StatusPendingApproval {
				m.Every = "2s"
			}
		}
	}
	return m, nil
}

// waitsView is how the confirm page says what waits for a duplicate window.
func waitsView(w replay.Waits) views.WaitsView {
	return views.WaitsView{Items: w.Items, Until: w.Until, Streams: strings.Join(w.Streams, ", "), Behind: w.Behind, Unread: w.Unread, First: w.First}
}
