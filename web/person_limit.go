package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
)

// requestsFor bounds the requests one signed-in person has running at
// once on a replica, from the moment their session is read (enforce: the
// route's locator and the body are read after it) to the answer: half the
// web pool's connections (10 of the default 20), at least
// minRequestsPerPerson. A browser runs a handful at once (a page, its
// count, a poll), a person in several browsers a few more; a script
// looping over the pages with one person's cookie would otherwise hold
// every connection of the pool, which every request's session read needs
// too, and stall everyone's pages. A request past it waits up to
// personWait for one of theirs to finish (a restored browser session
// opening many tabs), then is refused (429). The emergency stop's routes
// have a bound of their own, stopsPerPerson, so that a person's other
// requests never hold back their stop, nor do their stops go unbounded.
func requestsFor(pool *pgxpool.Pool) int {
	if pool == nil {
		return minRequestsPerPerson
	}
	return max(minRequestsPerPerson, int(pool.Config().MaxConns)/2)
}

const (
	minRequestsPerPerson = 4
	stopsPerPerson       = 2
	personWait           = 2 * time.Second
)

// personRetryAfter is the Retry-After of a request refused for it, in
// seconds.
const personRetryAfter = 5

// personLimit holds each person's slots on this replica (by
// authz.User.Key, and apart for the stop's routes): n each.
type personLimit struct {
	n      int
	mu     sync.Mutex
	people map[string]*personSlots
}

// personSlots is one person's semaphore, and how many requests hold it or
// wait for it (refs: the entry goes when none do).
type personSlots struct {
	sem  chan struct{}
	refs int
}

// take takes one of key's n slots, waiting up to wait (or until ctx ends)
// for one; it returns the slot's release, or false.
func (l *personLimit) take(ctx context.Context, key string, n int, wait time.Duration) (func(), bool) {
	l.mu.Lock()
	if l.people == nil {
		l.people = map[string]*personSlots{}
	}
	p := l.people[key]
	if p == nil {
		p = &personSlots{sem: make(chan struct{}, n)}
		l.people[key] = p
	}
	p.refs++
	l.mu.Unlock()
	unref := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if p.refs--; p.refs == 0 {
			delete(l.people, key)
		}
	}
	select {
	case p.sem <- struct{}{}:
	default:
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case p.sem <- struct{}{}:
		case <-timer.C:
			unref()
			return nil, false
		case <-ctx.Done():
			unref()
			return nil, false
		}
	}
	return func() { <-p.sem; unref() }, true
}

// personSlot takes a slot of u's for route r (enforce, once the session is
// read), or answers 429.
func (s *Server) personSlot(c echo.Context, r Route, u authz.User) (func(), error) {
	key, n, what := u.Key(), s.people.n, "requests"
	if r.Perm.Action == authz.ActStop {
		key, n, what = key+"|stop", stopsPerPerson, "emergency stop requests"
	}
	release, ok := s.people.take(c.Request().Context(), key, n, personWait)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(personRetryAfter))
		return nil, echo.NewHTTPError(http.StatusTooManyRequests, fmt.Sprintf(
			"You have %d %s running at once on this console, as many as one person may: wait for them, then try again.", n, what))
	}
	return release, nil
}
