package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
)

func (s *Server) bindingDelete(c echo.Context) error {
	id, ok := pathID(c, "id")
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such binding.")
	}
	u := userOf(c)
	manage := s.deps.Access.Scope(u, authz.ObjBindings, authz.ActManage, s.knownTenants(c.Request().Context()))
	allowed := func(b authz.Binding) bool {
		return manage.All || (b.Tenant != authz.AllTenants && manage.Has(b.Tenant))
	}
	if err := s.deps.Bindings.Delete(c.Request().Context(), id, u, allowed, s.event(c, "", "")); err != nil {
		return err
	}
	s.flash(c, "Binding removed.")
	return c.Redirect(http.StatusSeeOther, "/admin/bindings")
}
