package web

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// requestIDEncoding writes ids in lowercase base32 without padding.
var requestIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newRequestID returns 16 random characters (80 bits).
func newRequestID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return strings.ToLower(requestIDEncoding.EncodeToString(b))
}

type clientRequestIDKey struct{}

// maxClientRequestID bounds the client's X-Request-ID as logged.
const maxClientRequestID = 64

// withRequestID gives every request an id of the server's own, in the
// X-Request-ID response header, which handlers read for logs and audit rows
// and error pages show. An X-Request-ID the client sent is never used as
// the id (anyone could then choose what audit rows say); it is kept, cut to
// 64 printable ASCII characters, for logs beside the server's
// (ClientRequestID).
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(echo.HeaderXRequestID, newRequestID())
		if client := r.Header.Get(echo.HeaderXRequestID); client != "" {
			r = r.WithContext(context.WithValue(r.Context(), clientRequestIDKey{}, authz.ClientText(client, maxClientRequestID)))
		}
		next.ServeHTTP(w, r)
	})
}

// ClientRequestID returns the X-Request-ID the client sent, bounded, or "".
func ClientRequestID(ctx context.Context) string {
	s, _ := ctx.Value(clientRequestIDKey{}).(string)
	return s
}
