package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// bindingAdd adds the role binding the form asks for. The tenant it names is
// judged before the rest of the form (refuseNamed: 404, or 403 in a tenant
// of the admin's; audited): a mistake in another field must not spare an
// attempt on another tenant's bindings its audit row. A tenant field that
// names no tenant at all is the form's mistake (422).
func (s *Server) bindingAdd(c echo.Context) error {
	t, err := readFormText(c)
	if err != nil {
		return err
	}
	in := authz.BindingInput{Email: t.raw("email"), Subject: t.raw("subject"), Role: t.raw("role"), Tenant: t.get("tenant")}
	errs := addTextErrors(in.Validate(), t.Errors())
	u := userOf(c)
	manage := s.deps.Access.Scope(u, authz.ObjBindings, authz.ActManage, s.knownTenants(c.Request().Context()))
	if errs["tenant"] == "" && !(manage.All || (in.Tenant != authz.AllTenants && manage.Has(in.Tenant))) {
		return s.refuseNamed(c, in.Tenant, authz.ObjBindings+":"+authz.ActManage, "tenant "+in.Tenant)
	}
	if errs == nil {
		_, err = s.deps.Bindings.Add(c.Request().Context(), in, u, s.event(c, "", ""))
		switch {
		case quarantine.ErrorCode(err) == quarantine.ECONFLICT:
			errs = map[string]string{"role": "This person already holds this role in this tenant."}
		case err != nil:
			return err
		default:
			s.flash(c, "Binding added: "+in.Role+" in "+in.Tenant+".")
			return c.Redirect(http.StatusSeeOther, "/admin/bindings")
		}
	}
	form := views.BindingForm{Email: in.Email, Subject: in.Subject, Role: in.Role, Tenant: in.Tenant, Errors: errs}
	m, err := s.bindingsModel(c, form)
	if err != nil {
		return err
	}
	status := http.StatusUnprocessableEntity
	if _, conflict := errs["role"]; conflict && authz.ValidRole(in.Role) {
		status = http.StatusConflict
	}
	return s.render(c, status, views.AdminBindings(s.page(c, "Role bindings", "admin"), m))
}
