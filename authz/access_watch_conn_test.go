package authz

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestWatchReloadsOnItsOwnConnection: the listener holds its connection
// for good, so it reloads on it; with a pool of one connection (all the
// listener has) a binding added elsewhere is in force once its
// notification is heard, not after a reload that waits for a second
// connection and times out. (fixdocs10)
func TestWatchReloadsOnItsOwnConnection(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	a, err := NewAccess(ctx, one, GroupMap{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		a.Watch(ctx)
	}()
	t.Cleanup(func() { cancel(); <-watched })

	wait.Until(t, "the listener listening", 30*time.Second, func() bool { return a.watching.Load() })
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin"}}
	bob := User{Actor: quarantine.Actor{Issuer: "i", Subject: "bob", Email: "bob@example.com", EmailVerified: true}}
	require.False(t, a.Can(bob, "acme", ObjDeadLetter, ActRead))
	_, err = NewBindings(db.Pool).Add(ctx, BindingInput{Email: "bob@example.com", Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	// Well under the 10 s a reload waits for a connection before it fails.
	wait.Until(t, "the binding in force", 5*time.Second, func() bool { return a.Can(bob, "acme", ObjDeadLetter, ActRead) })
}
