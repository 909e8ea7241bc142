package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
)

func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var natsURL, prefix, tenants, level string
	var ratePerSec, count int
	s := newSettings("demo", getenv, stderr)
	s.str(&natsURL, "nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server to publish to", checkNATSURL)
	s.str(&prefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of dead letters", checkToken)
	s.str(&tenants, "tenants", "DEMO_TENANTS", "acme,globex", "comma-separated tenants", nil)
	s.integer(&ratePerSec, "rate", "DEMO_RATE", 20, "messages published per second", 1, 100000)
	s.integer(&count, "count", "DEMO_COUNT", 0, "messages to publish; 0 runs until stopped", 0, 100000000)
	s.str(&level, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	if err := s.parse(args); err != nil {
		return err
	}
	log := newLogger(stderr, level, "text")
	nc, err := nats.Connect(natsURL, nats.Name("quarantine-demo"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("NATS_URL %s: %w", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo: publishing %d msg/s for tenants %s on streams %s\n", ratePerSec, tenants, dlqdemo.WatchList())
	stats, err := dlqdemo.Run(ctx, js, dlqdemo.Config{
		Prefix: prefix, Tenants: strings.Split(tenants, ","), Rate: float64(ratePerSec), Count: count, Log: log,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "demo:", stats)
	return nil
}
