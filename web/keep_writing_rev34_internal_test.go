package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34KeepWritingOutlastsTheWriteTimeout: the chain check may take
// up to verifyTimeout (10 min) but the server's write timeout was 5 min,
// so a long check was audited and its verdict never reached the auditor.
// keepWriting extends the write deadline of the one response: behind a
// server whose write timeout passes while the handler works, the response
// with it arrives whole, and without it does not.
func TestRev34KeepWritingOutlastsTheWriteTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	for _, keep := range []bool{true, false} {
		e := echo.New()
		e.GET("/", func(c echo.Context) error {
			if keep {
				keepWriting(c, time.Minute)
			}
			<-time.After(4 * timeout) // the work outlasts the write timeout
			return c.String(http.StatusOK, "verdict")
		})
		srv := httptest.NewUnstartedServer(e)
		srv.Config.WriteTimeout = timeout
		srv.Start()
		resp, err := srv.Client().Get(srv.URL)
		if keep {
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "verdict", string(body))
			resp.Body.Close()
		} else {
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			assert.Error(t, err, "without it the server's write timeout cuts the response")
		}
		srv.Close()
	}
}
