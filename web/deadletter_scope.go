package web

import (
	"context"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// deadLetterTenants are the tenants where the caller may do act on dead
// letters: the tenants that have dead letters when the caller's role covers
// every tenant, else the tenants of their roles. Every triage query is
// restricted to them.
func (s *Server) deadLetterTenants(ctx context.Context, u authz.User, act string) []string {
	known := s.knownTenants(ctx)
	sc := s.deps.Access.Scope(u, authz.ObjDeadLetter, act, known)
	if sc.All {
		return known
	}
	return sc.Tenants
}

// itemTypes are the item types present in tenants, for the filter's
// choices (from the counters, not the table): every one, or when there are
// more than dlq.ItemTypeChoices, the most frequent as suggestions to a
// value typed (typed). Without them the filter still works: a failure is
// logged, not shown.
func (s *Server) itemTypes(ctx context.Context, tenants []string) (types []string, typed bool) {
	fs, err := s.deps.DeadLetters.Facets(ctx, tenants)
	if err != nil {
		s.deps.Log.Warn("read filter choices", "err", err)
	}
	return fs.ItemTypes, fs.ItemTypeCount > len(fs.ItemTypes)
}

// listURL is the quarantine list filtered by pairs of parameter and value
// (empty values left out).
func listURL(kv ...string) string { return views.PathDeadLetters + pairsQuery(kv...) }

// pairsQuery is the query string of pairs of parameter and value (empty
// values left out).
func pairsQuery(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return encodeQuery(q)
}

func deadLetterURL(id int64) string {
	return views.PathDeadLetters + "/" + strconv.FormatInt(id, 10)
}

// deadLetterID reads the :id parameter (pathID); a malformed one is a
// plain 404.
func deadLetterID(c echo.Context) (int64, bool) {
	return pathID(c, "id")
}

func statusOptions() []views.Option {
	out := []views.Option{{Value: views.StatusUnresolved, Label: "unresolved (any)"}}
	for _, st := range dlq.AllStatuses {
		out = append(out, views.Option{Value: string(st), Label: views.Label(string(st))})
	}
	return out
}
