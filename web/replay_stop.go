package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// stopForm is an emergency stop: why, and the typed STOP (the replay
// rules judge both: JudgeStop).
type stopForm struct {
	Tenant, Reason, Confirm string
	text                    map[string]string // text that cannot be stored, by field (formText)
}

// typedStopKey keeps, in the echo context, the stop form a request's page
// is rendered again for (typedStop).
const typedStopKey = "replay.typedStop"

// typedStop is the stop form sent that the page now rendered refuses, or
// the zero form.
func typedStop(c echo.Context) stopForm {
	f, _ := c.Get(typedStopKey).(stopForm)
	return f
}

func readStopForm(c echo.Context) (stopForm, error) {
	t, err := readFormText(c)
	if err != nil {
		return stopForm{}, err
	}
	return stopForm{Tenant: t.get("tenant"), Reason: t.raw("reason"), Confirm: t.raw("confirm"), text: t.Errors()}, nil
}

// textError is the message of the reason or the typed STOP when its text
// cannot be stored (formText), or "".
func (f stopForm) textError() string { return cmp.Or(f.text["reason"], f.text["confirm"]) }

// Validate returns what the replay service takes.
func (f stopForm) Validate() replay.StopInput {
	return replay.StopInput{Reason: strings.TrimSpace(f.Reason), Typed: f.Confirm}
}

// replayStop stops one request at once: an approver's or an admin's
// emergency stop, whoever requested it.
func (s *Server) replayStop(c echo.Context) error {
	req, err := s.loadRequest(c)
	if err != nil {
		return err
	}
	if err := s.mayOnClass(c, req, authz.ActStop); err != nil {
		return err
	}
	form, err := readStopForm(c)
	if err != nil {
		return err
	}
	if msg := form.textError(); msg != "" {
		c.Set(typedStopKey, form)
		return s.requestFormError(c, quarantine.Errorf(quarantine.EINVALID, "%s", msg), "stop")
	}
	if err := s.deps.Replays.Stop(c.Request().Context(), req.ID, userOf(c).Actor, form.Validate(), authz.RequestMeta(c)); err != nil {
		c.Set(typedStopKey, form) // the page that comes back keeps the reason as typed
		return s.requestFormError(c, err, "stop")
	}
	s.flash(c, "Stopped: nothing not yet published will be.")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/replay/requests/%d", req.ID))
}

// replayStopAll stops every replay of the tenant the form names that may
// still publish or be approved, of the classes the person may stop there;
// a tenant where they may stop nothing is refused (refuseNamed: 404, or 403
// in a tenant of theirs; audited) before any request is read, and before
// the rest of the form is judged (a mistake in the reason must not spare
// a probe of another tenant its audit row).
func (s *Server) replayStopAll(c echo.Context) error {
	u := userOf(c)
	form, err := readStopForm(c)
	if err != nil {
		return err
	}
	if msg := form.text["tenant"]; msg != "" {
		// Not a tenant's name at all: nothing to judge it by.
		return s.renderStopPage(c, http.StatusUnprocessableEntity, form, msg, form.textError())
	}
	may := func(class replaypolicy.Class) bool {
		return s.deps.Access.Can(u, form.Tenant, authz.ReplayObject(string(class)), authz.ActStop)
	}
	if form.Tenant == "" || form.Tenant == authz.AllTenants {
		// The select starts on no tenant: a stop must name the one it stops
		// (a stop "in *" would stop nothing and say it had).
		return s.renderStopPage(c, http.StatusUnprocessableEntity, form, "Choose the tenant whose replays to stop.", form.textError())
	}
	if !s.stopsSomething(u, form.Tenant) {
		return s.refuseNamed(c, form.Tenant, replayObjects+":"+authz.ActStop, "tenant "+form.Tenant)
	}
	if msg := form.textError(); msg != "" {
		return s.renderStopPage(c, http.StatusUnprocessableEntity, form, "", msg)
	}
	if !slices.Contains(s.stopTenants(c.Request().Context(), u), form.Tenant) {
		// Someone who may stop in every tenant named one the select does
		// not offer: no such tenant has replays to stop.
		return s.renderStopPage(c, http.StatusUnprocessableEntity, form, "Choose one of the tenants listed.", "")
	}
	res, err := s.deps.Replays.StopAll(c.Request().Context(), form.Tenant, may, u.Actor, form.Validate(), authz.RequestMeta(c))
	if quarantine.ErrorCode(err) == quarantine.EINVALID {
		return s.renderStopPage(c, http.StatusUnprocessableEntity, form, "", quarantine.ErrorMessage(err))
	}
	if err != nil {
		return err
	}
	s.flash(c, fmt.Sprintf("Emergency stop in %s: %s stopped.", form.Tenant, requests(res.Stopped)))
	if len(res.Left) > 0 {
		// A partial stop must read as one: the on-call may take the
		// tenant for quiet.
		var classes []string
		for _, class := range res.LeftClasses() {
			classes = append(classes, string(class))
		}
		s.flashError(c, fmt.Sprintf("Not stopped: %s of %s, which you may not stop in %s, left open.",
			requests(len(res.Left)), strings.Join(classes, ", "), form.Tenant))
	}
	return c.Redirect(http.StatusSeeOther, views.PathStop)
}

// requests is "1 request" or "n requests".
func requests(n int) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// stopsSomething reports whether u may stop replays of some class in
// tenant.
func (s *Server) stopsSomething(u authz.User, tenant string) bool {
	for _, obj := range (Permission{Object: replayObjects, Action: authz.ActStop}).Objects() {
		if tenant != "" && s.deps.Access.Can(u, tenant, obj, authz.ActStop) {
			return true
		}
	}
	return false
}

// stopTenants are the tenants the stop page offers u: those where u may
// stop replays, or every known tenant when u may stop them everywhere.
func (s *Server) stopTenants(ctx context.Context, u authz.User) []string {
	scope := s.replayScope(ctx, u, authz.ActStop)
	if scope.All {
		return s.knownTenants(ctx)
	}
	return scope.Tenants
}

// replayStopPage is the emergency stop page.
func (s *Server) replayStopPage(c echo.Context) error {
	return s.renderStopPage(c, http.StatusOK, stopForm{}, "", "")
}

// renderStopPage writes the emergency stop page with status, the form as
// typed (its tenant still chosen, so that the next press stops the tenant
// the person picked) and why it failed (tenantMsg of the tenant, msg of
// the rest): the requests that may still publish in the tenants where the
// viewer may stop replays (no draft: nothing of one runs).
func (s *Server) renderStopPage(c echo.Context, status int, form stopForm, tenantMsg, msg string) error {
	ctx := c.Request().Context()
	u := userOf(c)
	tenants := s.stopTenants(ctx, u)
	stoppable, err := s.deps.Replays.Stoppable(ctx, tenants)
	if err != nil {
		return err
	}
	// A draft has nothing running to stop, and is its requester's alone
	// (the stop drops it all the same: the page says so).
	reqs := slices.DeleteFunc(stoppable, func(r replay.Request) bool { return r.Status == replay.StatusDraft })
	counts, err := s.deps.Replays.ItemCountsOf(ctx, reqs)
	if err != nil {
		return err
	}
	m := views.StopPageModel{Form: views.StopForm{URL: views.PathStop, Tenants: tenants, Reason: form.Reason, TenantError: tenantMsg, Error: msg}}
	if slices.Contains(tenants, form.Tenant) {
		m.Form.Tenant = form.Tenant
	}
	for _, r := range reqs {
		row := views.ApprovalRow{ID: r.ID, Tenant: r.Tenant, Class: string(r.Class), Needs: string(r.Status), Items: counts[r.ID].String(),
			MayRepublish: r.MayEverRepublish(), RepublishNow: s.deps.Replays.MayRepublish(r).Outcome == replaypolicy.Go}
		if s.deps.Access.Can(u, r.Tenant, authz.ObjDeadLetter, authz.ActRead) {
			row.URL = fmt.Sprintf("/replay/requests/%d", r.ID)
		}
		m.Rows = append(m.Rows, row)
	}
	return s.render(c, status, views.StopPage(s.page(c, "Emergency stop", "stop"), m))
}
