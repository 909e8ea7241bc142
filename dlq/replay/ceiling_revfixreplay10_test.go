package replay_test

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevFixReplay10CeilingUndercountsExpectedStreamHeader: the console's
// NATS user may send at most 8 KB (a limit the server does not announce to
// the connection: here a max_payload lowered by a reload after the
// console connected, which the connection is not told of either), so the
// operator sets REPLAY_MAX_PAYLOAD=8192 as docs/replay.md says: "items over
// it are blocked (unsendable) when judged, before anything is sent".
//
// The size every step judges (sendFacts) bounds what the replay adds to
// the forwarded headers by replayHeaderBytes = 256: the NATS header line,
// the ids, Dlq-Replay-Of, Dlq-Replay-Request, Dlq-Payload-Edited (86 bytes
// alone). Since this round every replay is also sent with
// Nats-Expected-Stream: <window stream> (WithExpectStream), which the bound
// never counted (24 bytes plus the stream's name): an edited replay to a
// stream with a 60-character name goes over what was judged (by 4 bytes
// here; every character of a longer name, or digit of a larger id, adds
// one). An item judged at exactly the
// ceiling at the edit, the submit, the approval and the worker's judge is
// over it on the wire: the server answers -ERR Maximum Payload Violation
// and closes the console's one connection for good (serve and worker then
// exit: ingest stops for every tenant), which the ceiling exists to
// prevent. The approver approved an intent that can never be published.
//
// Expected: the size judged counts every header the worker sends
// (Nats-Expected-Stream and its stream name included), so the item is
// refused at the edit (or blocked unsendable at the judge) and nothing is
// sent to close the connection.
func TestRevFixReplay10CeilingUndercountsExpectedStreamHeader(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	opts := func(max int32) *server.Options {
		return &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true, MaxPayload: max}
	}
	srv := natstest.StartWithOptions(t, dir, func(o *server.Options) { *o = *opts(64 << 10) })
	nc, js := srv.Connect(t)
	const stream = "REPLAY_TARGET_ACME_SEARCH_INDEX_UPDATES_EU_WEST_1_PRODUCTION" // 60 characters
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"events.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	const ceiling = 8 << 10
	cfg := b.config(t)
	cfg.Windows, cfg.MaxPayload = replay.NewStreamWindows(js, time.Second), ceiling // REPLAY_MAX_PAYLOAD=8192
	svc := replay.New(b.db.Pool, cfg)

	id := b.seedItem(t, "search.index_update", "ceiling-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"doc":1}`)
	batch, drafts := testfactory.Draft(t, svc, oncall, id)
	draft := drafts[0].ID

	// What the rules count for the item beside its payload: an edit over
	// the ceiling is refused naming the size judged.
	probe := strings.Repeat("y", ceiling)
	err = svc.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(probe), Reason: "size probe"}, quarantine.RequestMeta{})
	require.Error(t, err)
	m := regexp.MustCompile(`would be (\d+) bytes`).FindStringSubmatch(quarantine.ErrorMessage(err))
	require.NotNil(t, m, "the refusal names the size judged: %v", err)
	judged, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	overhead := judged - len(probe)
	// An edit that the rules judge exactly at the ceiling.
	edited := `{"doc":1,"pad":"` + strings.Repeat("z", ceiling-overhead-len(`{"doc":1,"pad":""}`)) + `"}`
	require.Equal(t, ceiling, len(edited)+overhead)
	require.NoError(t, svc.EditPayload(ctx, draft, id, oncall, replay.PayloadEdit{Payload: []byte(edited), Reason: "drop the bad field"}, quarantine.RequestMeta{}))
	req := submitAndApprove(t, svc, batch, draft)

	// The account's limit, which the connection was never told of.
	require.NoError(t, srv.ReloadOptions(opts(ceiling)))
	w := replay.NewWorker(svc, js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond, AckTimeout: 5 * time.Second}, b.log)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req, id)
	t.Logf("job: %s: %s", j.State, j.Result)
	assert.False(t, nc.IsClosed(), "an item judged within REPLAY_MAX_PAYLOAD was sent over it: the server closed the console's NATS connection for good (%v)", nc.LastError())
	assert.NotContains(t, j.Result, "the NATS server refused it", "the item was sent, not refused when judged")
}

// submitAndApprove submits draft as oncall and has approver1 approve it
// (an edited payload needs one approver), returning the request's id.
func submitAndApprove(t *testing.T, svc *replay.Service, batch string, draft int64) int64 {
	t.Helper()
	ctx := context.Background()
	reqs, err := svc.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "consumer fixed in release 1.2.3"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	req, err := svc.Request(ctx, reqs[0].ID)
	require.NoError(t, err)
	if req.Status == replay.StatusPendingApproval {
		_, err = svc.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
	}
	req, err = svc.Request(ctx, reqs[0].ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusApproved, req.Status, req.StatusReason)
	return req.ID
}
