package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

func (s *Server) deadLetterDiscard(c echo.Context) error {
	return s.closeOne(c, dlq.StatusDiscarded, authz.ActDiscard, "Discarded.")
}

func (s *Server) deadLetterResolve(c echo.Context) error {
	return s.closeOne(c, dlq.StatusResolved, authz.ActResolve, "Marked resolved.")
}

// closeOne discards or resolves the dead letter of the :id parameter, at
// the version the user saw, with a reason.
func (s *Server) closeOne(c echo.Context, to dlq.Status, act, done string) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	version, _ := strconv.ParseInt(c.FormValue("version"), 10, 32) // 0: no version check
	scope := s.tenantsWith(c.Request().Context(), userOf(c), authz.ObjDeadLetter, act)
	_, err = s.deps.DeadLetters.Close(c.Request().Context(), dlq.CloseInput{
		IDs: []int64{id}, Version: int32(version), To: to, Reason: c.FormValue("reason"), Tenants: scope.Tenants, All: scope.All,
	}, userOf(c).Actor, authz.RequestMeta(c))
	switch quarantine.ErrorCode(err) {
	case "":
	case quarantine.ENOTFOUND:
		return s.notFoundDenied(c, "", "dead_letter", c.Param("id"))
	case quarantine.ECONFLICT, quarantine.EINVALID:
		s.flashError(c, quarantine.ErrorMessage(err))
		return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/deadletters/%d", id))
	default:
		return err
	}
	s.flash(c, done)
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/deadletters/%d", id))
}

// deadLetterDiscardBulk discards a selection; deadLetterResolveBulk marks
// one resolved by hand. Each has its own route and permission.
func (s *Server) deadLetterDiscardBulk(c echo.Context) error {
	return s.closeBulk(c, dlq.StatusDiscarded, authz.ActDiscard)
}

func (s *Server) deadLetterResolveBulk(c echo.Context) error {
	return s.closeBulk(c, dlq.StatusResolved, authz.ActResolve)
}

// closeBulk discards or resolves a selection (at most dlq.MaxBulkClose),
// all or nothing, in the tenants where the user may do act.
func (s *Server) closeBulk(c echo.Context, to dlq.Status, act string) error {
	form, err := c.FormParams()
	if err != nil {
		return quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	ids, err := readSelection(form).Validate()
	if err != nil {
		return err
	}
	scope := s.tenantsWith(c.Request().Context(), userOf(c), authz.ObjDeadLetter, act)
	n, err := s.deps.DeadLetters.Close(c.Request().Context(), dlq.CloseInput{
		IDs: ids, To: to, Reason: form.Get("reason"), Tenants: scope.Tenants, All: scope.All,
	}, userOf(c).Actor, authz.RequestMeta(c))
	back := "/deadletters"
	if r := authz.LocalPath(form.Get("return_to")); r != "/" {
		back = r
	}
	switch quarantine.ErrorCode(err) {
	case "":
	case quarantine.ECONFLICT, quarantine.EINVALID:
		s.flashError(c, quarantine.ErrorMessage(err))
		return c.Redirect(http.StatusSeeOther, back)
	default:
		return err
	}
	s.flash(c, fmt.Sprintf("%d dead letters %s.", n, to))
	return c.Redirect(http.StatusSeeOther, back)
}
