package web

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/views"
)

// The navigation's count of requests waiting for the viewer's approval
// is on every page an approver sees. It is one capped query
// (replay.Service.Awaiting), and a person's count is kept by the process
// for navCountTTL: a page view of an approver costs no round trip for it
// (TestStatementsPerPage), and a change made through this process (any
// request that is not a GET: submit, approve, reject, cancel, stop...)
// makes every count read again. What changes elsewhere (another console
// replica, a draft or approval that expires) shows within navCountTTL.
const (
	navCountTTL = 10 * time.Second
	// navCountPeople bounds the people whose counts are kept: past it the
	// process starts over (a count is cheap to read again).
	navCountPeople = 10000
)

// navCounts keeps each person's count of requests waiting for them.
type navCounts struct {
	mu sync.Mutex
	// gen counts the changes this process made; a count read before the
	// latest is read again.
	gen    uint64
	counts map[string]navCount
}

type navCount struct {
	n   int
	gen uint64
	at  time.Time
}

// get returns the count kept under key if it is still current at now.
func (nc *navCounts) get(key string, now time.Time) (int, bool) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	c, ok := nc.counts[key]
	if !ok || c.gen != nc.gen || now.Sub(c.at) >= navCountTTL {
		return 0, false
	}
	return c.n, true
}

// generation is the change count to store a count read now under.
func (nc *navCounts) generation() uint64 {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.gen
}

// put keeps n under key, read at now in generation gen (a count read while
// a change happened is not kept as current).
func (nc *navCounts) put(key string, n int, gen uint64, now time.Time) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.counts == nil || len(nc.counts) >= navCountPeople {
		nc.counts = map[string]navCount{}
	}
	nc.counts[key] = navCount{n: n, gen: gen, at: now}
}

// forget makes every count be read again.
func (nc *navCounts) forget() {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.gen++
}

// recount is middleware for a route that may change requests (any method
// but GET): the navigation's counts are read again after it, and during
// it (a page it renders itself shows the change).
func (s *Server) recount(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if r.Method == http.MethodGet {
			return next
		}
		return func(c echo.Context) error {
			s.navCounts.forget()
			defer s.navCounts.forget()
			return next(c)
		}
	}
}

// awaiting counts the requests waiting for u's approval, for the
// navigation (up to one more than views.NavCountMost, shown as "99+"): a
// failure is logged and shows no count, not an error page.
func (s *Server) awaiting(c echo.Context, u authz.User) int {
	ctx := c.Request().Context()
	// The approvals page's scopes: the count is of what it lists.
	may := s.classScopes(ctx, u, authz.ActApprove)
	key := u.Issuer + "\x00" + u.Subject
	for _, m := range may {
		key += "\x00" + string(m.Class) + ":" + strings.Join(m.Tenants, ",")
		if m.All {
			key += ":*"
		}
	}
	now := time.Now()
	if n, ok := s.navCounts.get(key, now); ok {
		return n
	}
	gen := s.navCounts.generation()
	n, err := s.deps.Replays.Awaiting(ctx, may, u.Actor, views.NavCountMost+1)
	if err != nil {
		s.deps.Log.Warn("count requests awaiting approval", "err", err)
		return 0
	}
	s.navCounts.put(key, n, gen, now)
	return n
}
