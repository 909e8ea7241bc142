package web

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/quarantine-console/quarantine/authz"
)

// unknownParams are the names of q's parameters that are none of known
// (sorted; nil when there is none), a poll's mark (authz.PollParam) aside.
// A filter is refused with them, never applied without them: a misspelt or
// unsupported one would otherwise widen what it selects to everything
// without a word.
func unknownParams(q url.Values, known []string) []string {
	var out []string
	for name := range q {
		if name != authz.PollParam && !slices.Contains(known, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// unknownFilterText says that what (a page: "the audit log") has no filter
// of the names (unknown), each bounded and shown as printable ASCII, and
// which filters it has (filters).
func unknownFilterText(what string, unknown, filters []string) string {
	names := make([]string, 0, min(len(unknown), 6))
	for _, n := range unknown[:min(len(unknown), 5)] {
		names = append(names, strconv.Quote(authz.ClientText(n, 32)))
	}
	if len(unknown) > 5 {
		names = append(names, "…")
	}
	return what + " has no filter " + strings.Join(names, ", ") + "; it filters by " + strings.Join(filters, ", ") + "."
}
