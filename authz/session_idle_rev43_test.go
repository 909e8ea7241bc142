package authz

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// idleProbe serves /put (signs someone in) and /get (401 without them)
// through m, as the console wraps its session manager.
func idleProbe(m *scs.SessionManager) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/put", func(w http.ResponseWriter, r *http.Request) { m.Put(r.Context(), "who", "alice") })
	mux.HandleFunc("/get", func(w http.ResponseWriter, r *http.Request) {
		if m.GetString(r.Context(), "who") == "" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	return WithSessionReads(m.LoadAndSave(mux))
}

func idleGet(t *testing.T, h http.Handler, path string, c *http.Cookie) (int, *http.Cookie) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == SessionCookie {
			return rec.Code, ck
		}
	}
	return rec.Code, c
}

// TestRev43EachReplicaEndsSessionsIdleLongerThanItsTimeout: replicas with
// SESSION_IDLE_TIMEOUT 15m (A) and 8h (B), as during a rollout that lowers
// it. One request on B wrote an 8 h idle deadline, which A never wrote
// earlier: A served the session after an hour idle. Each replica now ends
// a session idle longer than its own timeout (idle_from), and B still
// serves it by its own.
func TestRev43EachReplicaEndsSessionsIdleLongerThanItsTimeout(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	a, stopA := NewSessions(db.Pool, SessionConfig{IdleTimeout: 15 * time.Minute})
	defer stopA()
	b, stopB := NewSessions(db.Pool, SessionConfig{IdleTimeout: 8 * time.Hour})
	defer stopB()
	ha, hb := idleProbe(a), idleProbe(b)
	idle := func(d string) {
		_, err := db.Pool.Exec(ctx, `UPDATE sessions SET expiry = expiry - $1::interval, idle_from = idle_from - $1::interval`, d)
		require.NoError(t, err)
	}

	_, ck := idleGet(t, ha, "/put", nil)
	code, ck := idleGet(t, hb, "/get", ck)
	require.Equal(t, http.StatusOK, code)
	idle("5 minutes")
	code, _ = idleGet(t, ha, "/get", ck)
	assert.Equal(t, http.StatusOK, code, "A ended a session idle 5 minutes")

	idle("1 hour")
	code, _ = idleGet(t, ha, "/get", ck)
	assert.Equal(t, http.StatusUnauthorized, code, "A (idle 15m) served a session idle for an hour")
	code, _ = idleGet(t, hb, "/get", ck)
	assert.Equal(t, http.StatusOK, code, "B (idle 8h) ended a session idle for an hour")
}

// TestRev43ConsoleBehindTheDatabaseKeepsItsSessions: scs dates a session's
// idle deadline by the console's clock, and the store judged it by the
// database's: a console 20 minutes behind, with a 15 minute timeout, wrote
// sessions already expired, and every sign-in looped back to the login.
// The expiry is now moved onto the database's clock as it is written.
func TestRev43ConsoleBehindTheDatabaseKeepsItsSessions(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	m, stop := NewSessions(db.Pool, SessionConfig{IdleTimeout: 15 * time.Minute})
	defer stop()
	st := m.Store.(*sessionStore)
	consoleNow := time.Now().Add(-20 * time.Minute)
	st.now = func() time.Time { return consoleNow }
	b, err := m.Codec.Encode(consoleNow.Add(12*time.Hour), map[string]any{"who": "alice"})
	require.NoError(t, err)
	require.NoError(t, st.CommitCtx(ctx, "tok", b, consoleNow.Add(15*time.Minute))) // what scs passes: its clock plus the timeout
	_, found, err := st.FindCtx(ctx, "tok")
	require.NoError(t, err)
	assert.True(t, found, "a session a console 20 minutes behind the database just wrote is gone")
	var idle time.Duration
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT expiry - idle_from FROM sessions WHERE token = 'tok'`).Scan(&idle))
	assert.Equal(t, 15*time.Minute, idle, "expiry is the idle timeout after idle_from, both on the database's clock")
}
