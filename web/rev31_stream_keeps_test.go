package web_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevRetention31StreamKeepingMessagesLongerIsSaid: retention removes
// closed dead letters after 30 days (dev/policy.toml), and the DLQ stream,
// made with no age limit (DLQ_MAX_AGE's default), keeps every message,
// payload and all, for good: the console said "closed 30 days" and the
// stream line "no age limit", and nothing put the two together. The
// dashboard says the payloads outlive their removal and what to set; with
// an age limit within the shortest period it says nothing.
func TestRevRetention31StreamKeepingMessagesLongerIsSaid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
		warns  bool
	}{{"NoAgeLimit", 0, true}, {"LongerThanRetention", 60 * 24 * time.Hour, true}, {"WithinRetention", 7 * 24 * time.Hour, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
				c.StreamMaxAge = tc.maxAge
				c.IngestTuning = func(ic *dlq.IngestConfig) { ic.HealthEvery = 100 * time.Millisecond }
			}})
			everyTenant, _ := b.SignIn(t, "*:oncall")
			var warning string
			wait.Until(t, "the dashboard shows the stream", 30*time.Second, func() bool {
				d := b.Do(t, everyTenant, "GET", "/", nil, nil).Doc(t)
				warning = text(byID(d, "storage-stream-keeps-longer"))
				return byID(d, "storage-stream").Length() == 1
			})
			if !tc.warns {
				assert.Empty(t, warning)
				return
			}
			assert.Contains(t, warning, "stay in the stream after the console removed them")
			assert.Contains(t, warning, "age limit of at most 720h")
			assert.Contains(t, warning, "nats stream edit DLQ --max-age 720h")
		})
	}
}
