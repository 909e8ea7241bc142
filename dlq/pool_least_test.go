package dlq_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestPoolMaxConnsAtTheLeastIngestsPromptly: the least pool_max_conns a
// console takes (one ingest worker, one replay worker: 2 listeners + 1 +
// 1 + 2 for the sweep = 6) is enough for its background work: dead
// letters published one after another are each stored at once, and the
// listeners hold. (fixdocs10)
func TestPoolMaxConnsAtTheLeastIngestsPromptly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "6")
	u.RawQuery = q.Encode()

	ns := natstest.StartWithOptions(t, t.TempDir(), nil)
	oc := testidp.Start(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	subjects, err := replay.ParseSubjectAllowlist(testfactory.ReplaySubjects)
	require.NoError(t, err)
	cfg := app.Config{
		Version: "test", Addr: "127.0.0.1:0", DatabaseURL: u.String(), DBWait: 10 * time.Second,
		NATSURL: ns.ClientURL(), Prefix: dlq.DefaultSubjectPrefix, Stream: "DLQ", Replicas: 1,
		BatchSize: 1000, IngestWorkers: 1, BatchWait: 20 * time.Millisecond, AckWait: time.Minute,
		OIDC:     authz.OIDCConfig{Issuer: oc.Issuer, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, GroupsClaim: "groups"},
		OIDCWait: 10 * time.Second, IdleTimeout: time.Hour, Lifetime: 12 * time.Hour,
		Groups:      authz.GroupMap{Prefix: testfactory.GroupPrefix},
		AuditSigner: audit.NewSigner(priv), MetricsAddr: "127.0.0.1:0",
		Replay: app.ReplayConfig{PolicyFile: testfactory.PolicyFile(), Lease: 30 * time.Second, RevalidateTimeout: 2 * time.Second,
			Subjects: subjects, Workers: 1},
	}
	var log syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(&log, nil)))
	require.NoError(t, err, "pool_max_conns=6 is the least for one ingest and one replay worker")
	require.EqualValues(t, 6, a.Jobs.Config().MaxConns)
	testfactory.Serve(t, a)

	count := func() (n int) {
		require.NoError(t, db.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
		return n
	}
	began := time.Now()
	for i := 1; i <= 5; i++ {
		orig := nats.NewMsg("app.acme.email.send")
		orig.Data = []byte(fmt.Sprintf(`{"n":%d}`, i))
		msg, err := dlq.NewMessage("dlq", "acme", "email.send", orig, dlq.Origin{}, dlq.Failure{
			Err: errString("smtp timeout"), Class: dlq.ClassTransient, Consumer: "mailer"})
		require.NoError(t, err)
		require.NoError(t, a.NATS.PublishMsg(msg))
		require.NoError(t, wait.Poll(time.Minute, 20*time.Millisecond, func() error {
			if count() < i {
				return wait.ErrNotYet
			}
			return nil
		}), "dead letter %d never stored; log:\n%s", i, tail(log.String(), 3000))
	}
	require.Less(t, time.Since(began), 5*time.Second, "log:\n%s", tail(log.String(), 3000))
	require.NotContains(t, log.String(), "listener lost", "the listeners hold their connections")
}
