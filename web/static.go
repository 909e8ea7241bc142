package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/views"
)

// staticFiles are the console's assets: htmx (vendored, see
// static/VENDOR.md), app.css, app.js and the favicon.
//
//go:embed static
var staticFiles embed.FS

// staticTypes are the content types of the files StaticHandler serves, by
// extension. Files with other extensions (VENDOR.md) are not served.
var staticTypes = map[string]string{
	".css":   "text/css; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
}

// staticAsset is one embedded file, read and hashed once at start.
type staticAsset struct {
	body        []byte
	contentType string
	// version is the first 12 hex digits of the sha256 of body.
	version string
	etag    string
}

// staticAssets maps a name below static/ ("app.css") to its file.
var staticAssets = loadStaticAssets()

func loadStaticAssets() map[string]staticAsset {
	assets := map[string]staticAsset{}
	err := fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := staticTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hexSum := hex.EncodeToString(sum[:])
		assets[strings.TrimPrefix(p, "static/")] = staticAsset{
			body:        body,
			contentType: ct,
			version:     hexSum[:12],
			etag:        `"` + hexSum[:32] + `"`,
		}
		return nil
	})
	if err != nil {
		// Reading an embed.FS cannot fail at run time; a failure here is a
		// build defect, not a condition to handle.
		panic("web: read embedded static files: " + err.Error())
	}
	return assets
}

// AssetPath returns the URL path of the static file name (relative to
// web/static, e.g. "app.css") with a cache-busting version:
// "/static/app.css?v=<first 12 hex digits of its sha256>". For a name that
// is not an embedded asset it returns "/static/<name>" without a version,
// which StaticHandler answers with 404.
func AssetPath(name string) string {
	a, ok := staticAssets[name]
	if !ok {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + a.version
}

// PageAssets returns the versioned paths of the stylesheet, app.js and htmx
// for views.Page.Assets.
func PageAssets() views.Assets {
	return views.Assets{
		CSS:  AssetPath("app.css"),
		JS:   AssetPath("app.js"),
		HTMX: AssetPath("htmx.min.js"),
	}
}

// StaticHandler serves the embedded assets on GET and HEAD /static/*, with
// an explicit content type, a strong ETag (If-None-Match gives 304) and
// "X-Content-Type-Options: nosniff". A request whose ?v= equals the file's
// current version (as AssetPath writes it) is cacheable for a year as
// immutable; any other request, including one with a stale version, gets
// "Cache-Control: no-cache" so that it is revalidated. Unknown names give
// echo.ErrNotFound, other methods echo.ErrMethodNotAllowed.
func StaticHandler() echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			return echo.ErrMethodNotAllowed
		}
		name := c.Param("*")
		if name == "" {
			name = strings.TrimPrefix(req.URL.Path, "/static/")
		}
		a, ok := staticAssets[name]
		if !ok {
			return echo.ErrNotFound
		}
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, a.contentType)
		h.Set("ETag", a.etag)
		h.Set(echo.HeaderXContentTypeOptions, "nosniff")
		if c.QueryParam("v") == a.version {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		// ServeContent answers If-None-Match, Range and HEAD.
		http.ServeContent(c.Response(), req, name, time.Time{}, bytes.NewReader(a.body))
		return nil
	}
}
