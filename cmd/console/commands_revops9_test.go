package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps9CheckpointReasonNamesItsSetting (review rev-ops9): `console
// audit checkpoint --reason` says "at most 64 bytes" in its help, but the
// parse only checks it is not empty (checkRequired). A longer reason is
// refused only by audit.Record, after the key was loaded and the database
// connected, with "An audit checkpoint's reason must be 1 to 64 bytes.",
// naming neither --reason nor AUDIT_CHECKPOINT_REASON: every other bad
// value stops the command at parse with "VARIABLE (--flag) value: what it
// must be". Here the database refuses (port 1), so the command that got
// past its settings reports the connection instead of the reason.
func TestRevOps9CheckpointReasonNamesItsSetting(t *testing.T) {
	t.Parallel()
	key := newKeyFile(t)
	reason := "before maintenance window " + strings.Repeat("x", 60) // 86 bytes
	err := run(context.Background(), []string{"console", "audit", "checkpoint", "--reason", reason},
		env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "AUDIT_SIGNING_KEY_FILE": key}), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AUDIT_CHECKPOINT_REASON (--reason)", "a %d-byte reason is not refused at parse, naming its setting: %v", len(reason), err)
}

// syncBuffer is a bytes.Buffer safe for a command writing and a test reading.
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

// TestRevOps9DemoDoesNotAnswerTheConsolesRevalidation (review rev-ops9):
// REVALIDATE_SUBJECT means, to serve and worker, "the subject of the
// revalidation service to ask" (README: "where revalidate items are
// re-checked before publishing"). `console demo` reads the same variable
// as "answer revalidation requests on this subject from the demo's
// principal list" (cmd/console/demo.go), which README's description of
// the command ("demo traffic through real failing consumers, --rate,
// --count") does not mention. Run in the console's environment (its
// NATS_URL and REVALIDATE_SUBJECT; the README says every setting is an
// environment variable, and the demo is how one tries a deploy), the
// demo silently becomes a second responder on the real revalidation
// subject and answers {"allow": true} for user:0 to user:29, whatever the
// real service would say: a NATS request takes the first answer, so a
// revalidate replay whose principal lost its grant is published. The
// demo must not answer the console's revalidation subject unless told so
// by a setting of its own (DEMO_REVALIDATE_SUBJECT / --revalidate-subject).
func TestRevOps9DemoDoesNotAnswerTheConsolesRevalidation(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	const subject = "acme.iam.revalidate" // the deploy's real revalidation service
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	consoleEnv := env(map[string]string{"NATS_URL": ns.ClientURL(), "REVALIDATE_SUBJECT": subject, "DEMO_RATE": "1"})
	go func() { done <- run(ctx, []string{"console", "demo"}, consoleEnv, &out, io.Discard) }()
	wait.For(t, "the demo to start publishing", 30*time.Second, func() error {
		select {
		case err := <-done:
			return wait.Stop(errors.Join(errors.New("demo exited"), err))
		default:
		}
		if !strings.Contains(out.String(), "demo: publishing") {
			return errors.New("not yet: " + out.String())
		}
		return nil
	})

	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	msg, err := nc.Request(subject, []byte(`{"principal":"user:0","tenant":"acme","msg_id":"m-1"}`), 2*time.Second)
	if err == nil {
		t.Errorf("console demo, run with the console's REVALIDATE_SUBJECT, answered the real revalidation subject %s: %s (demo said: %q)",
			subject, msg.Data, out.String())
	} else {
		assert.ErrorIs(t, err, nats.ErrNoResponders)
	}
	cancel()
	<-done
}
