package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func staticServer(t *testing.T) *echo.Echo {
	t.Helper()
	e := echo.New()
	e.GET("/static/*", StaticHandler())
	e.HEAD("/static/*", StaticHandler())
	return e
}

func get(t *testing.T, e *echo.Echo, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func fileSum(t *testing.T, name string) string {
	t.Helper()
	body, err := os.ReadFile("static/" + name)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func TestStaticHandler(t *testing.T) {
	t.Parallel()
	e := staticServer(t)

	t.Run("ContentTypes", func(t *testing.T) {
		t.Parallel()
		for name, want := range map[string]string{
			"app.css":     "text/css; charset=utf-8",
			"app.js":      "text/javascript; charset=utf-8",
			"htmx.min.js": "text/javascript; charset=utf-8",
			"favicon.svg": "image/svg+xml",
		} {
			rec := get(t, e, http.MethodGet, "/static/"+name, nil)
			require.Equal(t, http.StatusOK, rec.Code, name)
			assert.Equal(t, want, rec.Header().Get("Content-Type"), name)
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), name)
			body, err := os.ReadFile("static/" + name)
			require.NoError(t, err)
			assert.Equal(t, body, rec.Body.Bytes(), name)
		}
	})

	t.Run("UnversionedNoCache", func(t *testing.T) {
		t.Parallel()
		rec := get(t, e, http.MethodGet, "/static/app.css", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
		assert.NotEmpty(t, rec.Header().Get("ETag"))
	})

	t.Run("VersionedImmutable", func(t *testing.T) {
		t.Parallel()
		rec := get(t, e, http.MethodGet, AssetPath("app.js"), nil)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "public, max-age=31536000, immutable", rec.Header().Get("Cache-Control"))
	})

	t.Run("StaleVersionNoCache", func(t *testing.T) {
		t.Parallel()
		rec := get(t, e, http.MethodGet, "/static/app.js?v=000000000000", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
	})

	t.Run("NotModified", func(t *testing.T) {
		t.Parallel()
		first := get(t, e, http.MethodGet, "/static/app.css", nil)
		etag := first.Header().Get("ETag")
		require.NotEmpty(t, etag)
		rec := get(t, e, http.MethodGet, "/static/app.css", http.Header{"If-None-Match": {etag}})
		assert.Equal(t, http.StatusNotModified, rec.Code)
		assert.Empty(t, rec.Body.Bytes())
	})

	t.Run("Head", func(t *testing.T) {
		t.Parallel()
		rec := get(t, e, http.MethodHead, "/static/app.css", nil)
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "text/css; charset=utf-8", rec.Header().Get("Content-Type"))
		assert.Empty(t, rec.Body.Bytes())
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		for _, target := range []string{
			"/static/nope.css",
			"/static/VENDOR.md",
			"/static/",
			"/static/../static.go",
			"/static/%2e%2e/static.go",
			"/static/static/app.css",
		} {
			rec := get(t, e, http.MethodGet, target, nil)
			assert.Equal(t, http.StatusNotFound, rec.Code, target)
		}
	})
}

func TestAssetPath(t *testing.T) {
	t.Parallel()

	t.Run("HashMatches", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"app.css", "app.js", "htmx.min.js", "favicon.svg"} {
			assert.Equal(t, "/static/"+name+"?v="+fileSum(t, name)[:12], AssetPath(name), name)
		}
	})

	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, "/static/nope.css", AssetPath("nope.css"))
	})

	t.Run("PageAssets", func(t *testing.T) {
		t.Parallel()
		a := PageAssets()
		assert.Equal(t, AssetPath("app.css"), a.CSS)
		assert.Equal(t, AssetPath("app.js"), a.JS)
		assert.Equal(t, AssetPath("htmx.min.js"), a.HTMX)
	})
}

// TestVendoredHTMX checks that htmx.min.js is the file VENDOR.md records.
func TestVendoredHTMX(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("static/htmx.min.js")
	require.NoError(t, err)
	assert.Len(t, body, 52182)
	vendor, err := os.ReadFile("static/VENDOR.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(vendor), fileSum(t, "htmx.min.js")), "VENDOR.md must record the sha256 of htmx.min.js")
	assert.Contains(t, string(vendor), "2.0.11")
}
