package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// deadLetterCount counts what the list filter selects, exact up to 10,000.
// The list fetches it after the page when counting costs more than the page
// (a common text search, a time range); it answers a fragment.
func (s *Server) deadLetterCount(c echo.Context) error {
	ctx := c.Request().Context()
	tenants := s.deadLetterTenants(ctx, userOf(c), authz.ActRead)
	form := readDeadLetterFilter(c.QueryParams())
	f, errs := form.Validate(tenants)
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.DeadLetterCount(views.DeadLetterCountModel{Failed: true}))
	}
	n, capped, err := s.deps.DeadLetters.CountDeadLetters(ctx, f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.DeadLetterCount(views.DeadLetterCountModel{Count: n, CountCapped: capped, Fragment: true}))
}
