package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// forgetSetup is a migrated database whose dead_letters_purged keeps
// source keys of streams, and a NATS server with JetStream.
type forgetSetup struct {
	db *testdb.DB
	ns *natstest.Server
}

func setupForget(t *testing.T) forgetSetup {
	t.Helper()
	return forgetSetup{db: testdb.New(t), ns: natstest.Start(t)}
}

// keep stores n kept source keys of stream, sequences 1 to n, as
// retention keeps them for the dead letters it removed (stream "" for
// keys that name none, as before migration 0028).
func (f forgetSetup) keep(t *testing.T, stream string, n int) {
	t.Helper()
	_, err := f.db.Pool.Exec(context.Background(), `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq)
        SELECT now() - interval '40 days', sha256(convert_to($1 || '#' || g, 'UTF8')), NULLIF($1, ''), CASE WHEN $1 <> '' THEN g END
        FROM generate_series(1, $2::int) g`, stream, n)
	require.NoError(t, err)
}

// kept counts the kept source keys of stream ("": those naming none).
func (f forgetSetup) kept(t *testing.T, stream string) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM dead_letters_purged WHERE stream IS NOT DISTINCT FROM NULLIF($1, '')`, stream).Scan(&n))
	return n
}

// trimRows are the audit rows and the dead_letters_purged_trims rows
// that name stream.
func (f forgetSetup) trimRows(t *testing.T, stream string) (auditRows, trims int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND object_id = $2`, dlq.ActionTrimKeys, stream).Scan(&auditRows))
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters_purged_trims WHERE stream = $1`, stream).Scan(&trims))
	return auditRows, trims
}

// forget runs "console retention forget-stream" against natsURL.
func (f forgetSetup) forget(natsURL string, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"console", "retention", "forget-stream"}, args...),
		env(map[string]string{"DATABASE_URL": f.db.URL, "NATS_URL": natsURL}), &out, io.Discard)
	return out.String(), err
}

// TestRev43ForgetStreamRemovesAMissingStreamsKeysAudited (review round 43):
// the runbook told an owner to remove the kept keys of a stream gone for
// good with a raw DELETE, which writes no audit row and no
// dead_letters_purged_trims row: had the stream come back from a backup,
// every message whose dead letter retention removed would have been
// stored again as new and replayable, with nothing in the audit log.
// "console retention forget-stream" removes them in batches, each one
// audit row naming the operator and their reason and one trims row, so
// that such a message is stored flagged after_retention_key_trim; it
// leaves other streams' keys and those naming none, and a second run
// removes nothing and says so.
func TestRev43ForgetStreamRemovesAMissingStreamsKeysAudited(t *testing.T) {
	t.Parallel()
	f := setupForget(t)
	ctx := context.Background()
	_, js := f.ns.Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "HERE", Subjects: []string{"here.>"}})
	require.NoError(t, err)
	f.keep(t, "GONE", 250)
	f.keep(t, "HERE", 3)
	f.keep(t, "", 2)

	const reason = "GONE was deleted with its account on 2026-11-30 (CHG-1234)"
	out, err := f.forget(f.ns.ClientURL(), "--stream", "GONE", "--reason", reason, "--retention-batch", "100")
	require.NoError(t, err)
	assert.Contains(t, out, "removed 100 kept source keys of stream GONE, sequences 1 to 100")
	assert.Contains(t, out, "removed 50 kept source keys of stream GONE, sequences 201 to 250")
	assert.Contains(t, out, "removed 250 kept source keys in 3 runs")
	assert.Zero(t, f.kept(t, "GONE"))
	assert.Equal(t, 3, f.kept(t, "HERE"), "another stream's keys stay")
	assert.Equal(t, 2, f.kept(t, ""), "keys naming no stream stay")

	// One audit row per batch, naming the operator and the reason.
	rows, err := f.db.Pool.Query(ctx, `SELECT actor_issuer, actor_subject, reason, after->>'keys', coalesce(after->>'stream_missing', '')
        FROM audit_log WHERE action = $1 AND object_id = 'GONE' ORDER BY seq`, dlq.ActionTrimKeys)
	require.NoError(t, err)
	type entry struct {
		Issuer, Subject, Reason, Keys, Missing string
	}
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByPos[entry])
	require.NoError(t, err)
	require.Len(t, entries, 3)
	for i, e := range entries {
		assert.Equal(t, operator().Issuer, e.Issuer)
		assert.Equal(t, operator().Subject, e.Subject, "the operator as the operating system knows them")
		assert.Equal(t, reason, e.Reason)
		assert.Equal(t, []string{"100", "100", "50"}[i], e.Keys)
		assert.Equal(t, "true", e.Missing)
	}
	// One trims row per batch: the removal is recorded as the keeper's are.
	var trims, keys, top int64
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*), sum(keys), max(to_seq) FROM dead_letters_purged_trims WHERE stream = 'GONE'`).
		Scan(&trims, &keys, &top))
	assert.Equal(t, []int64{3, 250, 250}, []int64{trims, keys, top})

	// The stream comes back from a backup after all: a message whose dead
	// letter retention removed is stored again, flagged, not as new.
	at := time.Now().AddDate(0, 0, -40)
	rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{
		Subject: "dlq.acme.orders.refund",
		Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.orders.refund"}, dlq.HeaderOriginalMsgID: {"refund-7"},
			dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"sink unavailable"},
			dlq.HeaderFirstFailedAt: {at.Add(-testfactory.FirstFailedBefore).Format(time.RFC3339Nano)}},
		Data: []byte(`{"msg":"refund-7"}`), Stream: "GONE", Seq: 7, Time: at,
	})
	st := dlq.NewStore(f.db.Pool)
	res, err := st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)
	back, err := st.BySource(ctx, "GONE", 7, "")
	require.NoError(t, err)
	assert.Contains(t, back.Flags, dlq.FlagAfterKeyTrim, "a restored message of the stream is flagged and left out of replays")

	// Again: nothing left, nothing changed, and it says so.
	out, err = f.forget(f.ns.ClientURL(), "--stream", "GONE", "--reason", reason)
	require.NoError(t, err)
	assert.Contains(t, out, "stream GONE does not exist and has no kept source keys: nothing removed")
	a, tr := f.trimRows(t, "GONE")
	assert.Equal(t, []int{3, 3}, []int{a, tr}, "a second run writes nothing")

	// No reason, no removal.
	f.keep(t, "GONE", 1)
	_, err = f.forget(f.ns.ClientURL(), "--stream", "GONE", "--reason", " ")
	require.Error(t, err)
	assert.Equal(t, 1, f.kept(t, "GONE"))
}

// TestRev43ForgetStreamRefusesAStreamThatExists: the keys of a stream the
// console's NATS server has guard messages it may deliver again; the
// keeper removes them as the stream lets the messages go. The command
// refuses, exit status 1, and removes nothing.
func TestRev43ForgetStreamRefusesAStreamThatExists(t *testing.T) {
	t.Parallel()
	f := setupForget(t)
	ctx := context.Background()
	_, js := f.ns.Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "HERE", Subjects: []string{"here.>"}})
	require.NoError(t, err)
	f.keep(t, "HERE", 5)

	_, err = f.forget(f.ns.ClientURL(), "--stream", "HERE", "--reason", "thought it was gone")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stream HERE exists")
	assert.Equal(t, 1, exitCode(err))
	assert.Equal(t, 5, f.kept(t, "HERE"))
	a, tr := f.trimRows(t, "HERE")
	assert.Equal(t, []int{0, 0}, []int{a, tr})
}

// TestRev43ForgetStreamKeepsKeysWhenNATSCannotBeReached: a stream that
// cannot be read keeps its keys, as the keeper keeps them: with no NATS
// server at NATS_URL, with one whose JetStream does not answer, and with
// no NATS_URL at all, the command refuses and removes nothing.
func TestRev43ForgetStreamKeepsKeysWhenNATSCannotBeReached(t *testing.T) {
	t.Parallel()
	f := setupForget(t)
	f.keep(t, "GONE", 5)
	down := natstest.Start(t)
	downURL := down.ClientURL()
	down.Shutdown()
	down.WaitForShutdown()
	noJetStream := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.JetStream = false })

	for name, tc := range map[string]struct{ natsURL, says string }{
		"NoServer":    {downURL, "the keys of stream GONE are kept"},
		"NoJetStream": {noJetStream.ClientURL(), "stream GONE cannot be read, so its keys are all kept"},
		"NoNATSURL":   {"", "NATS_URL (--nats-url)"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := f.forget(tc.natsURL, "--stream", "GONE", "--reason", "gone for good")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, 1, exitCode(err), "%v", err)
			assert.NotContains(t, out, "removed")
			assert.Equal(t, 5, f.kept(t, "GONE"), "%v", err)
		})
	}
	a, tr := f.trimRows(t, "GONE")
	assert.Equal(t, []int{0, 0}, []int{a, tr})
}

// TestRev43RunbookRemovesNoKeptKeyWithSQL: the runbook's retention
// section told an owner to remove kept source keys with a DELETE (of a
// stream gone for good, and those naming no stream), which leaves no audit
// row and no dead_letters_purged_trims row. It names the audited command
// instead, and no DELETE of them.
func TestRev43RunbookRemovesNoKeptKeyWithSQL(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/runbook.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(raw)), " ")
	deletes := regexp.MustCompile(`(?i)DELETE FROM (public\.)?dead_letters_purged\b[^;`+"`"+`]*`).FindAllString(text, -1)
	assert.Empty(t, deletes, "kept keys go only through console retention forget-stream (audited, recorded)")
	assert.True(t, strings.Contains(text, "`console retention forget-stream --stream NAME --reason \"<why>\"`"), "the runbook names the command")
}
