package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// replayConfig is what replay needs, in serve and in worker.
type replayConfig struct {
	PolicyFile        string
	Workers           int
	Subjects          *replay.SubjectAllowlist
	RevalidateSubject string
	RevalidateTimeout time.Duration
	Lease             time.Duration
	Groups            authz.GroupMap
}

func (s *settings) replay(c *replayConfig, defaultWorkers int) {
	s.str(&c.PolicyFile, "policy-file", "POLICY_FILE", "dev/policy.toml", "replay policy table (TOML)", checkRequired)
	s.integer(&c.Workers, "replay-workers", "REPLAY_WORKERS", defaultWorkers, "replay workers in this process (0: none)", 0, 64)
	var allow string
	s.str(&allow, "replay-subject-allow", "REPLAY_SUBJECT_ALLOW", "", "subject patterns replays may publish to, comma-separated (empty: all but $JS, $SYS, _INBOX)", func(v string) error {
		var err error
		c.Subjects, err = replay.ParseSubjectAllowlist(v)
		return err
	})
	s.str(&c.RevalidateSubject, "revalidate-subject", "REVALIDATE_SUBJECT", "", "NATS subject that answers revalidation requests for revalidate items (empty: they are blocked)", nil)
	s.duration(&c.RevalidateTimeout, "revalidate-timeout", "REVALIDATE_TIMEOUT", 2*time.Second, "wait for a revalidation answer", 10*time.Millisecond, time.Minute)
	s.duration(&c.Lease, "replay-lease", "REPLAY_LEASE", 30*time.Second, "how long a worker holds a claimed job", time.Second, 10*time.Minute)
}

// loadPolicy reads and validates the policy table; the error names the file,
// line and field.
func loadPolicy(path string) (*replaypolicy.Table, error) {
	t, err := replaypolicy.Load(path)
	if err != nil {
		return nil, fmt.Errorf("POLICY_FILE: %w", err)
	}
	return t, nil
}

// replayParts is the replay machinery of one process.
type replayParts struct {
	replays *replay.Service
	workers []*replay.Worker
}

func newReplayParts(ctx context.Context, cfg replayConfig, pool *pgxpool.Pool, nc *nats.Conn, js jetstream.JetStream,
	access *authz.Access, log *slog.Logger) (*replayParts, error) {
	table, err := loadPolicy(cfg.PolicyFile)
	if err != nil {
		return nil, err
	}
	p := &replayParts{replays: replay.New(pool, replay.Config{
		Policy: func() *replaypolicy.Table { return table }, Subjects: cfg.Subjects,
	})}
	voided, err := p.replays.VoidStale(ctx)
	if err != nil {
		return nil, err
	}
	log.Info("replay policy loaded", "file", cfg.PolicyFile, "version", table.Version(), "voided_requests", voided)
	var reval replay.Revalidator
	if cfg.RevalidateSubject != "" {
		reval = replay.NewNATSRevalidator(nc, cfg.RevalidateSubject, cfg.RevalidateTimeout)
	}
	auth := authz.Authority{Access: access, Directory: authz.NewDirectory(pool)}
	host, _ := os.Hostname()
	for i := range cfg.Workers {
		p.workers = append(p.workers, replay.NewWorker(p.replays, js, auth, reval, replay.WorkerConfig{
			Owner: fmt.Sprintf("%s-%d-%d", host, os.Getpid(), i), Lease: cfg.Lease,
		}, log))
	}
	return p, nil
}

// run runs the workers until ctx ends.
func (p *replayParts) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range p.workers {
		wg.Go(func() { w.Run(ctx) })
	}
	wg.Wait()
}

// runWorker is "console worker": replay workers only, for scaling them
// apart from the HTTP console.
func runWorker(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, natsURL, level, format, groups string
	var rc replayConfig
	s := newSettings("worker", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string", checkPostgresURL)
	s.str(&natsURL, "nats-url", "NATS_URL", "", "NATS server URLs", func(v string) error {
		if v == "" {
			return fmt.Errorf("is required for a separate worker")
		}
		return checkNATSURL(v)
	})
	s.replay(&rc, 4)
	s.str(&groups, "group-roles", "AUTHZ_GROUP_ROLES", "", "extra group mappings (as for serve)", func(v string) error {
		var err error
		rc.Groups, err = authz.ParseGroupMap(v)
		return err
	})
	s.str(&level, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.str(&format, "log-format", "LOG_FORMAT", "text", "text or json", checkOneOf("text", "json"))
	if err := s.parse(args); err != nil {
		return err
	}
	log := newLogger(stderr, level, format)
	pool, err := openPool(ctx, dsn, 30*time.Second, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool, log); err != nil {
		return err
	}
	nc, js, err := dialNATS(natsURL, "quarantine-worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	access, err := authz.NewAccess(ctx, pool, rc.Groups, log)
	if err != nil {
		return err
	}
	parts, err := newReplayParts(ctx, rc, pool, nc, js, access, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "console worker: %d replay workers\n", len(parts.workers))
	var wg sync.WaitGroup
	wg.Go(func() { access.Watch(ctx) })
	parts.run(ctx)
	wg.Wait()
	return nil
}

// dialNATS connects to url as name, reconnecting forever, with JetStream.
func dialNATS(url, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("NATS_URL %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}
