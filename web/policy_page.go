package web

import (
	"context"
	"net/http"
	"path/filepath"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

// policyPage shows the active replay policy and retention terms, read-only,
// as their activation recorded them in the database: every console shows
// the same rules, whatever its own file says (?version= shows another
// version instead: policyVersionPage). Its rules classify every tenant's
// items alike; its retention lines are those for every tenant ("*") and
// the caller's tenants (policyScope), as on the dashboard. The file's path
// on the server is shown to those who see every tenant, who run the
// console; others read its name. A console whose table is not the active
// version says so above it, with the active version, since when and (to
// those who see every tenant) which process made it so; while a rollback
// allowance waits, the page says which version it lets back and until
// when. A console whose retention terms are not the active ones (its
// keeper removes nothing) says so too, alike. With no version recorded
// yet, the page shows this console's own file; what a version active
// since before migration 0039 said may not be recorded, and the page says
// so instead of showing other rules.
func (s *Server) policyPage(c echo.Context) error {
	if v := c.QueryParam("version"); v != "" {
		return s.policyVersionPage(c, v)
	}
	ctx := c.Request().Context()
	st, err := s.deps.Replays.PolicyStanding(ctx)
	if err != nil {
		return err
	}
	all, tenants := s.policyScope(c)
	own := st.Table
	rules, err := s.activeRules(ctx, st)
	if err != nil {
		return err
	}
	terms, err := s.activeTerms(ctx, st)
	if err != nil {
		return err
	}
	m := views.PolicyModel{File: fileShown(rules.File, all), Version: rules.Version}
	policyRules(&m, rules)
	policyTerms(&m, terms, tenants)
	if st.Stale() {
		m.Stale = &views.PolicyStale{Version: own.Version(), Active: st.Active.Version, ActiveSince: st.Active.ActivatedAt,
			FileUnreadable: st.FileErr != nil, NotRecorded: !rules.Recorded()}
		if all {
			m.Stale.ActivatedBy = st.Active.ActivatedBy
		}
	}
	if rs := st.Retention; rs.Stale() {
		m.RetentionStale = &views.PolicyStale{ActiveSince: rs.Active.ActivatedAt, NotRecorded: !terms.Recorded()}
		if all { // terms versions: see policyTerms
			m.RetentionStale.Version, m.RetentionStale.Active, m.RetentionStale.ActivatedBy = rs.Version, rs.Active.Version, rs.Active.ActivatedBy
		}
	}
	if r := st.Rollback; r.Pending() {
		m.Rollback = &views.PolicyRollback{Version: r.Version, ExpiresAt: r.ExpiresAt}
		if all {
			m.Rollback.AllowedBy = r.AllowedBy
		}
	}
	return s.render(c, http.StatusOK, views.Policy(s.page(c, "Replay policy", "policy"), m))
}

// activeRules is the active replay policy version as recorded; this
// console's own table, for what it says, when it is that version (its
// content is the same) or none is recorded yet.
func (s *Server) activeRules(ctx context.Context, st replay.PolicyStanding) (replay.VersionContent, error) {
	own := replay.VersionContent{PolicyVersion: replay.PolicyVersion{Version: st.Version(), File: s.deps.PolicyFile}, Rules: st.Table}
	if st.Active.Version == "" {
		return own, nil
	}
	v, err := s.deps.Replays.PolicyContent(ctx, st.Active.Version)
	if err != nil || v.Recorded() || st.Table == nil || st.Table.Version() != v.Version {
		return v, err
	}
	v.Rules = st.Table
	return v, nil
}

// activeTerms is activeRules for the retention terms.
func (s *Server) activeTerms(ctx context.Context, st replay.PolicyStanding) (replay.VersionContent, error) {
	var r *replaypolicy.Retention
	if st.Table != nil {
		r = st.Table.Retention()
	}
	own := replay.VersionContent{PolicyVersion: replay.PolicyVersion{Version: st.Retention.Version}, Terms: true, Retention: r}
	if st.Retention.Active.Version == "" {
		return own, nil
	}
	v, err := s.deps.Replays.TermsContent(ctx, st.Retention.Active.Version)
	if err != nil || v.Recorded() || st.Retention.Version != v.Version {
		return v, err
	}
	v.Retention = r
	return v, nil
}

// policyRules puts what replay policy version v says in m, or why it is
// not known.
func policyRules(m *views.PolicyModel, v replay.VersionContent) {
	t := v.Rules
	m.ShowRules = true
	if t == nil {
		m.RulesNotRecorded = v.NotRecorded()
		return
	}
	m.UnlistedSubjects = t.UnlistedSubjects()
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
}

// policyTerms puts what retention terms v say in m, for tenants (see
// retentionView), or why it is not known: to a viewer of some tenants,
// who is only ever shown the active terms, without their version.
//
// A retention terms version is shown only to those who see every tenant
// (tenants nil): it is the SHA-256 of a text that holds every tenant's
// retention lines, so to a viewer of some tenants, who reads the lines of
// theirs and of every tenant ("*"), it, or any start of it, would confirm
// offline a guess at the lines of the others (their names and periods).
// They see when the active terms were made active instead, which says
// nothing of what they hold. (A replay policy version is shown to all: it
// hashes the rules alone, which the page shows whole to all.)
func policyTerms(m *views.PolicyModel, v replay.VersionContent, tenants []string) {
	m.ShowRetention = true
	if v.Retention == nil {
		m.RetentionNotRecorded = v.NotRecorded()
		if tenants != nil {
			m.RetentionNotRecorded = "not recorded: the active retention terms were last active before the console kept what versions say (migration 0039), " +
				"and no process has run them as the active terms since"
		}
		return
	}
	m.Retention = retentionLines(v.Retention, tenants)
}

// fileShown is a policy file as the caller reads it: its path on the
// server to those who see every tenant, its name to others.
func fileShown(file string, all bool) string {
	if all || file == "" {
		return file
	}
	return filepath.Base(file)
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
