package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// pageOf is a component that writes n bytes of 'x' in chunks of 4 KB, as
// templ does, and then fails with fail when it is not nil.
func pageOf(n int, fail error) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		chunk := []byte(strings.Repeat("x", 4096))
		for n > 0 {
			k := min(n, len(chunk))
			if _, err := w.Write(chunk[:k]); err != nil {
				return err
			}
			n -= k
		}
		return fail
	})
}

func renderTo(t *testing.T, status int, comp templ.Component) (rec *httptest.ResponseRecorder, err error, aborted bool) {
	t.Helper()
	s := &Server{deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	rec = httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	defer func() {
		if r := recover(); r != nil {
			if r != http.ErrAbortHandler {
				panic(r)
			}
			aborted = true
		}
	}()
	return rec, s.render(c, status, comp), false
}

// TestRenderHoldsOnlyTheStartOfALongPage: a page longer than renderHeld is
// sent whole with its status, and what the render held never grew past
// renderHeld; a page that fails within what is held sends nothing, so the
// error page can answer; one that fails after sending began is cut off.
func TestRenderHoldsOnlyTheStartOfALongPage(t *testing.T) {
	long := 16 << 20
	rec, err, aborted := renderTo(t, http.StatusTeapot, pageOf(long, nil))
	if err != nil || aborted {
		t.Fatalf("long page: err %v, aborted %v", err, aborted)
	}
	if rec.Code != http.StatusTeapot || rec.Body.Len() != long || !strings.HasPrefix(rec.Header().Get(echo.HeaderContentType), "text/html") {
		t.Fatalf("long page: status %d, %d bytes of %d, content type %q", rec.Code, rec.Body.Len(), long, rec.Header().Get(echo.HeaderContentType))
	}

	held := &heldWriter{res: echo.NewResponse(httptest.NewRecorder(), echo.New()), status: http.StatusOK, held: templ.GetBuffer()}
	if err := pageOf(long, nil).Render(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	if held.held.Cap() > renderHeld+4096 {
		t.Errorf("held %d bytes of a %d-byte page; at most %d", held.held.Cap(), long, renderHeld)
	}

	boom := errors.New("boom")
	rec, err, aborted = renderTo(t, http.StatusOK, pageOf(renderHeld/2, boom))
	if !errors.Is(err, boom) || aborted || rec.Body.Len() != 0 || rec.Header().Get(echo.HeaderContentType) != "" {
		t.Fatalf("early failure: err %v, aborted %v, %d bytes sent, content type %q", err, aborted, rec.Body.Len(), rec.Header().Get(echo.HeaderContentType))
	}

	rec, _, aborted = renderTo(t, http.StatusOK, pageOf(2*renderHeld, boom))
	if !aborted {
		t.Fatalf("a failure after %d bytes were sent was not cut off (%d bytes sent)", rec.Body.Len(), rec.Body.Len())
	}
}
