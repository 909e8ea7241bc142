package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// ownerForm is who owns a group: an email or a team's name; empty for
// nobody.
type ownerForm struct {
	Owner string
}

// Validate returns the owner, with a message when it is too long.
func (f ownerForm) Validate() (string, map[string]string) {
	owner := strings.TrimSpace(f.Owner)
	switch {
	case len(owner) > dlq.MaxGroupOwner:
		return owner, map[string]string{"owner": overBytes("owner", owner, dlq.MaxGroupOwner)}
	case !dlq.StorableText(owner):
		return owner, map[string]string{"owner": dlq.UnstorableTextMessage}
	}
	return owner, nil
}

// groupAssign gives an error group an owner in a tenant.
func (s *Server) groupAssign(c echo.Context) error {
	g, err := s.groupRef(c)
	if err != nil {
		return err
	}
	f := ownerForm{Owner: c.FormValue("owner")}
	owner, errs := f.Validate()
	if errs != nil {
		return s.renderGroupForm(c, g, http.StatusUnprocessableEntity, "Assign the group", "Save owner", nil,
			views.FormControl{Input: &views.Input{Name: "owner", Label: "Owner", Value: f.Owner, Error: errs["owner"]}})
	}
	done := "Owner set in " + g.Tenant + "."
	if owner == "" {
		done = "Owner removed in " + g.Tenant + "."
	}
	err = s.deps.DeadLetters.AssignGroup(c.Request().Context(), g, owner, userOf(c).Actor, authz.RequestMeta(c))
	return s.groupChanged(c, err, done)
}
