package views

import "net/url"

// auditObjectFilterURL is the audit log filtered to one object, as the
// Object filter reads it ("type:id"; the id alone when it has no type).
func auditObjectFilterURL(typ, id string) string {
	v := id
	if typ != "" {
		v = typ + ":" + id
	}
	return PathAudit + "?" + url.Values{"object": {v}}.Encode()
}
