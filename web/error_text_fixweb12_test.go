package web

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestFixWeb12TextPostgreSQLRefusesIsA422: should a form let through text
// PostgreSQL refuses (22021: a NUL or bytes that are not UTF-8; 22P05: a
// character the encoding lacks), the error handler answers 422 saying what
// text it takes, never a 500, and warns with the request so the form can
// be found and made to say it at its field.
func TestFixWeb12TextPostgreSQLRefusesIsA422(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"22021", "22P05"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			err := fmt.Errorf("list dead letters: %w", &pgconn.PgError{Code: code, Message: `invalid byte sequence for encoding "UTF8": 0x00`})
			var logs bytes.Buffer
			s := &Server{deps: Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}}
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/deadletters?subject=%00", nil), rec)
			s.handleError(err, c)
			assert.Equal(t, http.StatusUnprocessableEntity, rec.Code)
			assert.Equal(t, http.StatusUnprocessableEntity, errorStatus(err))
			assert.Contains(t, rec.Body.String(), dlq.UnstorableTextMessage)
			assert.NotContains(t, rec.Body.String(), "invalid byte sequence", "the page never shows the error's inside")
			assert.Contains(t, logs.String(), "level=WARN")
			assert.Contains(t, logs.String(), "path=/deadletters")
			assert.NotContains(t, logs.String(), "request failed")
		})
	}
}
