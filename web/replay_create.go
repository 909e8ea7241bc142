package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// replayCreate freezes a selection (the id fields of the form: one from the
// detail page, many from the list) into draft requests and shows them for
// confirmation; an empty selection goes back to the list with a message.
func (s *Server) replayCreate(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	ids, err := readSelection(form).Validate()
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		// Not a dead end: back to the list, which says what to do.
		s.flashError(c, "Tick the dead letters to replay first, or filter the list and use \"All matching\".")
		return c.Redirect(http.StatusSeeOther, listReturn(form.Get("return_to")))
	}
	back := ""
	if form.Get("return_to") != "" {
		back = listReturn(form.Get("return_to"))
	}
	return s.startReplay(c, ids, form.Get("reason"), back, nil)
}

// startReplay makes the draft batch for ids and sends the user to confirm
// it, with the reason typed so far (kept in the session with the page's
// form, keepTyped: never in the address, where a reason, which may name a
// customer or an incident, reached the browser's history and the access
// log) and the page to go back to; left (nil: nothing) is what a filter
// selected that the batch leaves out, which its confirm page names
// (keepLeftOut).
func (s *Server) startReplay(c echo.Context, ids []int64, reason, back string, left *views.LeftOut) error {
	ctx := c.Request().Context()
	u := userOf(c)
	scope := s.tenantsWith(ctx, u, authz.ObjDeadLetter, authz.ActRead)
	can := func(tenant string, class replaypolicy.Class) bool {
		return s.deps.Access.Can(u, tenant, authz.ReplayObject(string(class)), authz.ActRequest)
	}
	batch, err := s.deps.Replays.CreateDrafts(ctx, u.Actor, ids, scope.Tenants, scope.All, can, authz.RequestMeta(c))
	if err != nil {
		return err
	}
	if left != nil {
		s.keepLeftOut(ctx, sessionLeftOut, batch, left)
	}
	if reason != "" {
		s.keepTyped(ctx, batch, submitForm{Reason: reason, Rates: map[int64]string{}, Confirmations: map[int64]string{}})
	}
	return c.Redirect(http.StatusSeeOther, "/replay/batches/"+batch+pairsQuery("back", back))
}
