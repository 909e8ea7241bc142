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

// repeatedParams are the names of names (a page's filter and own
// parameters) that q gives more than once (sorted; nil when there is
// none). Each takes one value, and read as the first of them a repeated
// one answers another question than the one asked: the filter form sends
// "tenant=" for any tenant, so "&tenant=acme" added to its URL by hand
// would select every tenant. A filter is refused with them.
func repeatedParams(q url.Values, names []string) []string {
	var out []string
	for _, n := range names {
		if len(q[n]) > 1 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// repeatedFilterText says that the filters named (repeated:
// repeatedParams) were given more than once, and take one value; then
// says what was not done, and why.
func repeatedFilterText(repeated []string, then string) string {
	names := make([]string, 0, min(len(repeated), 6))
	for _, n := range repeated[:min(len(repeated), 5)] {
		names = append(names, strconv.Quote(authz.ClientText(n, 32)))
	}
	if len(repeated) > 5 {
		names = append(names, "…")
	}
	subject := "The filter " + names[0] + " is"
	if len(names) > 1 {
		subject = "The filters " + strings.Join(names, ", ") + " are"
	}
	return subject + " given more than once; each filter takes one value. " + then
}
