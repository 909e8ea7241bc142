package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/views"
)

// policyPage shows the replay policy table in force, read-only.
func (s *Server) policyPage(c echo.Context) error {
	t := s.deps.Replays.Policy()
	m := views.PolicyModel{File: s.deps.PolicyFile, Version: t.Version()}
	for _, r := range t.Rules() {
		m.Rules = append(m.Rules, views.PolicyRow{ItemType: r.ItemType, Subject: r.Subject, Class: string(r.Class)})
	}
	for _, cp := range t.Classes() {
		m.Classes = append(m.Classes, views.PolicyClassRow{Class: string(cp.Class), Describe: t.Describe(cp.Class)})
	}
	m.Retention = retentionView(t, nil)
	return s.render(c, http.StatusOK, views.Policy(s.page(c, "Replay policy", "policy"), m))
}
