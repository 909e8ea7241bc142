package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestOnCallJourney is the part of journey 1 (issue 6) the console has
// today: real failing consumers (`console demo`) dead-letter messages and
// give up on others, and every give-up becomes exactly one row, whether it
// came through the DLQ stream or as a JetStream advisory; the on-call
// signs in through Dex's login page in Chromium and sees their name and
// roles in the header, and no audit or admin links.
func TestOnCallJourney(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{Env: []string{"DLQ_WATCH_STREAMS=" + dlqdemo.WatchList()}})

	stats := runDemo(t, s, 150)
	require.Positive(t, stats.DeadLettered, "the demo dead-lettered nothing: %+v", stats)
	require.Positive(t, stats.Exhausted+stats.Terminated, "the demo gave up on nothing: %+v", stats)
	_, js := connectNATS(t, s.NATSURL, "e2e-demo-poke")
	wait.For(t, "a row for every give-up of the demo", 2*time.Minute, whileRunning(func() error {
		if err := pokeDemoConsumers(js); err != nil {
			return err
		}
		var viaDLQ, viaAdvisory int64
		err := s.DB.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE source_kind = 'dlq'), count(*) FILTER (WHERE source_kind = 'advisory')
			FROM dead_letters`).Scan(&viaDLQ, &viaAdvisory)
		if err != nil {
			return err
		}
		if viaDLQ != stats.DeadLettered || viaAdvisory != stats.Exhausted+stats.Terminated {
			return fmt.Errorf("rows dlq=%d advisory=%d, demo dead-lettered=%d max-deliver=%d terminated=%d: %w",
				viaDLQ, viaAdvisory, stats.DeadLettered, stats.Exhausted, stats.Terminated, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	assert.Equal(t, "Olga Oncall", oncall.Text(testID("user-name")))
	roles := oncall.Text(testID("user-roles"))
	for _, want := range []string{"acme", "globex", "oncall"} {
		assert.Contains(t, roles, want, "header roles")
	}
	assert.False(t, oncall.Exists(testID("nav-audit")), "an on-call has no audit link")
	assert.False(t, oncall.Exists(testID("nav-admin")), "an on-call has no admin link")
	oncall.Screenshot("")
}

// pokeDemoConsumers pulls once (without waiting) on each demo consumer,
// as the demo's workers would if they were still running. JetStream emits
// MAX_DELIVERIES for a message only when it next tries to deliver it,
// which needs a pull: the demo counts a message as given up on its last
// delivery and may exit before that. Nothing is left to deliver (the demo
// handled every message), so the pulls only bring out those advisories.
func pokeDemoConsumers(js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, st := range dlqdemo.Streams {
		cons, err := js.Consumer(ctx, st.Name, strings.ToLower(st.Name)+"-worker")
		if err != nil {
			return fmt.Errorf("demo consumer on %s: %w", st.Name, err)
		}
		batch, err := cons.FetchNoWait(1)
		if err != nil {
			return err
		}
		for m := range batch.Messages() {
			return fmt.Errorf("demo message %s was never handled", m.Subject())
		}
	}
	return nil
}

// demoStats is the final line of `console demo`.
type demoStats struct {
	Published, OK, Retried, DeadLettered, Exhausted, Terminated int64
}

var demoStatsLine = regexp.MustCompile(`published=(\d+) ok=(\d+) retried=(\d+) dead-lettered=(\d+) max-deliver=(\d+) terminated=(\d+)`)

// runDemo runs `console demo --count n` against the stack's NATS: real
// streams with real consumers that fail, retry, dead-letter through the
// producer helper, exhaust MaxDeliver or terminate. It returns the demo's
// own count of each outcome.
func runDemo(t *testing.T, s *stack, n int) demoStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, consoleBinary(t), "demo", "--count", strconv.Itoa(n), "--rate", "200")
	cmd.Env = append(os.Environ(), "NATS_URL="+s.NATSURL, "DEMO_TENANTS=acme,globex", "LOG_LEVEL=warn")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console demo: %v\n%s", err, out)
	}
	m := demoStatsLine.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("console demo printed no stats:\n%s", out)
	}
	v := make([]int64, 6)
	for i := range v {
		v[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	st := demoStats{v[0], v[1], v[2], v[3], v[4], v[5]}
	if st.Published != int64(n) {
		t.Fatalf("demo published %d of %d:\n%s", st.Published, n, strings.TrimSpace(string(out)))
	}
	return st
}
