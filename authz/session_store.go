package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/audit"
)

// sessionStore keeps the browser's sessions in the sessions table (the
// layout of scs's pgxstore) with two differences that make a signed-in
// page cost one statement for its session instead of three:
//
//   - reading a session also reads the sign-in it names (user_sessions,
//     through sessions.user_session), which Login.Current then uses instead
//     of reading it again;
//   - a session is written only when its data changed or its idle deadline
//     must move on (at most once a minute), not after every request: an
//     unchanged session leaves no dead tuple behind.
//
// What a request read is kept in its context (WithSessionReads), so only
// requests that pass through WithSessionReads get the single read.
type sessionStore struct {
	pool  *pgxpool.Pool
	codec scs.Codec
	// idle is this replica's SESSION_IDLE_TIMEOUT: it ends a session idle
	// longer, whatever deadline another replica wrote (idle_from).
	idle time.Duration
	// now is this console's clock, which scs dates expiries by (tests
	// set it off the database's).
	now func() time.Time
	// slack is how far a stored idle deadline may lag the one a request
	// would set before the session is written again.
	slack time.Duration
	log   *slog.Logger
	stop  chan struct{}
}

// idleSlack is how far the idle deadline may lag: a session idle for its
// whole timeout may end up to this much early.
func idleSlack(idle time.Duration) time.Duration { return min(idle/10, time.Minute) }

// idleInterval is an idle timeout as selectSessionAndUser and
// sessionEnded take it (sent as an interval, not as text): NULL when there
// is none.
func idleInterval(idle time.Duration) pgtype.Interval {
	return pgtype.Interval{Microseconds: idle.Microseconds(), Valid: idle > 0}
}

// sessionRead is what one request read of its session: the stored data and
// deadline, and the sign-in it names.
type sessionRead struct {
	token  string
	data   []byte
	expiry time.Time
	// idleFrom is when a person's request last moved its idle deadline, on
	// the database's clock (nil: a session written before migration 0081);
	// ends is when this replica ends it unless a request moves it on: the
	// earlier of expiry and idleFrom plus this replica's idle timeout.
	idleFrom *time.Time
	ends     time.Time
	user     *userSession // nil when the session names none, or it is gone
	userID   string
	// accessVersion is the authorization policy's version (Access.Fresh).
	accessVersion int64
	// poll is set for a request a page makes by itself (PollHeader): it
	// does not move the idle deadline.
	poll bool
	// dbNow is the database's clock when the session was read, local this
	// process's (monotonic) at the same moment (Now).
	dbNow, local time.Time
}

// Now is the time a request judges "now" by where it compares with times
// the database or NATS dated (a dashboard's last hour, a list's "last 15
// minutes", whether the oldest dead letter is stale): the database's clock
// as this request's session read it (no round trip of its own), moved on
// by this process's monotonic clock; this process's clock when the request
// read no session. A console whose clock runs hours off would otherwise
// leave a current flood out of "last hour", and out of a filter of the
// last minutes, or keep the stale alarm off
// (TestNowIsTheDatabasesClockAsTheSessionReadIt).
func Now(ctx context.Context) time.Time {
	if rd := readOf(ctx); rd != nil && !rd.dbNow.IsZero() {
		return rd.now()
	}
	return time.Now()
}

// now is the database's clock now, as rd read it, moved on by this
// process's monotonic clock.
func (rd *sessionRead) now() time.Time { return rd.dbNow.Add(time.Since(rd.local)) }

// PollHeader marks a request that a page makes by itself, on a timer (the
// dashboard's refresh, a replay's progress), rather than a person's: such a
// request does not move the session's idle deadline, so an open tab nobody
// looks at is signed out after the idle timeout like a closed one. Pages
// send it with hx-headers on their polling elements.
const PollHeader = "Quarantine-Poll"

// PollParam marks, as PollHeader does, a GET a page makes by itself that
// cannot carry a header: the reload of a request's page that changed
// under it (HX-Refresh of a poll) goes to the page's address with
// ?poll=1 (app.js), which a person's reload, link or bookmark never has
// (app.js takes it off the address bar at once).
const PollParam = "poll"

// IsPoll reports whether r is a request a page made by itself (PollHeader,
// or PollParam on a GET).
func IsPoll(r *http.Request) bool {
	return r.Header.Get(PollHeader) != "" || (r.Method == http.MethodGet && r.URL.Query().Get(PollParam) == "1")
}

type sessionReadKey struct{}

// WithSessionReads gives each request a place for what the session store
// reads, and tells the store whether the request is a poll (IsPoll); wrap
// the session manager's LoadAndSave with it.
func WithSessionReads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionReadKey{}, &sessionRead{poll: IsPoll(r)})))
	})
}

func readOf(ctx context.Context) *sessionRead {
	r, _ := ctx.Value(sessionReadKey{}).(*sessionRead)
	return r
}

// The session, the sign-in it names and the authorization policy's
// version, in one statement; a session idle longer than this replica's
// timeout ($2; NULL: none) is none, whatever deadline another replica (one with a
// longer timeout, or from before the timeout was lowered) wrote.
const selectSessionAndUser = `SELECT s.data, s.expiry, s.idle_from, u.id, u.identity, u.refresh_token, u.refreshed_at, u.expires_at, u.ended_at IS NOT NULL,
    COALESCE((SELECT version FROM access_version), 0), now()
FROM sessions s LEFT JOIN user_sessions u ON u.id = s.user_session
WHERE s.token = $1 AND current_timestamp < s.expiry
  AND (s.idle_from IS NULL OR $2::interval IS NULL OR current_timestamp < s.idle_from + $2::interval)`

// sessionReadTimeout bounds the read of a request's session.
const sessionReadTimeout = 10 * time.Second

// FindCtx implements scs.CtxStore. The session is read whether or not the
// client still waits (its request's cancellation does not stop the read,
// sessionReadTimeout does): a refused attempt is audited under the person
// the session names, also when the client hung up as soon as it had sent
// the request.
func (s *sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionReadTimeout)
	defer cancel()
	var (
		data, identity         []byte
		expiry                 time.Time
		idleFrom               *time.Time
		uid, refreshToken      *string
		refreshedAt, expiresAt *time.Time
		ended                  *bool
		accessVersion          int64
		readAt                 time.Time
	)
	err := s.pool.QueryRow(rctx, selectSessionAndUser, token, idleInterval(s.idle)).Scan(&data, &expiry, &idleFrom, &uid, &identity, &refreshToken, &refreshedAt, &expiresAt, &ended, &accessVersion, &readAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if rd := readOf(ctx); rd != nil {
		*rd = sessionRead{token: token, data: data, expiry: expiry, ends: expiry, idleFrom: idleFrom, accessVersion: accessVersion, poll: rd.poll, dbNow: readAt, local: time.Now()}
		if idleFrom != nil && s.idle > 0 {
			rd.ends = minTime(expiry, idleFrom.Add(s.idle)) // this replica's idle deadline
		}
		if uid != nil {
			u := &userSession{ID: *uid, RefreshToken: refreshToken, RefreshedAt: *refreshedAt, ExpiresAt: *expiresAt, Ended: *ended, ReadAt: readAt}
			if err := json.Unmarshal(identity, &u.User); err != nil {
				return nil, false, fmt.Errorf("session %s identity: %w", *uid, err)
			}
			rd.user, rd.userID = u, *uid
		}
	}
	return data, true, nil
}

// upsertSession writes a session whose idle deadline a person's request
// moves: its expiry ($3, scs's: the earlier of its deadline and the idle
// timeout from now, on this console's clock $5) moved onto the database's
// clock (never earlier than another replica, with a longer timeout, set
// it), and idle_from now, the database's. A console whose clock runs
// behind the database's would otherwise shorten every session by the
// skew, to nothing once the skew reaches the timeout (review round 43).
const upsertSession = `INSERT INTO sessions (token, data, expiry, user_session, idle_from)
VALUES ($1, $2, $3::timestamptz + (now() - $5::timestamptz), $4, now())
ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, user_session = EXCLUDED.user_session, idle_from = EXCLUDED.idle_from,
    expiry = greatest(sessions.expiry, EXCLUDED.expiry) -- the latest any replica set: each judges idle_from by its own timeout`

// keepSessionIdle writes a session a poll changed, keeping its idle
// deadline and idle_from.
const keepSessionIdle = `UPDATE sessions SET data = $2, user_session = $3 WHERE token = $1`

// CommitCtx implements scs.CtxStore: it writes the session unless this
// request read it with the same data, a person's request moved its idle
// deadline less than the slack ago, and the deadline it would write is
// within the slack of the stored one (another replica's, whose timeout
// may be shorter: expiry is the latest any replica set, for the cleanup;
// each replica judges idle_from by its own). A poll (IsPoll) keeps the
// idle deadline it read: only a person's request moves it.
func (s *sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if err := s.commit(ctx, token, b, expiry); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionNotSaved, err)
	}
	return nil
}

// ErrSessionNotSaved marks a failed write of a browser's session (the
// store's CommitCtx), which scs reports to its ErrorFunc as the response
// starts, after the handler did its work: a change committed and audited,
// whose flash, say, was not saved with it. The ErrorFunc tells it from a
// session that could not be read (nothing was done) by this.
var ErrSessionNotSaved = errors.New("the session was not saved")

// commit is CommitCtx's write.
func (s *sessionStore) commit(ctx context.Context, token string, b []byte, expiry time.Time) error {
	deadline, values, err := s.codec.Decode(b)
	if err != nil {
		return fmt.Errorf("decode session: %w", err)
	}
	var user *string
	if id, ok := values[sessionIDKey].(string); ok && id != "" {
		user = &id
	}
	rd := readOf(ctx)
	if rd != nil && rd.token == token {
		same := false
		if d0, v0, err := s.codec.Decode(rd.data); err == nil && d0.Equal(deadline) && reflect.DeepEqual(v0, values) {
			same = true
		}
		if rd.poll {
			if same {
				return nil
			}
			_, err = s.pool.Exec(ctx, keepSessionIdle, token, b, user)
			return err
		}
		// The idle deadline this request would write, on the database's
		// clock (rd.local is this console's wall clock as it read dbNow).
		moved := expiry.Add(rd.dbNow.Sub(rd.local)).Sub(rd.expiry)
		if same && rd.idleFrom != nil && rd.now().Sub(*rd.idleFrom) < s.slack && moved < s.slack {
			return nil // nothing changed that is worth a write
		}
	}
	_, err = s.pool.Exec(ctx, upsertSession, token, b, expiry, user, s.now())
	return err
}

// DeleteCtx implements scs.CtxStore.
func (s *sessionStore) DeleteCtx(ctx context.Context, token string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE token = $1`, token)
	return err
}

// Find, Commit and Delete implement scs.Store (scs calls the Ctx ones).
func (s *sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s *sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s *sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// cleanup removes expired sessions every interval until stopped.
func (s *sessionStore) cleanup(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := s.removeExpired(ctx); err != nil {
			s.log.Warn("remove expired sessions", "err", err)
		}
		cancel()
	}
}

// endIdleSignIns removes the browser sessions past their deadline (idle,
// or the absolute lifetime) and ends the sign-ins only they held, as a
// sign-out would (their refresh token dropped), returning who signed in:
// a sign-in whose browser session is gone can never be used again, and
// kept live it stayed "signed in" on the admins' Sessions page, holding
// its refresh token, for the rest of its lifetime.
const endIdleSignIns = `WITH gone AS (
    DELETE FROM sessions s WHERE ` + sessionEnded + ` RETURNING user_session
)
UPDATE user_sessions u SET ended_at = now(), ended_reason = 'the browser session timed out', refresh_token = NULL
FROM (SELECT DISTINCT user_session FROM gone WHERE user_session IS NOT NULL) g
WHERE u.id = g.user_session AND u.ended_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_session = u.id AND NOT ` + sessionEnded + `)
RETURNING u.identity`

// sessionEnded is the condition that browser session s ended: its expiry
// passed, or it was idle longer than this replica's timeout ($1; NULL:
// none), as selectSessionAndUser ends it. The cleanup of a replica with a
// shorter timeout than another's removes sessions the other still serves
// (docs/access.md: give every replica the same value).
const sessionEnded = `(s.expiry <= current_timestamp OR (s.idle_from IS NOT NULL AND $1::interval IS NOT NULL AND s.idle_from + $1::interval <= current_timestamp))`

// removeExpired runs endIdleSignIns with an auth.session_end audit row
// for each sign-in it ends, in one transaction.
func (s *sessionStore) removeExpired(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, endIdleSignIns, idleInterval(s.idle))
		if err != nil {
			return err
		}
		identities, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return err
		}
		events := make([]audit.Event, 0, len(identities))
		for _, raw := range identities {
			var u User
			if err := json.Unmarshal(raw, &u); err != nil {
				return fmt.Errorf("ended sign-in identity: %w", err)
			}
			events = append(events, audit.Event{Actor: u.Actor, Action: "auth.session_end", Outcome: audit.OutcomeOK, ObjectType: "session",
				Reason: "the browser session timed out"})
		}
		if len(events) == 0 {
			return nil
		}
		_, err = audit.AppendBatch(ctx, tx, events)
		return err
	})
}

// loadedUserSession returns the sign-in id as this request's session read
// found it, if it did.
func loadedUserSession(ctx context.Context, id string) (userSession, bool) {
	rd := readOf(ctx)
	if rd == nil || rd.user == nil || rd.userID != id {
		return userSession{}, false
	}
	return *rd.user, true
}

// accessVersionRead returns the authorization policy's version as this
// request's session read found it, if it did.
func accessVersionRead(ctx context.Context) (int64, bool) {
	rd := readOf(ctx)
	if rd == nil || rd.token == "" {
		return 0, false
	}
	return rd.accessVersion, true
}

// SessionEnds is when the browser session this request read ends by
// itself unless a later request moves it on: its idle deadline as stored
// or the end of the sign-in it names, whichever comes first. Zero when the
// request read no session that names a sign-in.
func SessionEnds(ctx context.Context) time.Time {
	rd := readOf(ctx)
	if rd == nil || rd.token == "" || rd.user == nil {
		return time.Time{}
	}
	return minTime(rd.ends, rd.user.ExpiresAt)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
