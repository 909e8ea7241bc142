package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
)

// targetStream is the business stream the replay journeys publish into:
// it stores the original subjects (app.<tenant>.<item type>), as the
// services owning them would have it. The console never creates it.
const targetStream = "APP"

// newReplayStack starts a stack for the replay journeys and creates the
// target stream; it returns the stack and a JetStream client of the test.
func newReplayStack(t *testing.T, cfg stackConfig) (*stack, jetstream.JetStream) {
	t.Helper()
	s := newStack(t, cfg)
	_, js := connectNATS(t, s.NATSURL, "e2e-replay")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTargetStream(t, ctx, js, targetStream, "app.>")
	return s, js
}

// storedMsg is one message of a stream as JetStream stored it.
type storedMsg struct {
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
}

// streamMessages reads every message of a (small) stream by sequence.
func streamMessages(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) []storedMsg {
	t.Helper()
	info, err := streamInfo(ctx, js, stream)
	if err != nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	var out []storedMsg
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			if strings.Contains(err.Error(), "not found") {
				continue
			}
			t.Fatalf("stream %s seq %d: %v", stream, seq, err)
		}
		out = append(out, storedMsg{Seq: m.Sequence, Subject: m.Subject, Header: m.Header, Data: m.Data})
	}
	return out
}

// requireReplayedOnce checks that the target stream holds exactly one
// message with this Nats-Msg-Id, on the original subject, carrying the
// replay headers, and returns it.
func requireReplayedOnce(t *testing.T, ctx context.Context, js jetstream.JetStream, msgID, subject string, payload []byte, requestID int64) storedMsg {
	t.Helper()
	var found []storedMsg
	for _, m := range streamMessages(t, ctx, js, targetStream) {
		if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("stream %s holds %d messages with Nats-Msg-Id %s; want exactly 1", targetStream, len(found), msgID)
	}
	m := found[0]
	if m.Subject != subject {
		t.Errorf("replayed %s on subject %q; want the original %q", msgID, m.Subject, subject)
	}
	if string(m.Data) != string(payload) {
		t.Errorf("replayed %s with payload %q; want the original %q", msgID, m.Data, payload)
	}
	if m.Header.Get("Dlq-Replay-Of") == "" {
		t.Errorf("replayed %s without a Dlq-Replay-Of header: %v", msgID, m.Header)
	}
	if got := m.Header.Get("Dlq-Replay-Request"); !strings.Contains(got, strconv.FormatInt(requestID, 10)) {
		t.Errorf("replayed %s with Dlq-Replay-Request %q; want request %d", msgID, got, requestID)
	}
	return m
}

// requireStreamEmpty checks that nothing was published to the target stream.
func requireStreamEmpty(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	if msgs := streamMessages(t, ctx, js, targetStream); len(msgs) != 0 {
		t.Fatalf("stream %s holds %d messages; want none yet (first: %s %v)", targetStream, len(msgs), msgs[0].Subject, msgs[0].Header)
	}
}

var hex64 = regexp.MustCompile(`[0-9a-f]{64}`)

// intentHash reads the intent hash from the open request page.
func (s *session) intentHash() string {
	s.t.Helper()
	h := hex64.FindString(s.Text(testID("replay-intent")))
	if h == "" {
		s.t.Fatalf("the request page shows no intent hash: %q", s.Text(testID("replay-intent")))
	}
	return h
}

// requestPath is the console path of a replay request.
func requestPath(id int64) string { return fmt.Sprintf("/replay/requests/%d", id) }
