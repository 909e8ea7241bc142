package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"
)

// Kinds of anonymous denial, the values of the metric's "kind" label (a
// fixed set: nothing a client sends becomes a label).
const (
	DenialCrossOrigin = "cross_origin"   // an unsafe request from another site, without a session
	DenialLoginState  = "login_state"    // a callback without a known sign-in state
	DenialLoginFlow   = "login_flow"     // a sign-in that took too long, or lacked PKCE
	DenialLoginIdP    = "login_provider" // the provider answered with an error, or refused the code
	DenialLoginToken  = "login_token"    // an ID token that does not verify or is not for this sign-in
	DenialLoginRate   = "login_rate"     // a callback over the limit of code exchanges (exchangeLimits)
)

// AnonymousDenials records refusals of clients who are not signed in: it
// counts every one (quarantine_anonymous_denials_total{kind}) and logs them
// at a bounded rate. They are never written to the audit log: anyone who
// can reach the console can cause them, and a permanent, hash-chained table
// with a global append lock must not grow or stall at a stranger's will.
// Refusals of signed-in people are audited as before.
type AnonymousDenials struct {
	total      *prometheus.CounterVec
	limiter    *rate.Limiter
	suppressed atomic.Int64
	log        *slog.Logger
}

// Log lines for anonymous denials: a burst of this many, then this many a
// second; the rest are counted and reported with the next line.
const (
	denialLogBurst = 20
	denialLogRate  = 2
)

// NewAnonymousDenials returns a recorder whose counter is registered with
// reg (nil: not registered, for tests that do not read it).
func NewAnonymousDenials(reg prometheus.Registerer, log *slog.Logger) *AnonymousDenials {
	d := &AnonymousDenials{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_anonymous_denials_total",
			Help: "Requests refused before anyone signed in (cross-site requests, failed sign-in callbacks), by kind. Logged at a bounded rate, never audited.",
		}, []string{"kind"}),
		limiter: rate.NewLimiter(denialLogRate, denialLogBurst),
		log:     log,
	}
	for _, k := range []string{DenialCrossOrigin, DenialLoginState, DenialLoginFlow, DenialLoginIdP, DenialLoginToken, DenialLoginRate} {
		d.total.WithLabelValues(k) // present at 0 from the start
	}
	if reg != nil {
		reg.MustRegister(d.total)
	}
	return d
}

// Total returns how many denials of kind were recorded.
func (d *AnonymousDenials) Total(kind string) float64 {
	var m dto.Metric
	if err := d.total.WithLabelValues(kind).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Record counts a refusal of an anonymous client and logs it unless the log
// rate is spent. Every client-supplied value in the line is cut to a short
// bound; requestID is the server's own id for the request.
func (d *AnonymousDenials) Record(r *http.Request, kind, reason, requestID string) {
	d.total.WithLabelValues(kind).Inc()
	if !d.limiter.Allow() {
		d.suppressed.Add(1)
		return
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	attrs := []any{
		"kind", kind, "reason", clip(reason, 200), "method", r.Method, "path", clip(r.URL.Path, 200),
		"remote", host, "user_agent", clip(r.UserAgent(), 120), "origin", clip(r.Header.Get("Origin"), 120),
		"request_id", requestID, "client_request_id", ClientText(r.Header.Get("X-Request-Id"), 64),
	}
	if n := d.suppressed.Swap(0); n > 0 {
		attrs = append(attrs, "not_logged_before", n)
	}
	d.log.Warn("refused an anonymous request", attrs...)
}

// clip returns s cut to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ClientText returns s cut to n bytes with everything but printable ASCII
// replaced by '?': a value a client sent, made safe for a log line.
func ClientText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// Denials of signed-in people in requests another site started (a link on
// another site to an object or page outside their scope) are audited under
// them like any other, their reason saying so, but no more often than this:
// a burst of crossSiteBurst, then one every crossSiteEvery. A page can send
// a person's browser to such links as often as it likes; the audit log is
// permanent and hash-chained. The refusals of a signed-in person who holds
// no role (every page is refused to them) share the same allowance. Denials the browser says the console's own
// pages started (or that come without fetch metadata) are not limited.
const (
	crossSiteBurst = 10
	crossSiteEvery = time.Minute
	// crossSitePeople bounds the people tracked; past it, those whose
	// allowance is whole again are forgotten.
	crossSitePeople = 10000
	// crossSiteSessions bounds the sessions remembered (Remember, and
	// Forget's notes of ended ones); past it, those noted crossSiteEvery
	// ago or longer are dropped, and if that frees none, all of them: each
	// costs one read to learn again.
	crossSiteSessions = 10000
)

// CrossSiteDenials limits, per person, the denial rows of requests another
// site started, and of people who hold no role. The zero value is not usable: see NewCrossSiteDenials.
type CrossSiteDenials struct {
	mu       sync.Mutex
	people   map[string]*crossSitePerson
	sessions map[string]crossSiteSession // by the caller's key of a session (SessionKey)
	// revoked is when the sessions of a person were all ended
	// (ForgetPerson), kept for crossSiteEvery: a read of one of them from
	// before then is not remembered.
	revoked map[string]time.Time
	log     *slog.Logger
}

type crossSitePerson struct {
	limiter   *rate.Limiter
	unwritten int64 // refused since the last row written
}

// crossSiteSession is whom a session signed in, when that was read and
// when the session ends by itself; or, ended, that it ended at read.
type crossSiteSession struct {
	person string
	read   time.Time
	until  time.Time // zero: not known
	// ended marks a session that ended (Forget): it signs nobody in ever
	// again, and a read of it from before its end is not remembered.
	ended bool
}

// NewCrossSiteDenials returns an empty limiter that logs through log.
func NewCrossSiteDenials(log *slog.Logger) *CrossSiteDenials {
	return &CrossSiteDenials{people: map[string]*crossSitePerson{}, sessions: map[string]crossSiteSession{},
		revoked: map[string]time.Time{}, log: log}
}

// SessionKey is what CrossSiteDenials knows a browser session by: a hash
// of its token (the session cookie's value), so that the token itself is
// not kept.
func SessionKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Remember notes that session (SessionKey) signed in person when read at
// read, and that it ends by itself at until (its idle deadline or its
// sign-in's end, whichever comes first; zero: not known), for Refused to
// answer until then, and for crossSiteEvery at most, without the session
// being read again. A session that ended since (Forget), or whose person's
// sessions were all ended since read (ForgetPerson), is not remembered.
func (d *CrossSiteDenials) Remember(session, person string, read, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.sessions[session]; ok && s.ended {
		return
	}
	if t, ok := d.revoked[person]; ok && !read.After(t) {
		return
	}
	d.roomFor(session, read, true)
	d.sessions[session] = crossSiteSession{person: person, read: read, until: until}
}

// Forget notes that session (SessionKey) ended at now (signed out, ended
// at a refresh, replaced by a new sign-in, or found to sign nobody in):
// Refused no longer answers for it, and a read of it that raced its end
// is not remembered. The note is kept while there is room for it: one
// that would evict others is not, and such a race may then leave the
// session remembered, as signing its person in, for crossSiteEvery.
func (d *CrossSiteDenials) Forget(session string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.roomFor(session, now, false) {
		delete(d.sessions, session)
		return
	}
	d.sessions[session] = crossSiteSession{read: now, ended: true}
}

// ForgetPerson notes that every session of person ended at now (an
// administrator signed them out everywhere): none of them is remembered,
// nor is a read of one from before now. Their count of unwritten denials
// is kept: it is about their audit rows, not their sessions.
func (d *CrossSiteDenials) ForgetPerson(person string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, s := range d.sessions {
		if s.person == person && !s.ended {
			delete(d.sessions, k)
		}
	}
	for p, t := range d.revoked {
		if now.Sub(t) >= crossSiteEvery {
			delete(d.revoked, p)
		}
	}
	d.revoked[person] = now
}

// roomFor reports whether session may be noted at now: it is noted
// already, or there is room. Without room, when evict, the notes
// crossSiteEvery old or older are dropped, and if that frees none, all of
// them (each costs one read to learn again).
func (d *CrossSiteDenials) roomFor(session string, now time.Time, evict bool) bool {
	if _, ok := d.sessions[session]; ok || len(d.sessions) < crossSiteSessions {
		return true
	}
	if !evict {
		return false
	}
	for k, s := range d.sessions {
		if now.Sub(s.read) >= crossSiteEvery {
			delete(d.sessions, k)
		}
	}
	if len(d.sessions) >= crossSiteSessions {
		clear(d.sessions)
	}
	return true
}

// Refused reports whether a denial another site started in session would
// not be written at now because the person the session signed in (as
// Remember was told less than crossSiteEvery before, and before the
// session's end) is over the limit; it is then counted for their next row,
// as Allow counts one, and the caller needs to read nothing. False when
// the session is not remembered, ended (Forget, ForgetPerson), reached its
// own end, or was read too long ago (it may have ended since, elsewhere):
// the caller reads it and asks Allow. A person over the limit thus costs
// at most one read of each of their sessions a crossSiteEvery.
func (d *CrossSiteDenials) Refused(session string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sessions[session]
	if !ok || s.ended || now.Sub(s.read) >= crossSiteEvery || (!s.until.IsZero() && !now.Before(s.until)) {
		return false
	}
	p := d.people[s.person]
	if p == nil || p.limiter.TokensAt(now) >= 1 {
		return false
	}
	d.refuse(s.person, p)
	return true
}

// Admission is what Allow decided of one limited denial.
type Admission struct {
	// Write is whether the denial's row may be written; one that may not
	// is counted for the person's next row.
	Write bool
	// Unwritten is how many of the person's denials were not written
	// since their last row: the row says so.
	Unwritten int64
	// Spent is whether the row takes the last of the person's allowance:
	// their next denials, until it refills (one a crossSiteEvery), are
	// counted, not written, and the row says so, so that a log whose rows
	// of the person stop there does not read as complete (the count
	// itself reaches the log with their next row written).
	Spent bool
}

// Allow decides whether a denial of person (issuer and subject) that
// another site started, or of a person who holds no role, may be written
// at now, and what its row says of the others (Admission).
func (d *CrossSiteDenials) Allow(person string, now time.Time) Admission {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.people[person]
	if p == nil {
		if len(d.people) >= crossSitePeople {
			d.forget(now)
		}
		p = &crossSitePerson{limiter: rate.NewLimiter(rate.Every(crossSiteEvery), crossSiteBurst)}
		d.people[person] = p
	}
	if !p.limiter.AllowN(now, 1) {
		d.refuse(person, p)
		return Admission{}
	}
	a := Admission{Write: true, Unwritten: p.unwritten, Spent: p.limiter.TokensAt(now) < 1}
	p.unwritten = 0
	return a
}

// refuse counts a denial of person p over the limit for their next row,
// and logs the first of a run.
func (d *CrossSiteDenials) refuse(person string, p *crossSitePerson) {
	if p.unwritten == 0 {
		d.log.Warn("limited denials (started by another site, or of a person without a role): over the limit, not audited until the next one is",
			"person", person)
	}
	p.unwritten++
}

// forget drops the people whose allowance is whole again and who have no
// unwritten denials: nothing of theirs is lost.
func (d *CrossSiteDenials) forget(now time.Time) {
	for s, p := range d.people {
		if p.unwritten == 0 && p.limiter.TokensAt(now) >= crossSiteBurst {
			delete(d.people, s)
		}
	}
}
