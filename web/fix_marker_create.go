package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// fixForm is a fix marker as typed: for the item type or the error group
// of the dead letter the route names, in place since when, and the
// version or ticket.
type fixForm struct {
	Scope, FixedAt, Ref, Note string
}

func readFixForm(c echo.Context) fixForm {
	return fixForm{Scope: c.FormValue("scope"), FixedAt: strings.TrimSpace(c.FormValue("fixed_at")), Ref: c.FormValue("ref"), Note: c.FormValue("note")}
}

// fixedAtLayouts are what a datetime-local input sends (to the second
// when the form's default is, views.FixedAtLayout), and RFC 3339.
var fixedAtLayouts = []string{"2006-01-02T15:04", views.FixedAtLayout, time.RFC3339}

// Validate returns the marker, or a message per bad field. A time without
// a zone is UTC (the form says so).
func (f fixForm) Validate(now time.Time) (dlq.FixInput, map[string]string) {
	in := dlq.FixInput{Scope: dlq.FixScope(f.Scope), Ref: f.Ref, Note: f.Note}
	for _, layout := range fixedAtLayouts {
		if t, err := time.ParseInLocation(layout, f.FixedAt, time.UTC); err == nil {
			in.FixedAt = t
			break
		}
	}
	errs := in.Validate(now)
	if f.FixedAt != "" && in.FixedAt.IsZero() {
		if errs == nil {
			errs = map[string]string{}
		}
		errs["fixed_at"] = "A time such as 2026-11-29T14:05 (UTC)."
	}
	return in, errs
}

// fixMarkerCreate records that a fix is in place for the item type (or
// error group) of the dead letter of the path, as an on-call states it;
// audited. It comes from the groups page (return_to names it, with its
// filter, sort and page) or the dead letter's page and goes back there; bad input re-renders the dead letter's page with the form
// open, its messages and what was typed (422).
func (s *Server) fixMarkerCreate(c echo.Context) error {
	id, ok := deadLetterID(c)
	if !ok {
		return quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
	}
	ctx := c.Request().Context()
	tenant, err := s.deps.DeadLetters.TenantOf(ctx, id)
	if err != nil {
		return err
	}
	if !s.deps.Access.Can(userOf(c), tenant, authz.ObjDeadLetter, authz.ActFix) {
		return s.deny(c, tenant, authz.ObjDeadLetter+":"+authz.ActFix, "dead letter "+c.Param("id"))
	}
	back, returnTo := deadLetterURL(id), ""
	if r := groupsReturn(c.FormValue("return_to")); r != "" {
		back, returnTo = r, r
	}
	form := readFixForm(c)
	now := authz.Now(ctx) // the database's clock: a fix is never dated ahead of it
	in, errs := form.Validate(now)
	if errs == nil {
		f, err := s.deps.DeadLetters.RecordFix(ctx, id, in, userOf(c).Actor, authz.RequestMeta(c), now)
		var qerr *quarantine.Error
		switch {
		case errors.As(err, &qerr) && qerr.Code == quarantine.EINVALID:
			errs = map[string]string{"ref": quarantine.ErrorMessage(err)}
		case err != nil:
			return err
		default:
			s.flash(c, fixRecorded(f))
			return c.Redirect(http.StatusSeeOther, back)
		}
	}
	// The form comes back open with its messages, and still going back
	// where it came from.
	return s.showDeadLetter(c, http.StatusUnprocessableEntity, &views.FixForm{Errors: errs, ReturnTo: returnTo,
		Values: map[string]string{"scope": form.Scope, "fixed_at": form.FixedAt, "ref": form.Ref, "note": form.Note}})
}

// fixRecorded says what fix was recorded: for what (the item type, or one
// error group of it) in which tenant (a person of several tenants fixed it
// in one, as the form said), and since when to the second, as the fix list
// and the form have it: the seconds decide which dead letters it covers.
func fixRecorded(f dlq.Fix) string {
	of := f.ItemType + " in " + f.Tenant + " (every error group)"
	if f.Fingerprint != "" {
		of = "error group " + f.Fingerprint + " of " + f.ItemType + " in " + f.Tenant + " only"
	}
	return "Fix recorded for " + of + ": in place since " + f.FixedAt.UTC().Format(views.TimeLayout) + " (" + f.Ref + ")."
}
