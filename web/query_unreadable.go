package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// unreadableQuery says why url.ParseQuery, which every page reads its
// filters with (echo's QueryParams, net/http's ParseForm), would drop
// part of rawQuery, or "" when it reads all of it. The parser drops a
// pair holding a ";", a pair with a "%" not followed by two hex digits,
// and every pair of a query of more than 10,000 (GODEBUG
// urlmaxqueryparams changes the number); it says so only in an error the
// pages never see. A filter dropped is no filter: the page, its counts
// and its actions would cover every tenant and every dead letter the
// person may see, where the address asked for fewer. Its error is the
// judge, so that nothing it reads whole is refused: an empty pair
// ("a=1&&b=2") or a pair without "=" are read as the pages always read
// them.
func unreadableQuery(rawQuery string) string {
	_, err := url.ParseQuery(rawQuery)
	switch {
	case err == nil:
		return ""
	case strings.Contains(rawQuery, ";"):
		return `it holds a ";", which does not separate parameters here (only "&" does); write one in a value as "%3B"`
	case errors.As(err, new(url.EscapeError)):
		return `it holds a "%" not followed by two hexadecimal digits; write one in a value as "%25"`
	}
	return fmt.Sprintf("it has %d parameters, more than the console reads", strings.Count(rawQuery, "&")+1)
}

// refuseUnreadableQuery answers 422 to a request whose query the parser
// would read only in part (unreadableQuery), before anything reads it.
func refuseUnreadableQuery(c echo.Context) error {
	why := unreadableQuery(c.Request().URL.RawQuery)
	if why == "" {
		return nil
	}
	return echo.NewHTTPError(http.StatusUnprocessableEntity,
		"The address's query cannot be read whole: "+why+". Nothing was done: read without those parts, "+
			"it could cover more than the address asks for. Correct the address and try again.")
}
