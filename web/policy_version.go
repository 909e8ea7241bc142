package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/views"
)

// policyVersionPage is the Policy page of one version that was active
// (/policy?version=, its full name or the start of it, at least 8
// characters): what it said, read-only, as its activation recorded it, so
// that an auditor reads the rules a replay request was made under (its
// page links here) and an operator what a rollback goes back to. A replay
// policy version shows its rules, retention terms their table; a version
// never active is not found. It needs what the Policy page needs.
func (s *Server) policyVersionPage(c echo.Context, version string) error {
	v, err := s.deps.Replays.FindVersion(c.Request().Context(), version)
	if err != nil {
		return err
	}
	all, tenants := s.policyScope(c)
	m := views.PolicyModel{File: fileShown(v.File, all), Version: v.Version, Viewing: &views.PolicyViewing{
		Terms: v.Terms, ActivatedAt: v.ActivatedAt, SupersededAt: v.SupersededAt,
	}}
	if all {
		m.Viewing.ActivatedBy = v.ActivatedBy
	}
	title := "Replay policy version"
	if v.Terms {
		title = "Retention terms version"
		policyTerms(&m, v, tenants)
	} else {
		policyRules(&m, v)
	}
	return s.render(c, http.StatusOK, views.Policy(s.page(c, title, "policy"), m))
}
