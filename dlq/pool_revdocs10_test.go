package dlq_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
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

// syncBuffer is a log both the console and the test touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRevDocs10SmallPoolMaxConnsStallsIngest: README's DATABASE_URL row
// says pool_max_conns "is honoured for each of a process's pools", and
// "Deploying at scale" tells operators to "size the sum × replicas under
// max_connections", which is what pool_max_conns in DATABASE_URL is for.
// But the background pool keeps two of its connections for good (the
// counters' LISTEN, dlq/snapshot.go, and the authorization policy's
// LISTEN, authz/access.go): with pool_max_conns=2 nothing else of the
// background work ever gets a connection. Ingest, the keeper, the
// checkpoints and the replay workers wait in Acquire for ever; /readyz
// stays 200 (the web pool answers), and dead letters pile up unstored
// until the DLQ stream's limits discard them. Nothing refuses or warns at
// start. A fix either refuses such a value at start, naming pool_max_conns
// and the least the background pool needs, or keeps the listeners'
// connections (or the pool's floor) out of the operator's number; this
// test takes either. (review revdocs10)
func TestRevDocs10SmallPoolMaxConnsStallsIngest(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "2")
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
	if err != nil {
		// Refused at start: fine when it names the setting.
		require.Contains(t, err.Error(), "pool_max_conns", "a refusal must name pool_max_conns")
		return
	}
	testfactory.Serve(t, a)

	// Five dead letters, each published once the one before is stored: a
	// console whose background pool works stores each in milliseconds.
	count := func() (n int) {
		require.NoError(t, db.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
		return n
	}
	began := time.Now()
	var slowest time.Duration
	for i := 1; i <= 5; i++ {
		orig := nats.NewMsg("app.acme.email.send")
		orig.Data = []byte(fmt.Sprintf(`{"n":%d}`, i))
		msg, err := dlq.NewMessage("dlq", "acme", "email.send", orig, dlq.Origin{}, dlq.Failure{
			Err: errString("smtp timeout"), Class: dlq.ClassTransient, Consumer: "mailer"})
		require.NoError(t, err)
		sent := time.Now()
		require.NoError(t, a.NATS.PublishMsg(msg))
		err = wait.Poll(time.Minute, 20*time.Millisecond, func() error {
			if count() < i {
				return wait.ErrNotYet
			}
			return nil
		})
		require.NoError(t, err, "dead letter %d never stored; log:\n%s", i, tail(log.String(), 3000))
		slowest = max(slowest, time.Since(sent))
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("with pool_max_conns=2 in DATABASE_URL (README: honoured for each pool) the console started without a word and took %s "+
			"to store five dead letters one after another (the slowest %s): the background pool's two connections are the "+
			"counters' LISTEN and the authorization policy's LISTEN, whose reload waits for a third until its 10 s timeout, "+
			"again and again, while ingest waits behind it; log:\n%s", took.Round(time.Millisecond), slowest.Round(time.Millisecond), tail(log.String(), 3000))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
