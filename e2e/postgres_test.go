package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// privatePostgres is a PostgreSQL cluster of the test's own, in a temporary
// directory on a free port, for tests that restart PostgreSQL: restarting
// it disturbs nobody else. The postgres server runs in the foreground as a
// child of the test (as the postgres user when the test runs as root:
// initdb refuses root), so the test stops it whatever happens.
type privatePostgres struct {
	Port    int
	DataDir string
	// URL is the connection string of database "quarantine" as the runtime
	// role (quarantine_app, a member of quarantine_runtime): the console's
	// DATABASE_URL. OwnerURL is as its owner (quarantine_owner), which
	// migrated it.
	URL      string
	OwnerURL string
	proc     *proc
}

// pgStopTimeout bounds a fast shutdown.
const pgStopTimeout = 30 * time.Second

// startPrivatePostgres runs initdb and starts the server, with durability
// that survives a process crash (synchronous_commit on; fsync off only
// matters for an OS crash), and sets it up as docs/access.md tells an
// operator to: the owner and runtime roles, the database "quarantine" owned
// by the owner, migrated with `console migrate`.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bin := postgresBinDir(t)
	cred := postgresCredential(t)
	// Not t.TempDir(): its parent is private to root, and the server runs
	// as postgres.
	dir, err := os.MkdirTemp("", "quarantine-e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	pg := &privatePostgres{Port: freePort(t), DataDir: filepath.Join(dir, "data")}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", pg.DataDir, "-U", "app", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	pg.proc = startProc(t, &proc{
		name: "postgres", bin: filepath.Join(bin, "postgres"), cred: cred,
		stopSignal: syscall.SIGINT, // fast shutdown: roll back open transactions, close connections
		args: []string{"-D", pg.DataDir, "-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-k", dir,
			"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=on",
			"-c", "max_connections=100", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning"},
	})
	pg.waitReady(t)
	admin := fmt.Sprintf("postgres://app@127.0.0.1:%d/postgres?sslmode=disable", pg.Port)
	conn, err := pgx.Connect(testContext(t, 30*time.Second), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		`CREATE ROLE quarantine_owner LOGIN PASSWORD 'owner-pw'`,
		`CREATE ROLE quarantine_runtime NOLOGIN`,
		`CREATE ROLE quarantine_app LOGIN PASSWORD 'app-pw' IN ROLE quarantine_runtime`,
		`CREATE DATABASE quarantine OWNER quarantine_owner`,
	} {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	pg.OwnerURL = fmt.Sprintf("postgres://quarantine_owner:owner-pw@127.0.0.1:%d/quarantine?sslmode=disable", pg.Port)
	pg.URL = fmt.Sprintf("postgres://quarantine_app:app-pw@127.0.0.1:%d/quarantine?sslmode=disable", pg.Port)
	migrate := exec.Command(consoleBinary(t), "migrate")
	migrate.Env = append(os.Environ(), "MIGRATE_DATABASE_URL="+pg.OwnerURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("console migrate: %v\n%s", err, out)
	}
	return pg
}

// waitReady waits until the server accepts a connection and answers.
func (pg *privatePostgres) waitReady(t *testing.T) {
	t.Helper()
	dsn := fmt.Sprintf("postgres://app@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", pg.Port)
	wait.For(t, "PostgreSQL on port "+strconv.Itoa(pg.Port), 60*time.Second, whileRunning(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}, pg.proc))
}

// Stop shuts the server down (fast mode) and waits until it exited.
func (pg *privatePostgres) Stop(t *testing.T) { t.Helper(); pg.proc.Stop(t, pgStopTimeout) }

// Start starts a stopped server on the same data and port and waits until
// it answers.
func (pg *privatePostgres) Start(t *testing.T) {
	t.Helper()
	pg.proc.Start(t)
	pg.waitReady(t)
}

// Restart is Stop then Start: every client connection is cut.
func (pg *privatePostgres) Restart(t *testing.T) {
	t.Helper()
	pg.Stop(t)
	pg.Start(t)
}

// postgresBinDir is the newest /usr/lib/postgresql/*/bin with initdb
// (Debian's layout; scripts/postgres.sh installs the package), or
// PG_BINDIR.
func postgresBinDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	t.Fatal("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: run the tests with `make test` or `make e2e` (they install Debian's postgresql), or set PG_BINDIR")
	return ""
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// postgresCredential is the postgres user when running as root (initdb
// and postgres refuse root), else nil: run as ourselves.
func postgresCredential(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, PostgreSQL must run as the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}
