package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStreamSettingsAtParse: DLQ_REPLICAS above 1 is refused with the
// embedded server only (a NATS_URL may be a cluster), and DLQ_MAX_AGE is 0
// or at least 15 minutes (dlq.MinStreamMaxAge: above the DLQ stream's
// 2-minute duplicate window, and long enough for DeadLetterStreamNearLimit
// to warn before JetStream discards).
func TestStreamSettingsAtParse(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(key, []byte("x"), 0o600))
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c",
		"AUDIT_SIGNING_KEY_FILE": key}
	parse := func(extra map[string]string) error {
		e := map[string]string{}
		for k, v := range base {
			e[k] = v
		}
		for k, v := range extra {
			e[k] = v
		}
		_, err := parseServe(nil, env(e), io.Discard)
		return err
	}
	for name, extra := range map[string]map[string]string{
		"ReplicasOnACluster": {"DLQ_REPLICAS": "3", "NATS_URL": "nats://n1:4222,nats://n2:4222,nats://n3:4222"},
		"OneReplicaEmbedded": {"DLQ_REPLICAS": "1"},
		"MaxAgeNone":         {"DLQ_MAX_AGE": "0"},
		"MaxAgeAtTheFloor":   {"DLQ_MAX_AGE": "15m"},
	} {
		t.Run("Accepted/"+name, func(t *testing.T) {
			assert.NoError(t, parse(extra))
		})
	}
	for name, tc := range map[string]struct {
		extra map[string]string
		want  string
	}{
		"ReplicasEmbedded":   {map[string]string{"DLQ_REPLICAS": "2"}, "DLQ_REPLICAS (--replicas) 2: the embedded NATS server"},
		"MaxAgeUnderWindow":  {map[string]string{"DLQ_MAX_AGE": "119s"}, "DLQ_MAX_AGE (--dlq-max-age) 1m59s: must be 0 or at least 15m"},
		"MaxAgeAtTheWindow":  {map[string]string{"DLQ_MAX_AGE": "2m"}, "DLQ_MAX_AGE (--dlq-max-age) 2m: must be 0 or at least 15m"},
		"MaxAgeOneSecond":    {map[string]string{"DLQ_MAX_AGE": "1s", "NATS_URL": "nats://n1:4222"}, "DLQ_MAX_AGE (--dlq-max-age) 1s"},
		"RevalidateWildcard": {map[string]string{"REVALIDATE_SUBJECT": "iam.*"}, `REVALIDATE_SUBJECT (--revalidate-subject) "iam.*": must be a subject`},
	} {
		t.Run("Refused/"+name, func(t *testing.T) {
			err := parse(tc.extra)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestCheckpointReasonAtParse: a reason of 64 bytes passes the parse (the
// command then fails on the database, port 1); 65 bytes, or blanks, do not.
func TestCheckpointReasonAtParse(t *testing.T) {
	t.Parallel()
	key := newKeyFile(t)
	e := env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "AUDIT_SIGNING_KEY_FILE": key})
	checkpoint := func(reason string) error {
		return run(context.Background(), []string{"console", "audit", "checkpoint", "--reason", reason}, e, io.Discard, io.Discard)
	}
	err := checkpoint(strings.Repeat("r", 64))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "AUDIT_CHECKPOINT_REASON", "64 bytes are taken")
	for _, bad := range []string{strings.Repeat("r", 65), "  "} {
		err := checkpoint(bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "AUDIT_CHECKPOINT_REASON (--reason)")
	}
}

// TestDemoAnswersItsOwnRevalidationSubject: given DEMO_REVALIDATE_SUBJECT,
// the demo answers revalidation requests there from its principal list
// (what make run points the console's REVALIDATE_SUBJECT at).
func TestDemoAnswersItsOwnRevalidationSubject(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	e := env(map[string]string{"NATS_URL": ns.ClientURL(), "DEMO_REVALIDATE_SUBJECT": "demo.revalidate", "REVALIDATE_SUBJECT": "acme.iam.revalidate", "DEMO_RATE": "1"})
	go func() { done <- run(ctx, []string{"console", "demo"}, e, &out, io.Discard) }()
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
	msg, err := nc.Request("demo.revalidate", []byte(`{"principal":"user:0","tenant":"acme","msg_id":"m-1"}`), 5*time.Second)
	require.NoError(t, err)
	assert.JSONEq(t, `{"allow": true}`, string(msg.Data))
	_, err = nc.Request("acme.iam.revalidate", []byte(`{"principal":"user:0"}`), 2*time.Second)
	assert.ErrorIs(t, err, nats.ErrNoResponders, "the console's REVALIDATE_SUBJECT is not the demo's")
	cancel()
	<-done
}
