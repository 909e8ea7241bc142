package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

func (s *Server) bindingList(c echo.Context) error {
	m, err := s.bindingsModel(c, views.BindingForm{Role: authz.RoleViewer})
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.AdminBindings(s.page(c, "Role bindings", "admin"), m))
}

// bindingsModel lists the bindings, role holders and group rules of the
// tenants where the caller may read bindings.
func (s *Server) bindingsModel(c echo.Context, form views.BindingForm) (views.BindingsModel, error) {
	ctx := c.Request().Context()
	u := userOf(c)
	known := s.knownTenants(ctx)
	read := s.deps.Access.Scope(u, authz.ObjBindings, authz.ActRead, known)
	manage := s.deps.Access.Scope(u, authz.ObjBindings, authz.ActManage, known)
	all, err := s.deps.Bindings.List(ctx)
	if err != nil {
		return views.BindingsModel{}, err
	}
	m := views.BindingsModel{Form: form, Roles: authz.Roles, AddURL: "/admin/bindings"}
	for _, b := range all {
		if !(read.All || (b.Tenant != authz.AllTenants && read.Has(b.Tenant))) {
			continue
		}
		vb := views.Binding{ID: b.ID, Subject: b.Subject, Role: b.Role, Tenant: b.Tenant, CreatedBy: b.Author(), CreatedAt: b.CreatedAt}
		if email, ok := strings.CutPrefix(b.Subject, "email:"); ok {
			vb.Email, vb.Subject = email, ""
		} else {
			vb.Subject = strings.TrimPrefix(b.Subject, "user:")
		}
		if b.UnmatchedSince != nil {
			vb.Unmatched = "Its address is not ASCII, and email bindings match ASCII addresses only (lower-casing other letters " +
				"can read as another mailbox). Remove it, and bind the person's identity instead."
		}
		if manage.All || (b.Tenant != authz.AllTenants && manage.Has(b.Tenant)) {
			vb.DeleteURL = "/admin/bindings/" + strconv.FormatInt(b.ID, 10) + "/delete"
		}
		m.Bindings = append(m.Bindings, vb)
	}
	// Groups no session could have confirmed (older than a session lives)
	// give nobody a role, as for the replay worker.
	var lifetime time.Duration
	if s.deps.Sessions != nil {
		lifetime = s.deps.Sessions.Lifetime
	}
	holders, err := s.deps.Access.Holders(ctx, s.deps.Pool, all, lifetime)
	if err != nil {
		return views.BindingsModel{}, err
	}
	for _, h := range holders {
		if read.All || (h.Tenant != authz.AllTenants && read.Has(h.Tenant)) {
			m.Holders = append(m.Holders, views.RoleHolder{Tenant: h.Tenant, Role: h.Role, Person: h.Person, Group: h.Group, Seen: h.Seen})
		}
	}
	m.GroupPrefix = s.deps.Access.Groups().Prefix
	for _, r := range s.deps.Access.Groups().Rules() {
		// Like bindings and holders: another tenant's mappings (its name,
		// its groups) are not this admin's to see.
		if read.All || (r.Tenant != authz.AllTenants && read.Has(r.Tenant)) {
			m.GroupRules = append(m.GroupRules, views.GroupRule{Group: r.Group, Role: r.Role, Tenant: r.Tenant})
		}
	}
	if manage.All {
		m.Tenants = append([]string{authz.AllTenants}, known...)
	} else {
		m.Tenants = manage.Tenants
	}
	return m, nil
}
