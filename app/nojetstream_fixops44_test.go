package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestFixOps44StartRefusesNATSWithoutJetStream: against a NATS server
// without JetStream (nats-server without -js), or an account of a
// JetStream server that has none, nothing answers the JetStream API (no
// responders) or the server answers "not enabled for account" (a 503, as
// a cluster without a leader). serve took either for a cluster electing
// its leaders: it logged "waiting for JetStream" for the whole NATS_WAIT,
// then exited "JetStream did not answer", and console worker started and
// published nothing. Both now ask the account once and refuse at once,
// naming NATS_URL and JetStream not being enabled, having changed
// nothing (no replay policy made active).
func TestFixOps44StartRefusesNATSWithoutJetStream(t *testing.T) {
	t.Parallel()
	const natsWait = time.Minute
	for _, tc := range []struct {
		name  string
		tweak func(*server.Options)
		user  *url.Userinfo
	}{
		{"ServerWithoutJetStream", func(o *server.Options) { o.JetStream = false }, nil},
		{"AccountWithoutJetStream", func(o *server.Options) {
			acc := server.NewAccount("NOJS") // declared with no jetstream limits: JetStream is off for it
			o.Accounts = []*server.Account{acc}
			o.Users = []*server.User{{Username: "console", Password: "secret-pw", Account: acc}}
		}, url.UserPassword("console", "secret-pw")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.StartWithOptions(t, t.TempDir(), tc.tweak)
			natsURL := srv.ClientURL()
			if tc.user != nil {
				u, err := url.Parse(natsURL)
				require.NoError(t, err)
				u.User = tc.user
				natsURL = u.String()
			}
			cfg := consoleConfig(t, natsURL)
			cfg.NATSWait = natsWait
			db, err := pgxpool.New(context.Background(), cfg.DatabaseURL)
			require.NoError(t, err)
			t.Cleanup(db.Close)
			policies := func() int {
				var n int
				require.NoError(t, db.QueryRow(context.Background(),
					"SELECT (SELECT count(*) FROM replay_policy_active) + (SELECT count(*) FROM replay_policy_versions)").Scan(&n))
				return n
			}
			before := policies()

			refused := func(t *testing.T, what string, start func(*slog.Logger) error) {
				var logged logs.Buffer
				began := time.Now()
				err := start(slog.New(slog.NewTextHandler(&logged, nil)))
				require.Error(t, err, "%s started on NATS without JetStream", what)
				assert.Less(t, time.Since(began), natsWait/2, "%s waited for a JetStream that is not there", what)
				assert.True(t, errors.Is(err, dlq.ErrJetStreamNotEnabled), "%s: %v", what, err)
				assert.Contains(t, err.Error(), "NATS_URL "+app.Redact(natsURL)+": JetStream is not enabled on this server")
				assert.Contains(t, err.Error(), "or for this account")
				assert.NotContains(t, err.Error(), "did not answer")
				assert.NotContains(t, err.Error(), "secret-pw", "the password is never printed")
				assert.NotContains(t, logged.String(), "waiting for JetStream")
				assert.Equal(t, before, policies(), "%s made a replay policy active", what)
			}
			refused(t, "serve", func(log *slog.Logger) error {
				a, err := app.New(context.Background(), cfg, log)
				if err == nil {
					a.Close()
				}
				return err
			})
			refused(t, "console worker", func(log *slog.Logger) error {
				w, err := app.NewWorkers(context.Background(), app.WorkersConfig{
					DatabaseURL: cfg.DatabaseURL, DBWait: cfg.DBWait, NATSURL: natsURL, NATSWait: natsWait,
					MetricsAddr: app.MetricsOff, Replay: cfg.Replay,
				}, log)
				if err == nil {
					w.Close()
				}
				return err
			})
		})
	}
}
