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
//
// Retention terms versions are found only for those who see every tenant:
// a terms version is the SHA-256 of a text holding every tenant's
// retention lines, so to anyone else a page found (or an ambiguous start)
// would confirm a guess at other tenants' lines, computed offline. For
// them, a terms version, known or not, is not found as one never active
// is (replay.FindPolicyVersion). A replay policy version is found for
// everyone: its rules, which are all it hashes, are shown whole on the
// Policy page to everyone who may read it.
func (s *Server) policyVersionPage(c echo.Context, version string) error {
	all, tenants := s.policyScope(c)
	find := s.deps.Replays.FindPolicyVersion
	if all {
		find = s.deps.Replays.FindVersion
	}
	v, err := find(c.Request().Context(), version)
	if err != nil {
		return err
	}
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
