package web

import (
	"net/http"
	"path/filepath"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// policyPage shows the replay policy table in force, read-only. Its rules
// classify every tenant's items alike; its retention lines are those for
// every tenant ("*") and the caller's tenants (policyScope), as on the
// dashboard. The file's path on the server is shown to those who see every
// tenant, who run the console; others read its name. A console whose table
// is not the active version says so above it, with the active version,
// since when and (to those who see every tenant) which process made it so;
// while a rollback allowance waits, the page says which version it lets
// back and until when. A console whose retention terms are not the active
// ones (its keeper removes nothing) says so too, alike.
func (s *Server) policyPage(c echo.Context) error {
	st, err := s.deps.Replays.PolicyStanding(c.Request().Context())
	if err != nil {
		return err
	}
	t := st.Table
	all, tenants := s.policyScope(c)
	m := views.PolicyModel{File: filepath.Base(s.deps.PolicyFile), Version: t.Version(), UnlistedSubjects: t.UnlistedSubjects()}
	if all {
		m.File = s.deps.PolicyFile
	}
	if st.Stale() {
		m.Stale = &views.PolicyStale{Version: t.Version(), Active: st.Active.Version, ActiveSince: st.Active.ActivatedAt, FileUnreadable: st.FileErr != nil}
		if all {
			m.Stale.ActivatedBy = st.Active.ActivatedBy
		}
	}
	if rs := st.Retention; rs.Stale() {
		m.RetentionStale = &views.PolicyStale{Version: rs.Version, Active: rs.Active.Version, ActiveSince: rs.Active.ActivatedAt}
		if all {
			m.RetentionStale.ActivatedBy = rs.Active.ActivatedBy
		}
	}
	if r := st.Rollback; r.Pending() {
		m.Rollback = &views.PolicyRollback{Version: r.Version, ExpiresAt: r.ExpiresAt}
		if all {
			m.Rollback.AllowedBy = r.AllowedBy
		}
	}
	for _, r := range t.Rules() {
		m.Rules = append(m.Rules, views.PolicyRow{ItemType: r.ItemType, Subject: r.Subject, Class: string(r.Class)})
	}
	for _, cp := range t.Classes() {
		m.Classes = append(m.Classes, views.PolicyClassRow{Class: string(cp.Class), Describe: t.Describe(cp.Class)})
	}
	for _, r := range t.ErrorRules() {
		m.ErrorClasses = append(m.ErrorClasses, views.PolicyClassRow{Class: r.ErrorClass, Describe: t.DescribeErrorClass(r.ErrorClass)})
	}
	m.GenerationLimit = t.GenerationLimit()
	m.Retention = retentionView(t, tenants)
	return s.render(c, http.StatusOK, views.Policy(s.page(c, "Replay policy", "policy"), m))
}

// policyScope is where the caller may read the policy or the dead letters:
// everywhere (all, and tenants nil), or the tenants listed (never nil, so
// that retentionView shows no other tenant's line even when it is empty).
func (s *Server) policyScope(c echo.Context) (all bool, tenants []string) {
	u, known := userOf(c), s.knownTenants(c.Request().Context())
	tenants = []string{}
	for _, obj := range []string{authz.ObjPolicy, authz.ObjDeadLetter} {
		sc := s.deps.Access.Scope(u, obj, authz.ActRead, known)
		if sc.All {
			return true, nil
		}
		tenants = append(tenants, sc.Tenants...)
	}
	return false, tenants
}
