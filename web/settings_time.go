package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
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
func (s *Server) settingsTime(c echo.Context) error {
	ctx := c.Request().Context()
	tz := c.FormValue("time_zone")
	err := authz.SetTimeZone(ctx, s.deps.Pool, userOf(c), tz, s.event(c, "", ""))
	switch {
	case quarantine.ErrorCode(err) == quarantine.EINVALID:
		s.flashError(c, "Choose UTC or your browser's zone.")
	case err != nil:
		return err
	case tz == authz.TimeZoneLocal:
		s.deps.Sessions.Put(ctx, sessionTimeZone, tz)
		s.flash(c, "Times are shown in your browser's zone; point at one to see it in UTC.")
	default:
		s.deps.Sessions.Put(ctx, sessionTimeZone, tz)
		s.flash(c, "Times are shown in UTC.")
	}
	return c.Redirect(http.StatusSeeOther, authz.LocalPath(c.FormValue("return_to")))
}
