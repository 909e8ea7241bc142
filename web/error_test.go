package web

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine"
)

// TestErrorCodesMapToStatus drives the one error handler with every error
// code (wrapped, as services return them), echo's own errors and an
// uncoded failure, and checks the status, what the page says and what is
// logged.
func TestErrorCodesMapToStatus(t *testing.T) {
	t.Parallel()
	wrap := func(code, msg string) error {
		return fmt.Errorf("approve replay 7: %w", quarantine.Errorf(code, "%s", msg))
	}
	tests := []struct {
		name    string
		err     error
		status  int
		detail  string // the sentence the page shows
		hidden  string // what the page must not show
		logged  bool
		jsonOut bool
	}{
		{"NotFound", wrap(quarantine.ENOTFOUND, "dead letter 9 is in tenant globex"), http.StatusNotFound,
			"There is nothing here, or it is not yours to see.", "globex", false, false},
		{"Conflict", wrap(quarantine.ECONFLICT, "the request is done, not waiting for approval"), http.StatusConflict,
			"the request is done, not waiting for approval", "approve replay 7", false, false},
		{"Invalid", wrap(quarantine.EINVALID, `type "REPLAY m-1" to confirm`), http.StatusUnprocessableEntity,
			`type &#34;REPLAY m-1&#34; to confirm`, "approve replay 7", false, false},
		{"Forbidden", wrap(quarantine.EFORBIDDEN, "you cannot approve your own request"), http.StatusForbidden,
			"you cannot approve your own request", "approve replay 7", false, false},
		{"Unauthorized", wrap(quarantine.EUNAUTHORIZED, "Sign in first."), http.StatusUnauthorized,
			"Sign in first.", "approve replay 7", false, true},
		{"Internal", wrap(quarantine.EINTERNAL, "pool exhausted"), http.StatusInternalServerError,
			"The error was logged.", "pool exhausted", true, false},
		{"Uncoded", fmt.Errorf("read replay 7: %w", errors.New("connection reset by peer")), http.StatusInternalServerError,
			"The error was logged.", "connection reset", true, false},
		{"EchoNoRoute", echo.ErrNotFound, http.StatusNotFound, "There is nothing here, or it is not yours to see.", "", false, false},
		{"EchoMethod", echo.ErrMethodNotAllowed, http.StatusMethodNotAllowed, "Method Not Allowed", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			s := &Server{deps: Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}}
			e := echo.New()
			rec := httptest.NewRecorder()
			c := e.NewContext(httptest.NewRequest(http.MethodPost, "/replay/requests/7/approve", nil), rec)
			s.handleError(tt.err, c)
			assert.Equal(t, tt.status, rec.Code)
			assert.Equal(t, tt.status, errorStatus(tt.err))
			body := rec.Body.String()
			assert.Contains(t, body, tt.detail)
			if tt.hidden != "" {
				assert.NotContains(t, body, tt.hidden, "the page never shows the error's inside")
			}
			if tt.jsonOut {
				assert.True(t, strings.HasPrefix(rec.Header().Get(echo.HeaderContentType), echo.MIMEApplicationJSON))
			} else {
				assert.Contains(t, body, `data-testid="error-page"`)
			}
			assert.Equal(t, tt.logged, strings.Contains(logs.String(), "request failed"), "only 5xx are logged: %s", logs.String())
		})
	}
}
