package e2e

// Helpers for the journeys and faults of issue 6 that need the triage
// screens and replay (request, approve, execute): the journey_replay_* and
// fault_replay/fault_concurrency tests use them. The browser steps use the
// routes of web/routes_replay.go and the data-testids of views/replay.templ
// and the triage views (dashboard, list, detail; see triageIDs).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// triageIDs are the data-testids the triage journeys select, as the
// triage views being written name them (views/dashboard.templ,
// deadletter_list.templ, deadletter_show.templ); check them when those land.
var triageIDs = struct {
	DashboardUnresolved, ListFilter, ListRow, ListRowLink, ListCount   string
	DetailPayload, DetailStack, DetailMsgID, DetailStatus, ReplayPanel string
}{
	DashboardUnresolved: "kpi-unresolved",    // unresolved dead letters on / (the dashboard)
	ListFilter:          "deadletter-filter", // the filter form of /deadletters
	ListRow:             "deadletter-row",    // one row of /deadletters
	ListRowLink:         "row-link",          // its link to /deadletters/<id>
	ListCount:           "deadletter-count",
	DetailPayload:       "dl-payload-body", // the payload as text (escaped)
	DetailStack:         "dl-stack",        // the stack trace
	DetailMsgID:         "dl-msgid",        // the message id replays publish under
	DetailStatus:        "dl-status",
	ReplayPanel:         "replay-panel",
}

// deadLetterSpec is one hand-made dead letter: the original message as a
// failing consumer had it, and why it gave up.
type deadLetterSpec struct {
	Tenant, ItemType string
	OriginalSubject  string // e.g. app.acme.search.index_update; replays go here
	MsgID            string // the original Nats-Msg-Id
	OperationID      string
	Principal        string
	Payload          []byte
	Err              string
	Class            dlq.ErrorClass
	Stack            string
	// FirstFailedAt is when the consumer first failed on the original
	// (zero: firstFailedBefore ago). The original was stored before, so a
	// replay waits for the target stream's duplicate window from then.
	FirstFailedAt time.Time
}

// firstFailedBefore is how long before they are published the journeys'
// dead letters say their consumer first failed: long enough that their
// originals are out of a two-minute duplicate window, as a dead letter
// replayed after its bug was fixed would be.
const firstFailedBefore = 10 * time.Minute

// publishDeadLetter dead-letters one message through the producer helper.
func publishDeadLetter(t *testing.T, ctx context.Context, js jetstream.JetStream, d deadLetterSpec) {
	t.Helper()
	orig := &nats.Msg{Subject: d.OriginalSubject, Header: nats.Header{}, Data: d.Payload}
	if d.MsgID != "" {
		orig.Header.Set(dlq.HeaderNatsMsgID, d.MsgID)
	}
	first := time.Now().Add(-firstFailedBefore)
	if !d.FirstFailedAt.IsZero() {
		first = d.FirstFailedAt
	}
	m, err := dlq.NewMessage(dlq.DefaultSubjectPrefix, d.Tenant, d.ItemType, orig, dlq.Origin{}, dlq.Failure{
		Err: errors.New(d.Err), Class: d.Class, Stack: d.Stack, Consumer: "e2e-consumer",
		OperationID: d.OperationID, Principal: d.Principal, Attempts: 5, FirstFailedAt: first,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("publish dead letter %s: %v", d.MsgID, err)
	}
}

// waitDeadLetterID waits until the dead letter with this message id is a
// row and returns its id (the /deadletters/<id> of the console).
func waitDeadLetterID(t *testing.T, db *pgxpool.Pool, msgID string, watch ...*proc) int64 {
	t.Helper()
	var id int64
	wait.For(t, "dead letter "+msgID, 2*time.Minute, whileRunning(func() error {
		err := db.QueryRow(context.Background(), `SELECT id FROM dead_letters WHERE msg_id = $1`, msgID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return wait.ErrNotYet
		}
		return err
	}, watch...))
	return id
}

// createTargetStream creates the stream a replay publishes into (the
// stream of the original subjects), as the business service owns it.
func createTargetStream(t *testing.T, ctx context.Context, js jetstream.JetStream, name string, subjects ...string) {
	t.Helper()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: subjects, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	}); err != nil {
		t.Fatalf("create stream %s: %v", name, err)
	}
}

// streamMsgIDs reads every message of a stream with an ordered consumer
// and counts each Nats-Msg-Id (invariant 3: replays carry the original).
func streamMsgIDs(ctx context.Context, js jetstream.JetStream, stream string) (map[string]int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	ids := map[string]int{}
	if info.State.Msgs == 0 {
		return ids, nil
	}
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	for seen := uint64(0); seen < info.State.Msgs; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			ids[m.Headers().Get(dlq.HeaderNatsMsgID)]++
			n++
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("stream %s: read %d of %d messages", stream, seen, info.State.Msgs)
		}
		seen += uint64(n)
	}
	return ids, nil
}

// readStreamIDs reads the message ids of stream, retrying while the stream
// cannot answer (a clustered stream between leaders after a node came back).
func readStreamIDs(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) map[string]int {
	t.Helper()
	var ids map[string]int
	wait.For(t, "stream "+stream+" readable", 30*time.Second, func() error {
		var err error
		ids, err = streamMsgIDs(ctx, js, stream)
		return err
	})
	return ids
}

// requireEachOnceInStream checks that the target stream holds every one
// of msgIDs exactly once (no replay lost, none published twice).
func requireEachOnceInStream(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string, msgIDs []string) {
	t.Helper()
	ids := readStreamIDs(t, ctx, js, stream)
	var missing, twice []string
	for _, id := range msgIDs {
		switch n := ids[id]; {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s×%d", id, n))
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		t.Errorf("stream %s: %d missing (%.5v), %d more than once (%.5v)", stream, len(missing), missing, len(twice), twice)
	}
}

// openDeadLetter opens /deadletters/<id> and waits for its actions panel.
func (s *session) openDeadLetter(id int64) {
	s.t.Helper()
	s.Open("/deadletters/" + strconv.FormatInt(id, 10))
	s.WaitUntil("the dead letter's actions", `document.querySelector('[data-testid="deadletter-actions"]')`)
}

var replayRequestPath = regexp.MustCompile(`/replay/requests/(\d+)$`)

// replayRequestPage is true on a replay request's page once it shows the
// request's status.
const replayRequestPage = `/\/replay\/requests\/\d+$/.test(location.pathname) && document.querySelector('[data-testid="replay-status"]')`

// requestReplay clicks "Replay…" on an open dead letter, fills the confirm
// page (reason, and the typed confirmation when the class asks for one)
// and submits; it returns the request id from the request page it lands on.
func (s *session) requestReplay(reason, typedConfirmation string) int64 {
	s.t.Helper()
	s.ClickLoads(testID("replay"), "the replay confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	if typedConfirmation != "" {
		s.Fill(`input[name^="confirm-"]`, typedConfirmation)
	}
	s.Fill(testID("replay-reason"), reason)
	if s.Exists(testID("replay-reconciliation-note")) {
		s.Fill(testID("replay-reconciliation-note"), "checked the target: the effect is not there ("+reason+")")
	}
	s.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(s.Location())
	if m == nil {
		s.t.Fatalf("not on a replay request page: %s", s.Location())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// approveReplay opens a request as an approver and approves its intent,
// typing the confirmation when the class asks for one.
func (s *session) approveReplay(id int64, typedConfirmation string) {
	s.t.Helper()
	s.Open("/replay/requests/" + strconv.FormatInt(id, 10))
	if typedConfirmation != "" {
		s.Fill(`input[name="confirmation"]`, typedConfirmation)
	}
	// A new page: the list of approvals may already be on this one (a
	// second approver), so wait for the page the POST answers.
	s.ClickLoads(testID("approve"), "the request page after approving", `document.querySelector('[data-testid="replay-approvals"]')`)
}

// waitReplayStatus waits until the open request page shows status (the
// progress block refreshes itself; the status badge needs a reload).
func (s *session) waitReplayStatus(id int64, status string) {
	s.t.Helper()
	err := wait.Poll(2*time.Minute, 500*time.Millisecond, func() error {
		s.Open("/replay/requests/" + strconv.FormatInt(id, 10))
		if got := s.Attr(testID("replay-status"), "data-status"); got != status {
			return fmt.Errorf("status %q: %w", got, wait.ErrNotYet)
		}
		return nil
	})
	if err != nil {
		s.t.Fatalf("replay request %d: %v", id, err)
	}
}

// concurrently runs fn in n goroutines until d passes (fn is called again
// and again with its worker number) and returns every error they met.
func concurrently(ctx context.Context, n int, d time.Duration, fn func(ctx context.Context, worker int) error) []error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := fn(ctx, w); err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// auditCount counts audit rows of one action and outcome.
func auditCount(t *testing.T, db *pgxpool.Pool, action, outcome string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = $2`, action, outcome).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
