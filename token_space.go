package quarantine

import "strings"

// TokenSpace is the white space a value typed or linked as a subject
// token (a tenant, an item type) loses at its ends: the ASCII white space
// nats-server refuses in a subject's token (space, \t, \n, \f, \r), which
// is what a person types around a value or a form adds. No tenant taken
// from a subject ends in it.
const TokenSpace = " \t\n\f\r"

// TrimToken is s without surrounding TokenSpace. Other white space is
// kept: a producer's tenant or item type may end in it (U+00A0, or \v,
// are valid in a subject), and a value the console wrote from it must be
// read back as it was written, not as another tenant's.
func TrimToken(s string) string { return strings.Trim(s, TokenSpace) }
