package web

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
)

// DownloadKind is what a GET that sends a file sends, and so how many of
// it may run at once (downloadBounds). The route table declares it
// (Route.sends, Route.downloads); limitDownload applies it.
type DownloadKind int

// Kinds of download.
const (
	NoDownload DownloadKind = iota
	// DownloadExport streams from a read-only transaction on the web pool
	// for as long as the client takes to read it (up to the write timeout
	// and exportStatementTimeout, 5 min each): each one running holds one
	// of the connections every page needs.
	DownloadExport
	// DownloadPayload is a payload read whole (up to max_payload, 8 MiB),
	// then written: it holds no connection, only its bytes, while a slow
	// client reads them.
	DownloadPayload
	// DownloadText is a dead letter's whole error, headers or stack trace
	// (its .txt and .json downloads), held as a payload is and as large
	// (they are headers, bounded by max_payload only), but needing only
	// the read right: bounded on its own, so that payloads being read do
	// not keep a person from the stack trace, and the other way round.
	DownloadText
)

// downloadBound is how many downloads of a kind may run at once: per
// person on this replica, and on this replica in all; one and many name
// the kind in the refusal's sentence.
type downloadBound struct {
	perPerson, perReplica int
	one, many             string
}

// downloadBounds are the bounds of each kind. Exports: one per person, and
// at most three on a replica (fewer with a small web pool: exportsFor), so
// that one person's unread exports, a script's or a browser's on a bad
// link, never hold the connections the pages need: the dashboard, the
// lists and the emergency stop keep working for everyone. Payloads: two
// per person (a reviewer downloads the original and the edited payload),
// eight on a replica (64 MiB of payloads waiting for slow readers at most);
// dead letter texts the same (64 MiB more at most).
// Another one is answered 429 at once with a sentence and Retry-After.
var downloadBounds = map[DownloadKind]downloadBound{
	DownloadExport:  {perPerson: 1, perReplica: 3, one: "an export", many: "exports"},
	DownloadPayload: {perPerson: 2, perReplica: 8, one: "a download", many: "downloads"},
	DownloadText:    {perPerson: 2, perReplica: 8, one: "a download", many: "downloads"},
}

// downloadRetryAfter is the Retry-After of a refused download, in seconds.
const downloadRetryAfter = 30

// exportsFor is the export bound for a web pool of pool's size: at most a
// quarter of its connections (and at least one), so that a pool made small
// with pool_max_conns still leaves the pages most of it.
func exportsFor(pool *pgxpool.Pool) downloadBound {
	b := downloadBounds[DownloadExport]
	if pool != nil {
		b.perReplica = max(1, min(b.perReplica, int(pool.Config().MaxConns)/4))
	}
	return b
}

// downloadLimit counts the downloads of one kind running on this replica,
// in all and per person.
type downloadLimit struct {
	bound   downloadBound
	mu      sync.Mutex
	total   int
	running map[string]int // by authz.User.Key
}

func newDownloadLimit(b downloadBound) *downloadLimit {
	return &downloadLimit{bound: b, running: map[string]int{}}
}

// take counts one more download of person's, unless one of the bounds is
// reached: then it reports which (yours: the person's own).
func (l *downloadLimit) take(person string) (ok, yours bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.running[person] >= l.bound.perPerson:
		return false, true
	case l.total >= l.bound.perReplica:
		return false, false
	}
	l.running[person]++
	l.total++
	return true, false
}

// done counts one of person's downloads finished.
func (l *downloadLimit) done(person string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.running[person]--; l.running[person] <= 0 {
		delete(l.running, person)
	}
}

// downloadLimits are the limits of each kind of download on this replica.
type downloadLimits map[DownloadKind]*downloadLimit

func newDownloadLimits(pool *pgxpool.Pool) downloadLimits {
	out := downloadLimits{}
	for kind, b := range downloadBounds {
		if kind == DownloadExport {
			b = exportsFor(pool)
		}
		out[kind] = newDownloadLimit(b)
	}
	return out
}

// limitDownload is the middleware of a download route (Route.Download):
// after enforce, it counts the signed-in person's download for as long as
// its handler runs, which for an export is as long as the stream, and
// answers 429 with Retry-After when a bound of its kind is reached
// (downloadBounds). Other routes pass.
func (s *Server) limitDownload(r Route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		l := s.downloads[r.Download]
		if l == nil {
			return next
		}
		return func(c echo.Context) error {
			person := userOf(c).Key()
			ok, yours := l.take(person)
			if !ok {
				c.Response().Header().Set("Retry-After", strconv.Itoa(downloadRetryAfter))
				return echo.NewHTTPError(http.StatusTooManyRequests, busyText(l.bound, yours))
			}
			defer l.done(person)
			return next(c)
		}
	}
}

// busyText is the sentence of a download refused by bound b: the
// person's own downloads of its kind (yours), or everyone's on this
// replica, are at the bound.
func busyText(b downloadBound, yours bool) string {
	if yours {
		running := b.one
		if b.perPerson > 1 {
			running = fmt.Sprintf("%d %s", b.perPerson, b.many)
		}
		return "You have " + running + " running already, as many as one person may at a time. " +
			"Let it finish, or cancel it in your browser's downloads, then start this one again."
	}
	return "The console is sending as many " + b.many + " as it can at once, so that its pages stay quick for everyone. " +
		"Try again in a minute."
}
