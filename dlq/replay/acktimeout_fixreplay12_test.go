package replay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFixReplay12AckTimeoutFitsTheLease: the PubAck wait is a sixth of the
// lease when that is shorter than 5 s (a claim publishes in two thirds and
// records in a sixth), so with a short REPLAY_LEASE it never outlasts the
// lease; one set explicitly is kept.
func TestFixReplay12AckTimeoutFitsTheLease(t *testing.T) {
	t.Parallel()
	for lease, want := range map[time.Duration]time.Duration{
		0:                5 * time.Second, // the default lease, 30 s
		time.Minute:      5 * time.Second,
		5 * time.Second:  5 * time.Second / 6,
		3 * time.Second:  500 * time.Millisecond,
		12 * time.Second: 2 * time.Second,
	} {
		c := WorkerConfig{Lease: lease}
		c.defaults()
		assert.Equal(t, want, c.AckTimeout, "lease %s", lease)
	}
	c := WorkerConfig{Lease: 3 * time.Second, AckTimeout: time.Minute}
	c.defaults()
	assert.Equal(t, time.Minute, c.AckTimeout)
}
