package web

import (
	"maps"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
)

// formText reads the parameters of a filter or a form, a link's query or a
// posted body, as the text a person typed. A value PostgreSQL cannot store
// as text (dlq.StorableText: a NUL, or bytes that are not UTF-8, which a
// link carries as easily as a form: %00, %FF) is recorded at its parameter
// with dlq.UnstorableTextMessage, and read with U+FFFD for each bad byte
// (dlq.CleanText), so that the form shows it back to be corrected and no
// query ever sends it. Every filter and form reads its values here and adds
// its Errors to its own (422 at the field); errorStatus answers one a form
// missed, should PostgreSQL refuse it, as a 422 too.
type formText struct {
	vs   url.Values
	errs map[string]string
}

// readText reads vs (a query, or a form's values).
func readText(vs url.Values) *formText { return &formText{vs: vs} }

// readFormText reads the posted form of c (and its query); a body that is
// not a form is invalid.
func readFormText(c echo.Context) (*formText, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, quarantine.Errorf(quarantine.EINVALID, "The form could not be read.")
	}
	return readText(form), nil
}

// raw is parameter name as sent, checked.
func (f *formText) raw(name string) string {
	v := f.vs.Get(name)
	if dlq.StorableText(v) {
		return v
	}
	if f.errs == nil {
		f.errs = map[string]string{}
	}
	f.errs[name] = dlq.UnstorableTextMessage
	return dlq.CleanText(v)
}

// get is parameter name, checked, without surrounding white space of the
// kinds a subject cannot hold (trimSpace).
func (f *formText) get(name string) string { return trimSpace(f.raw(name)) }

// trimSpace is quarantine.TrimToken: s without the ASCII white space no
// subject token holds, other white space kept (a producer's tenant may end
// in U+00A0, and a link made from it must be read back as that tenant).
func trimSpace(s string) string { return quarantine.TrimToken(s) }

// Errors are the messages of the parameters read that are not storable
// text, by parameter; nil when there is none.
func (f *formText) Errors() map[string]string { return f.errs }

// addTextErrors is errs with the messages of unstorable text (formText)
// added, which say more than any other of the same field: nil when both are
// empty.
func addTextErrors(errs, text map[string]string) map[string]string {
	if len(text) == 0 {
		return errs
	}
	out := maps.Clone(errs)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, text)
	return out
}

// lfLines is text a browser sent from a text box (or a hidden field) with
// its line breaks as LF again: a browser sends every line break of a form
// as CRLF, whatever the text held.
func lfLines(text string) string { return strings.ReplaceAll(text, "\r\n", "\n") }
