package web

import (
	"net/http"
	"slices"

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
	form := readDeadLetterFilter(c.QueryParams(), authz.Now(ctx))
	f, errs := form.Validate(tenants)
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.DeadLetterCount(views.DeadLetterCountModel{Failed: true, Problems: errorTexts(errs)}))
	}
	n, capped, err := s.deps.DeadLetters.CountDeadLetters(ctx, f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.DeadLetterCount(views.DeadLetterCountModel{Count: n, CountCapped: capped, Fragment: true,
		FilterQuery: encodeQuery(listFilter(c.QueryParams()))}))
}

// errorTexts are a filter's messages (Validate), each after the parameter
// it is about ("from: …"; a message about the whole filter alone), sorted.
func errorTexts(errs map[string]string) []string {
	out := make([]string, 0, len(errs))
	for field, msg := range errs {
		if field != "" {
			msg = field + ": " + msg
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return out
}
