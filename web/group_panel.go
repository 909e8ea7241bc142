package web

import (
	"context"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// groupPanel is the triage panel of error group fp on its list: one part
// per tenant (of tenants) the group has dead letters in, with what was
// recorded there and, where u may triage, the forms. returnTo is the list;
// console names the console's own hosts (consoleHosts), where a ticket
// link shown there may not lead.
func (s *Server) groupPanel(ctx context.Context, u authz.User, tenants []string, fp, returnTo string, console []string) (*views.GroupPanelModel, error) {
	in, err := s.deps.DeadLetters.GroupTenants(ctx, tenants, fp)
	if err != nil || len(in) == 0 {
		return nil, err
	}
	triage, err := s.deps.DeadLetters.GroupTriage(ctx, in, []string{fp})
	if err != nil {
		return nil, err
	}
	m := &views.GroupPanelModel{Fingerprint: fp, ReturnTo: returnTo}
	for _, tenant := range in {
		p := views.GroupTenantPanel{Triage: views.GroupTriageView{Tenant: tenant},
			CanTriage: s.deps.Access.Can(u, tenant, authz.ObjDeadLetter, authz.ActTriage)}
		for _, t := range triage {
			if t.Tenant == tenant {
				p.Triage = triageView(t, console)
			}
		}
		p.SnoozeOptions = triageSnoozeOptions(p.Triage.Snoozed)
		m.Tenants = append(m.Tenants, p)
	}
	return m, nil
}
