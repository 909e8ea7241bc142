package web

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// canonicalID reads text as an id the way the console writes one
// (strconv.FormatInt): decimal digits, no sign, no leading zero, above
// zero. Any other spelling of a number ("083", "+83") is no id: the
// audit rows of a request name its objects as its path does, and an
// object's trail and the log's Object filter look for the id as the
// console writes it, so a row naming "083" would be a probe of dead
// letter 83 that neither ever finds. Refusing the spelling before anything
// is looked up, rather than writing the number again in each row, keeps
// every row that names a path id, a denial or a download, in its object's
// trail, whoever writes the row now or later.
func canonicalID(text string) (int64, bool) {
	id, err := strconv.ParseInt(text, 10, 64)
	return id, err == nil && id > 0 && strconv.FormatInt(id, 10) == text
}

// pathID reads path parameter name as an id (canonicalID): false for one
// written any other way, which the caller answers as no such object.
func pathID(c echo.Context, name string) (int64, bool) {
	return canonicalID(c.Param(name))
}
