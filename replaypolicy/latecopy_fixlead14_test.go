package replaypolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestFixLead14LateCopyIsReadBeforeItGoes: a first attempt past every
// window as the copies' creation says still needs a copy made after the
// original read (NeedCopies); read behind, it is deferred with why; read
// to have copied the subject later than it was made, its window counts
// from then. A copy made before the original needs no read.
func TestFixLead14LateCopyIsReadBeforeItGoes(t *testing.T) {
	t.Parallel()
	stored := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	late := replaypolicy.Copy{Stream: "AGG", Duplicates: 6 * time.Second, Since: stored.Add(4 * time.Second), Path: []replaypolicy.CopyHop{{Stream: "APP", Subject: "app.acme.x"}, {Stream: "AGG", Subject: "app.acme.x"}}}
	attempt := func(c replaypolicy.Copy) replaypolicy.Attempt {
		return replaypolicy.Attempt{MsgID: "m", StoredBy: stored, DeadLetteredAt: stored, Margin: time.Second,
			Window: replaypolicy.Window{Stream: "APP", Duplicates: time.Second, Copies: []replaypolicy.Copy{c}}}
	}
	now := stored.Add(12 * time.Second) // past AGG's window as its creation says (stored+4+6+1)

	v := replaypolicy.JudgeWindow(attempt(late), now)
	assert.Equal(t, replaypolicy.NeedCopies, v.Needs, v.Reason)
	assert.Equal(t, replaypolicy.Wait, v.Outcome)

	behind := late
	behind.Behind = "stream AGG has not copied any message of \"app.acme.x\" from stream APP yet"
	v = replaypolicy.JudgeWindow(attempt(behind), now)
	require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Equal(t, replaypolicy.NeedNothing, v.Needs)
	assert.Equal(t, now.Add(time.Second), v.Until, "checked again after the margin")
	assert.Contains(t, v.Reason, "stream AGG copies the subject from stream APP, and stream AGG has not copied any message of")

	read := late
	read.Copied = stored.Add(7 * time.Second) // it caught up 3 s after it was made
	v = replaypolicy.JudgeWindow(attempt(read), now)
	require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Equal(t, read.Copied.Add(6*time.Second+time.Second), v.Until, v.Reason)
	assert.Equal(t, replaypolicy.Go, replaypolicy.JudgeWindow(attempt(read), v.Until).Outcome)

	early := late
	early.Since = stored.Add(-time.Hour)
	v = replaypolicy.JudgeWindow(attempt(early), now)
	assert.Equal(t, replaypolicy.Go, v.Outcome, "a copy made before the original copied it when it was stored: no read (%s)", v.Reason)
	assert.Equal(t, replaypolicy.NeedNothing, v.Needs)
}
