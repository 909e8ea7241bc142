package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// sessionTimeZone keeps the person's time zone setting in their browser
// session, read from user_settings once per session.
const sessionTimeZone = "time_zone"

// timeZone is how the signed-in person wants to see times.
func (s *Server) timeZone(ctx context.Context, u authz.User) string {
	if tz := s.deps.Sessions.GetString(ctx, sessionTimeZone); authz.ValidTimeZone(tz) {
		return tz
	}
	tz, err := authz.TimeZoneOf(ctx, s.deps.Pool, u)
	if err != nil {
		s.deps.Log.Warn("read time zone setting", "err", err)
		return authz.TimeZoneUTC
	}
	s.deps.Sessions.Put(ctx, sessionTimeZone, tz)
	return tz
}

// settingsTime saves how the person wants to see times (UTC, or their
// browser's zone with UTC on hover) and goes back to the page they were on.
// From a page a POST rendered (Page.SaveInPlace) the form is sent by htmx:
// the answer is the message alone (422 for a choice that is none), the
// page stays as it is with what was typed on it, and app.js shows its
// times as chosen.
func (s *Server) settingsTime(c echo.Context) error {
	ctx := c.Request().Context()
	inPlace := c.Request().Header.Get("HX-Request") != ""
	tz := c.FormValue("time_zone")
	err := authz.SetTimeZone(ctx, s.deps.Pool, userOf(c), tz, s.event(c, "", ""))
	msg := "Times are shown in UTC."
	switch {
	case quarantine.ErrorCode(err) == quarantine.EINVALID:
		msg = "Choose UTC or your browser's zone."
		if inPlace {
			return s.render(c, http.StatusUnprocessableEntity, views.TimeZoneSaved(msg))
		}
		s.flashError(c, msg)
		return c.Redirect(http.StatusSeeOther, s.pageBack(c.FormValue("return_to")))
	case err != nil:
		return err
	case tz == authz.TimeZoneLocal:
		msg = "Times are shown in your browser's zone; point at one to see it in UTC."
	}
	s.deps.Sessions.Put(ctx, sessionTimeZone, tz)
	if inPlace {
		return s.render(c, http.StatusOK, views.TimeZoneSaved(msg))
	}
	s.flash(c, msg)
	return c.Redirect(http.StatusSeeOther, s.pageBack(c.FormValue("return_to")))
}
