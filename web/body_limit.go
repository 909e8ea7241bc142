package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"
)

// BodyClass is how large a request body a route accepts.
type BodyClass int

// Body classes of the route table. A route's class is set by its method
// (GET: BodyNone, anything else: BodyForm) unless it says otherwise.
const (
	BodyNone    BodyClass = iota // no body is expected: 4 KiB at most
	BodyForm                     // an HTML form: 64 KiB (a selection of up to 1,000 ids, a reason)
	BodyPayload                  // a payload edit's form: 3 × the largest edit taken + 64 KiB (bodyLimit)
)

// Body limits of the small classes, in bytes.
const (
	bodyNoneLimit = 4 << 10
	bodyFormLimit = 64 << 10
)

// bodyLimit is the most a route of class b reads.
func (s *Server) bodyLimit(b BodyClass) int64 {
	switch b {
	case BodyForm:
		return bodyFormLimit
	case BodyPayload:
		// No edit over maxPayloadEdit is taken (payloadForm.Validate), nor
		// one over what NATS publishes when that is less; URL-encoding
		// triples a byte at most, and the form's other fields are a form's.
		// A bigger body is refused before it is read, not read, decoded
		// and then refused.
		return 3*min(maxPayloadEdit, s.deps.Config.MaxPayloadBytes) + bodyFormLimit
	}
	return bodyNoneLimit
}

// limitBody refuses bodies larger than the route's class allows with 413,
// before anything reads them: by Content-Length when the client declares
// it, else while reading (http.MaxBytesReader). It reads nothing itself:
// enforce parses the form (readForm) once the caller may use the route.
func (s *Server) limitBody(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			limit := s.bodyLimit(r.Body)
			req := c.Request()
			if req.ContentLength > limit {
				return tooLarge(limit)
			}
			req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			return next(c)
		}
	}
}

// readForm parses an urlencoded form whole, under the limit limitBody set,
// so that a form cut short is a 413 and never a half-read form a handler
// acts on. A multipart/form-data body is refused (415): the console's
// pages never send one, and the handlers' readers (echo's c.FormValue,
// c.FormParams) would parse it past this check, c.FormValue dropping its
// parse error, so that one that could not be read would be acted on as
// the query's values alone. Any other body is no form: nothing reads it.
func (s *Server) readForm(c echo.Context, r Route) error {
	req := c.Request()
	ct, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if ct == echo.MIMEMultipartForm {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType,
			"The console reads forms sent as application/x-www-form-urlencoded only. Nothing was done.")
	}
	if ct != echo.MIMEApplicationForm {
		return nil
	}
	if err := req.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge(s.bodyLimit(r.Body))
		}
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	return nil
}

func tooLarge(limit int64) error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("The request is larger than this page accepts (%d KiB).", limit>>10))
}
