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
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	f := ownerForm{Owner: form.Get("owner")}
	_, was, _ := edited(form, "owner")
	owner, errs := f.Validate()
	status := http.StatusUnprocessableEntity
	if errs == nil {
		// owner_was, when sent, is the owner the form showed: a colleague's
		// change since then is a conflict (the form again, 409, standing on
		// the owner as it is now), not overwritten blind.
		ch := dlq.GroupChange{Owner: &owner, OwnerWas: was}
		err = s.deps.DeadLetters.TriageGroup(c.Request().Context(), g, ch, userOf(c).Actor, authz.RequestMeta(c))
		if errs = movedParts(err, form); errs == nil {
			done := "Owner set in " + g.Tenant + "."
			if owner == "" {
				done = "Owner removed in " + g.Tenant + "."
			}
			return s.groupChanged(c, err, done)
		}
		status = http.StatusConflict
	}
	return s.renderGroupForm(c, g, status, "Assign the group", "Save owner", drawnFields(form, "owner_was"),
		views.FormControl{Input: &views.Input{Name: "owner", Label: "Owner", Value: f.Owner, Error: errs["owner"]}})
}
