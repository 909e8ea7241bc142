package web

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// requestsPerPerson bounds the requests one signed-in person has running
// at once on a replica. A browser runs a handful at once (a page, its
// count, a poll); a script looping over the lists with one person's cookie
// would otherwise hold the web pool's connections, which every request's
// session read needs too, and stall everyone's pages, the emergency stop's
// among them. Downloads have their own bounds (download_limit.go), and the
// emergency stop's routes are never refused.
const requestsPerPerson = 8

// personRetryAfter is the Retry-After of a request refused for it, in
// seconds.
const personRetryAfter = 5

// personLimit counts the requests each person has running on this
// replica (by authz.User.Key).
type personLimit struct {
	mu      sync.Mutex
	running map[string]int
}

// take counts one more request of person's, unless they have
// requestsPerPerson running.
func (l *personLimit) take(person string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[person] >= requestsPerPerson {
		return false
	}
	l.running[person]++
	return true
}

// done counts one of person's requests finished.
func (l *personLimit) done(person string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[person]--; l.running[person] <= 0 {
		delete(l.running, person)
	}
}

// limitPerson is the middleware of a route a signed-in person calls, after
// enforce: it counts their request for as long as its handler runs, and
// refuses one past requestsPerPerson (429), having done nothing. Public
// routes, downloads (bounded by kind) and the emergency stop's routes are
// not counted.
func (s *Server) limitPerson(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if r.Access == AccessPublic || r.Download != NoDownload || r.Perm.Action == authz.ActStop {
			return next
		}
		return func(c echo.Context) error {
			u := userOf(c)
			if !u.Identified() {
				return next(c)
			}
			person := u.Key()
			if !s.people.take(person) {
				c.Response().Header().Set("Retry-After", strconv.Itoa(personRetryAfter))
				return echo.NewHTTPError(http.StatusTooManyRequests, fmt.Sprintf(
					"You have %d requests running at once on this console, as many as one person may: wait for them, then try again. "+
						"(The emergency stop is never held back.)", requestsPerPerson))
			}
			defer s.people.done(person)
			return next(c)
		}
	}
}
